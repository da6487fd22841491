//! The HTML report: generation time and file size against the number of
//! anomalies in the provenance file (10² … 10⁵), and the time headless
//! Chromium takes to open the page and run its script (less the time it
//! takes to open an empty page: the browser's own start-up).
//!
//! The files are made with the SSTD detector at σ = 0.5 on the default
//! scenario, which labels about a third of the executions anomalous, so
//! the events per step set the anomaly count.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::harness::{f, Bench};

/// Seconds headless Chromium takes to load `page` and paint it (a
/// screenshot forces the load, the script and the first layout).
fn chromium_seconds(page: &Path, shot: &Path) -> Option<f64> {
    let t = Instant::now();
    let ok = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,900",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?
        .success();
    ok.then(|| t.elapsed().as_secs_f64())
}

/// Section: report generation time, size and opening time.
pub(crate) fn report_section(b: &mut Bench) -> anyhow::Result<()> {
    let sizes: &[u64] = if b.quick {
        &[25, 250]
    } else {
        &[25, 250, 2500, 25000]
    };
    let blank = b.work.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>")?;
    let shot = b.work.join("report-shot.png");
    // The browser's start-up, measured three times (the least counts).
    let startup = (0..3)
        .filter_map(|_| chromium_seconds(&blank, &shot))
        .fold(f64::INFINITY, f64::min);
    let mut rows = Vec::new();
    let mut largest: Option<(u64, f64, f64)> = None;
    for &events in sizes {
        let eps = events.to_string();
        let data = b.synth(
            &format!("report-{events}"),
            None,
            &["--steps", "10", "--events-per-step", &eps],
        )?;
        let prov = b.work.join(format!("report-{events}.h5"));
        let _ = std::fs::remove_file(&prov);
        let input = data.join("tau-metrics-demo-{rank}.bp");
        b.run(
            2,
            &[
                "--input".into(),
                input.display().to_string(),
                "--algorithm".into(),
                "sstd".into(),
                "--sigma".into(),
                "0.5".into(),
                "--out".into(),
                prov.display().to_string(),
            ],
        )?;
        let html = b.work.join(format!("report-{events}.html"));
        let t = Instant::now();
        let out = Command::new(&b.bin)
            .arg("report")
            .arg(&prov)
            .arg("-o")
            .arg(&html)
            .output()?;
        let seconds = t.elapsed().as_secs_f64();
        anyhow::ensure!(
            out.status.success(),
            "report failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let p = chimbuko_mpi::provenance::read::Provenance::load(&prov)?;
        let anomalies = p.kept(0).count() as u64;
        let bytes = std::fs::metadata(&html)?.len() as f64;
        let prov_bytes = std::fs::metadata(&prov)?.len() as f64;
        let open = chromium_seconds(&html, &shot).map(|s| (s - startup).max(0.0));
        rows.push(vec![
            anomalies.to_string(),
            format!("{:.1} MB", prov_bytes / 1e6),
            f(seconds, 2),
            format!("{:.2} MB", bytes / 1e6),
            open.map_or("not measured (no chromium)".into(), |s| f(s, 2)),
        ]);
        if let Some(o) = open {
            largest = Some((anomalies, bytes, o));
        } else {
            largest = Some((anomalies, bytes, f64::NAN));
        }
    }
    b.section(
        "HTML report",
        "`chimbuko-mpi report` on provenance files with more and more anomalies (the SSTD \
         detector at σ = 0.5 on the default scenario, 2 AD ranks, 10 steps): the time to \
         write the page, its size, and the time headless Chromium takes to open it and run \
         its script up to the first paint (a screenshot), less the time it takes for an \
         empty page (the browser's start-up). The page keeps every anomaly's row and call \
         stack and the window, messages and counters of the 5,000 worst.",
    );
    b.table(
        &[
            "anomalies",
            "provenance file",
            "report (s)",
            "page size",
            "open in Chromium (s)",
        ],
        &rows,
    );
    if let (false, Some((n, bytes, open))) = (b.quick, largest) {
        b.target(
            &format!("report of {n} anomalies: page size"),
            "< 20 MB",
            format!("{:.1} MB", bytes / 1e6),
            bytes < 20e6,
        );
        b.target(
            &format!("report of {n} anomalies: opens in"),
            "< 3 s",
            format!("{open:.2} s"),
            open < 3.0,
        );
    }
    Ok(())
}
