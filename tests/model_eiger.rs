//! Eiger compatibility (reference `eiger-models.md` §5): the golden model
//! files parse, write and parse again; they evaluate on the example table
//! to the statistics Eiger printed; and the `eiger-2013` profile, given the
//! golden fold, selects the golden functions with the golden weights and
//! writes the golden header lines.

use std::path::{Path, PathBuf};

use chimbuko_mpi::model::folds::CrossValidation;
use chimbuko_mpi::model::format::{eiger, model_text, parse_model, read_model, ModelFormat};
use chimbuko_mpi::model::model::Statistics;
use chimbuko_mpi::model::table::Table;
use chimbuko_mpi::model::train::{train, Profile, TrainOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/eiger")
        .join(name)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(f64::MIN_POSITIVE)
}

const GOLDEN: [&str; 3] = [
    "gold.model",
    "gold-threshold-0.01.model",
    "gold-threshold-0.1.model",
];

#[test]
fn golden_files_round_trip() {
    for name in GOLDEN.iter().chain(&[
        "gold_legacy_2013-05.model",
        "tests_gold_legacy_format.model",
    ]) {
        let (m, _) = read_model(&fixture(name)).unwrap();
        for format in [ModelFormat::Eiger, ModelFormat::Json] {
            let text = model_text(&m, format);
            let (again, _) = parse_model(&text, "written").unwrap();
            assert_eq!(again.metrics, m.metrics, "{name}");
            assert_eq!(again.rotation, m.rotation, "{name}");
            assert_eq!(again.clusters.len(), m.clusters.len(), "{name}");
            for (a, b) in again.clusters.iter().zip(&m.clusters) {
                let fa: Vec<String> = a.terms.iter().map(|t| t.function.encode()).collect();
                let fb: Vec<String> = b.terms.iter().map(|t| t.function.encode()).collect();
                assert_eq!(fa, fb, "{name}");
                for (ta, tb) in a.terms.iter().zip(&b.terms) {
                    assert!(
                        close(ta.weight, tb.weight, 1e-15),
                        "{name}: {} vs {}",
                        ta.weight,
                        tb.weight
                    );
                }
            }
        }
    }
}

#[test]
fn golden_files_written_back_keep_eigers_header_lines() {
    for name in GOLDEN {
        let original = std::fs::read_to_string(fixture(name)).unwrap();
        let (m, format) = read_model(&fixture(name)).unwrap();
        assert_eq!(format, ModelFormat::Eiger);
        let written = eiger::write(&m);
        let head = |t: &str| t.lines().take(7).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(head(&written), head(&original), "{name}");
        // Function lines are byte for byte too.
        let tail = |t: &str| t.lines().skip(8).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(tail(&written), tail(&original), "{name}");
    }
}

#[test]
fn legacy_files_read() {
    let (m, format) = read_model(&fixture("tests_gold_legacy_format.model")).unwrap();
    assert_eq!(format, ModelFormat::EigerLegacy);
    assert_eq!(
        m.metrics,
        [
            "generate_matrix_MPIsize",
            "generate_matrix_nx",
            "generate_matrix_ny",
            "generate_matrix_nz"
        ]
    );
    assert_eq!(m.rotation.len(), 4);
    assert_eq!(m.clusters[0].terms.len(), 6);
    assert_eq!(m.clusters[0].terms[5].function.encode(), "1 1 1");
    let (m, _) = read_model(&fixture("gold_legacy_2013-05.model")).unwrap();
    assert_eq!(m.metrics, ["size"]);
    assert_eq!(m.clusters[0].terms.len(), 9);
    assert!(close(
        m.clusters[0].terms[8].weight,
        -0.000475794934042,
        1e-15
    ));
}

#[test]
fn golden_models_evaluate_to_eigers_statistics() {
    let table = Table::read_csv(&fixture("training.csv")).unwrap();
    let actual = table.column(table.column_index("runtime").unwrap());
    let expect = [
        (
            "gold.model",
            4648.143840163106,
            Some(1.0163847603801411e-04),
            0.010081590947762863,
        ),
        (
            "gold-threshold-0.01.model",
            2686.7564989198518,
            None,
            0.009575832319087395,
        ),
        (
            "gold-threshold-0.1.model",
            13698.061934127134,
            None,
            0.04114877092106287,
        ),
    ];
    for (name, mape, mse, rmse) in expect {
        let (m, _) = read_model(&fixture(name)).unwrap();
        let predicted = m.predict_rows(&m.inputs_from(&table).unwrap());
        let s = Statistics::of(&actual, &predicted);
        assert_eq!(s.trials, 50);
        assert!(close(s.mape, mape, 1e-9), "{name}: MAPE {}", s.mape);
        assert!(close(s.rmse, rmse, 1e-9), "{name}: RMSE {}", s.rmse);
        assert!(close(s.mse, rmse * rmse, 1e-9), "{name}: MSE {}", s.mse);
        if let Some(mse) = mse {
            assert!(close(s.mse, mse, 1e-9), "{name}: MSE {}", s.mse);
        }
    }
}

