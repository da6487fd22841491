//! `chimbuko-mpi model` as a user runs it: train, test (Eiger's four
//! lines, predictions, a PNG), show, convert and table on Eiger's example
//! data, and clear errors — file, line and column — on bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_chimbuko-mpi")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/eiger")
        .join(name)
}

/// Runs the command; (success, stdout, stderr).
fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(exe()).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn value_after(text: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} in {text}"));
    line[label.len()..].trim().parse().unwrap()
}

#[test]
fn test_prints_eigers_statistics_and_draws_the_plot() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("gold.png");
    let (ok, out, err) = run(&[
        "model",
        "test",
        fixture("gold.model").to_str().unwrap(),
        fixture("training.csv").to_str().unwrap(),
        "--show-prediction",
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert_eq!(value_after(&out, "Number of experiment trials:"), 50.0);
    let mape = value_after(&out, "Mean Average Percent Error:");
    assert!((mape - 4648.143840163106).abs() < 1e-9 * 4648.0, "{mape}");
    let rmse = value_after(&out, "Root Mean Squared Error:");
    assert!((rmse - 0.010081590947762863).abs() < 1e-9 * 0.01, "{rmse}");
    assert_eq!(
        out.lines().filter(|l| l.contains(',')).count(),
        51,
        "header and 50 prediction rows"
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    assert!(bytes.len() > 5000);
}

#[test]
fn train_with_the_golden_fold_writes_gold_model() {
    let dir = tempfile::tempdir().unwrap();
    let out_model = dir.path().join("ours.model");
    let (ok, _, err) = run(&[
        "model",
        "train",
        fixture("training.csv").to_str().unwrap(),
        "--profile",
        "eiger-2013",
        "--test-rows",
        "0,1,6,10,16,17,19,20,29,30,37,41",
        "-o",
        out_model.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let ours = std::fs::read_to_string(&out_model).unwrap();
    let gold = std::fs::read_to_string(fixture("gold.model")).unwrap();
    let pick = |t: &str, r: std::ops::Range<usize>| {
        t.lines()
            .skip(r.start)
            .take(r.len())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(pick(&ours, 0..6), pick(&gold, 0..6));
    assert_eq!(pick(&ours, 8..12), pick(&gold, 8..12));
    assert!(err.contains("size², size, √size, log2 size"), "{err}");
}

#[test]
fn show_and_convert() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, _) = run(&["model", "show", fixture("gold.model").to_str().unwrap()]);
    assert!(ok);
    assert!(
        out.contains("≈ |1.00e-5·size² − 8.86e-3·size + 0.186·√size − 0.158·log2 size|"),
        "{out}"
    );
    let json = dir.path().join("gold.json");
    let back = dir.path().join("gold.model");
    assert!(
        run(&[
            "model",
            "convert",
            fixture("gold.model").to_str().unwrap(),
            json.to_str().unwrap()
        ])
        .0
    );
    assert!(std::fs::read_to_string(&json)
        .unwrap()
        .contains("\"chimbuko-mpi-model\""));
    assert!(
        run(&[
            "model",
            "convert",
            json.to_str().unwrap(),
            back.to_str().unwrap()
        ])
        .0
    );
    let a = std::fs::read_to_string(&back).unwrap();
    let b = std::fs::read_to_string(fixture("gold.model")).unwrap();
    // Weights are written as the shortest round trip; everything else is Eiger's text.
    let strip = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with("[4]("))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b));
    // A legacy model converts too.
    let legacy = dir.path().join("legacy.model");
    assert!(
        run(&[
            "model",
            "convert",
            fixture("tests_gold_legacy_format.model").to_str().unwrap(),
            legacy.to_str().unwrap()
        ])
        .0
    );
    assert!(std::fs::read_to_string(&legacy)
        .unwrap()
        .starts_with("4\ngenerate_matrix_MPIsize\n"));
}

#[test]
fn the_dump_becomes_training_csv() {
    let (ok, out, err) = run(&[
        "model",
        "table",
        fixture("database_dump.sql").to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    // Eiger's file was written by Python's csv module, with CRLF line ends.
    let want = std::fs::read_to_string(fixture("training.csv"))
        .unwrap()
        .replace("\r\n", "\n");
    assert_eq!(out, want);
}

/// Writes `text` to a file in `dir` and returns its path as a string.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let gold = fixture("gold.model");
    let train = |table: &str| run(&["model", "train", table, "--target", "runtime"]);
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec![
                "text".into(),
                file(d, "text.csv", "size,runtime\n1,2\n2,x\n3,4\n"),
            ],
            vec![
                "text.csv, line 3, column \"runtime\"",
                "\"x\" is not a number",
            ],
        ),
        (
            vec!["empty".into(), file(d, "empty.csv", "")],
            vec!["empty.csv", "empty table"],
        ),
        (
            vec![
                "header only".into(),
                file(d, "header.csv", "size,runtime\n"),
            ],
            vec!["header.csv", "no rows"],
        ),
        (
            vec![
                "constant".into(),
                file(d, "constant.csv", "size,c,runtime\n1,5,2\n2,5,4\n3,5,6\n"),
            ],
            vec!["constant.csv", "column \"c\"", "constant column"],
        ),
        (
            vec![
                "nan".into(),
                file(d, "nan.csv", "size,runtime\n1,2\n2,nan\n"),
            ],
            vec!["nan.csv, line 3, column \"runtime\"", "not a finite number"],
        ),
        (
            vec![
                "inf".into(),
                file(d, "inf.csv", "size,runtime\n1,inf\n2,3\n"),
            ],
            vec!["inf.csv, line 2, column \"runtime\"", "not a finite number"],
        ),
    ];
    for (case, wants) in cases {
        let (ok, _, err) = train(&case[1]);
        assert!(!ok, "{}: accepted", case[0]);
        assert!(!err.contains("panicked"), "{}: {err}", case[0]);
        for w in wants {
            assert!(err.contains(w), "{}: {err:?} lacks {w:?}", case[0]);
        }
    }
    // A model whose metrics are not in the table.
    let other = file(d, "other.csv", "width,runtime\n1,2\n2,3\n");
    let (ok, _, err) = run(&["model", "test", gold.to_str().unwrap(), &other]);
    assert!(
        !ok && err.contains("other.csv")
            && err.contains("\"size\"")
            && err.contains("not a column"),
        "{err}"
    );
    // A model file cut short.
    let text = std::fs::read_to_string(&gold).unwrap();
    let cut = file(d, "cut.model", &text[..text.len() - 20]);
    let (ok, _, err) = run(&["model", "show", &cut]);
    assert!(
        !ok && err.contains("cut.model, line") && err.contains("cut short"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
