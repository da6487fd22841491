//! `chimbuko-mpi report` from the command line: the page of a run holds
//! `inspect`'s numbers, one row per function and every anomaly, asks for
//! nothing over the network, says when a run is incomplete, and refuses a
//! file that is not a provenance file. (The browser tests in
//! `tests/python/test_report_browser.py` click through the same pages.)

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// A small analysed run with its provenance file and report.
fn analysed(dir: &Path, extra: &[&str]) -> (std::path::PathBuf, String) {
    let data = dir.join("data");
    run_ok(
        Command::new(exe())
            .args([
                "synth",
                "--steps",
                "5",
                "--events-per-step",
                "2000",
                "--out",
            ])
            .arg(&data),
    );
    let prov = dir.join("prov.h5");
    let html = dir.join("report.html");
    run_ok(
        mpirun(2)
            .arg(exe())
            .args(["run", "--quiet", "--input"])
            .arg(data.join("tau-metrics-demo-{rank}.bp"))
            .arg("--out")
            .arg(&prov)
            .arg("--report")
            .arg(&html)
            .args(extra),
    );
    (prov, std::fs::read_to_string(&html).unwrap())
}

/// The `data-value` of the `data-stat` element `key`.
fn stat(html: &str, key: &str) -> String {
    let at = html
        .find(&format!("data-stat=\"{key}\" data-value=\""))
        .unwrap_or_else(|| panic!("no stat {key}"));
    let rest = &html[at + key.len() + 25..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// `report PROV -o HTML`, and the page it wrote.
fn report_page(prov: &Path, html: &Path) -> String {
    run_ok(
        Command::new(exe())
            .arg("report")
            .arg(prov)
            .arg("-o")
            .arg(html),
    );
    std::fs::read_to_string(html).unwrap()
}

#[test]
fn the_page_of_a_run_holds_what_inspect_says_and_nothing_remote() {
    let dir = tempfile::tempdir().unwrap();
    let (prov, html) = analysed(dir.path(), &[]);
    let inspect: serde_json::Value = serde_json::from_str(&run_ok(
        Command::new(exe()).args(["inspect", "--json"]).arg(&prov),
    ))
    .unwrap();
    for key in [
        "anomalies",
        "functions",
        "labelled_in_situ",
        "normal_samples",
    ] {
        assert_eq!(stat(&html, key), inspect[key].to_string(), "{key}");
    }
    for key in ["ad_ranks", "steps_written"] {
        assert_eq!(
            stat(&html, key),
            inspect["attributes"][key].as_str().unwrap(),
            "{key}"
        );
    }
    // One row per function; every anomaly in the data.
    let rows = html.matches("<tr data-fid=").count();
    assert_eq!(rows as u64, inspect["functions"].as_u64().unwrap());
    let worst = inspect["worst"][0]["event_id"].as_str().unwrap();
    assert!(
        html.contains(&format!("\"{worst}\"")),
        "{worst} in the data"
    );
    // Self-contained: no remote or relative resource of any kind.
    for needle in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "<link rel=\"stylesheet\"",
        "src=\"/",
        "<script src",
    ] {
        assert!(!html.contains(needle), "{needle}");
    }
    assert!(!html.contains("id=\"incomplete-warning\""));
    // The command itself, with its default output name.
    let out = run_ok(Command::new(exe()).arg("report").arg(&prov));
    assert_eq!(
        out.trim(),
        prov.with_extension("html").display().to_string()
    );
    assert_eq!(
        std::fs::read_to_string(prov.with_extension("html")).unwrap(),
        std::fs::read_to_string(dir.path().join("report.html")).unwrap()
    );
}

#[test]
fn the_report_of_the_real_tau_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let prov = dir.path().join("tau.h5");
    run_ok(
        mpirun(2)
            .arg(exe())
            .args(["run", "--quiet", "--trace-dir"])
            .arg(fixture_dir())
            .args(["--binary", "main1", "--binary", "main2", "--out"])
            .arg(&prov),
    );
    let page = report_page(&prov, &dir.path().join("tau.html"));
    // Both programs of the workflow, by name.
    assert!(page.contains("main1:") && page.contains("main2:"));
}

#[test]
fn an_incomplete_run_says_so_and_other_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _) = analysed(dir.path(), &[]);
    let data = dir.path().join("data");
    // Stopped after 2 of 5 steps by --max-steps: complete. A killed run is
    // made by clearing `completed` (what a killed run leaves).
    let prov = dir.path().join("killed.h5");
    run_ok(
        mpirun(1)
            .arg(exe())
            .args(["run", "--quiet", "--input"])
            .arg(data.join("tau-metrics-demo-{rank}.bp"))
            .arg("--out")
            .arg(&prov),
    );
    let python = std::env::var("PYTHON").unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".venv/bin/python")
            .display()
            .to_string()
    });
    let set = format!(
        "import h5py\nwith h5py.File({:?}, 'a') as f:\n    f.attrs['completed'] = 0\n",
        prov.display().to_string()
    );
    run_ok(Command::new(&python).args(["-c", &set]));
    let page = report_page(&prov, &dir.path().join("killed.html"));
    assert!(page.contains("id=\"incomplete-warning\""));
    assert!(page.contains("This run is incomplete"));

    // Not provenance files: a CSV, an HDF5 file of something else, nothing.
    let other = dir.path().join("other.h5");
    run_ok(Command::new(&python).args([
        "-c",
        &format!(
            "import h5py\nwith h5py.File({:?}, 'w') as f:\n    f['x'] = [1, 2]\n",
            other.display().to_string()
        ),
    ]));
    for (file, says) in [
        (data.join("truth-demo.csv"), "not a provenance file"),
        (other.clone(), "not a provenance file"),
        (dir.path().join("missing.h5"), "no such file"),
    ] {
        let out = Command::new(exe())
            .arg("report")
            .arg(&file)
            .arg("-o")
            .arg(dir.path().join("x.html"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}", file.display());
        assert!(
            err.contains(says) && err.contains(&file.display().to_string()),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