#[test]
fn eiger_2013_with_the_golden_fold_reproduces_gold_model() {
    let table = Table::read_csv(&fixture("training.csv")).unwrap();
    let mut opts = TrainOptions::new("runtime", Profile::Eiger2013);
    opts.cross_validation = Some(CrossValidation::TestRows(vec![
        0, 1, 6, 10, 16, 17, 19, 20, 29, 30, 37, 41,
    ]));
    let trained = train(&table, &opts).unwrap();
    let (gold, _) = read_model(&fixture("gold.model")).unwrap();
    let ours = &trained.model.clusters[0].terms;
    let want = &gold.clusters[0].terms;
    let enc = |t: &[chimbuko_mpi::model::model::Term]| {
        t.iter().map(|t| t.function.encode()).collect::<Vec<_>>()
    };
    assert_eq!(enc(ours), ["1 0 2", "1 0 1", "1 0 0.5", "4 0"]);
    assert_eq!(enc(ours), enc(want));
    for (a, b) in ours.iter().zip(want) {
        assert!(
            close(a.weight, b.weight, 1e-9),
            "{} vs {}",
            a.weight,
            b.weight
        );
    }
    let written = eiger::write(&trained.model);
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(
        &lines[..6],
        &[
            "1",
            "size",
            "[1](255.0)",
            "[1](145.773797371)",
            "[1,1]((1.0))",
            "Model 0"
        ]
    );
}

#[test]
fn bad_model_files_say_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let gold = std::fs::read_to_string(fixture("gold.model")).unwrap();
    let cut: String = gold.lines().take(10).map(|l| format!("{l}\n")).collect();
    let p = dir.path().join("cut.model");
    std::fs::write(&p, cut).unwrap();
    let e = read_model(&p).unwrap_err().to_string();
    assert!(
        e.contains("cut.model") && e.contains("line 10") && e.contains("cut short"),
        "{e}"
    );
    let p = dir.path().join("bad.model");
    std::fs::write(&p, gold.replace("1 0 0.5", "9 0 0.5")).unwrap();
    let e = read_model(&p).unwrap_err().to_string();
    assert!(e.contains("line 11") && e.contains("unknown kind"), "{e}");
}

/// A table of two or three predictors on different scales (`n` 58–1126,
/// `p` 1–32, `q` 0.75–3.5) and a runtime.
fn mixed_scales(columns: usize) -> Table {
    let mut text = ["n", "p", "q"][..columns].join(",");
    text.push_str(",runtime\n");
    for i in 0..40u32 {
        let row = [
            f64::from(58 + (i * 397) % 1069),
            f64::from(1 + (i * 7) % 32),
            f64::from(3 + (i * 5) % 11) * 0.25,
        ];
        let runtime = 0.5 + 1e-3 * row[..columns].iter().sum::<f64>();
        for v in &row[..columns] {
            text.push_str(&format!("{v},"));
        }
        text.push_str(&format!("{runtime}\n"));
    }
    Table::parse_csv(&text, "mixed-scales").unwrap()
}

#[test]
fn eiger_2016_rotates_mixed_scales_as_eiger_does() {
    // Expected values: Eiger's steps with numpy's SVD (LAPACK dgesdd), as
    // tests/python/test_eiger_rotation.py computes them. Two inputs: the
    // larger-scale `n` on column 1 with sign −1, `p` on column 0.
    let two = train(
        &mixed_scales(2),
        &TrainOptions::new("runtime", Profile::Eiger2016),
    )
    .unwrap()
    .model;
    let want = [[0.0, -1.0], [1.0, 0.0]];
    for (row, want) in two.rotation.iter().zip(want) {
        for (v, w) in row.iter().zip(want) {
            assert!((v - w).abs() < 1e-12, "{:?}", two.rotation);
        }
    }
    assert!(close(two.means[0], 15.9, 1e-12) && close(two.means[1], -583.75, 1e-12));
    let three = train(
        &mixed_scales(3),
        &TrainOptions::new("runtime", Profile::Eiger2016),
    )
    .unwrap()
    .model;
    let want = [
        [
            0.9986134301374489,
            -0.05262392227035727,
            0.0013928223150837314,
        ],
        [
            -0.05262392202247186,
            -0.9986144007938978,
            -3.685128440455293e-05,
        ],
        [
            0.0013928316807155228,
            -3.6495585375627415e-05,
            -0.9999990293435194,
        ],
    ];
    for (row, want) in three.rotation.iter().zip(want) {
        for (v, w) in row.iter().zip(want) {
            assert!((v - w).abs() < 1e-9, "{:?}", three.rotation);
        }
    }
}
