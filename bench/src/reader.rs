//! TAU stream reader: `chimbuko-mpi dump --summary` on one stream of
//! `reader-bench.toml`, written with BP4 and with BP5, three runs each (the
//! function rows per second that dump reports), next to synth's
//! generation-and-write rate for the same stream when it had to write it.

use std::process::Command;
use std::time::Instant;

use crate::harness::{f, Bench};

/// Section 0: The TAU reader and synth alone.
pub(crate) fn reader(b: &mut Bench) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for engine in ["BP4", "BP5"] {
        let extra: Vec<&str> = if b.quick {
            vec!["--engine", engine, "--steps", "2"]
        } else {
            vec!["--engine", engine]
        };
        let t = Instant::now();
        let data = b.synth(
            &format!("reader-{engine}"),
            Some("reader-bench.toml"),
            &extra,
        )?;
        let synth_s = t.elapsed().as_secs_f64();
        let stream = data.join("tau-metrics-readerbench-0.bp");
        let mut rates = Vec::new();
        let mut total = 0.0;
        for _ in 0..3 {
            let out = Command::new(&b.bin)
                .arg("dump")
                .arg("--summary")
                .arg(&stream)
                .output()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let rate = text
                .split("s: ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|r| r.parse::<f64>().ok())
                .unwrap_or(0.0);
            total = text
                .split("func_events=")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|r| r.parse::<f64>().ok())
                .unwrap_or(0.0);
            rates.push(f(rate, 2));
        }
        rows.push(vec![
            engine.to_string(),
            f(total / 1e6, 1),
            rates.join(" / "),
            if synth_s > 0.5 {
                f(total / synth_s / 1e6, 1)
            } else {
                "(cached)".into()
            },
        ]);
    }
    b.section(
        "TAU stream reader",
        "`chimbuko-mpi dump --summary` on one stream of `reader-bench.toml` (10 steps of 10^6 \
         function rows): open, every ADIOS2 step, reads with explicit selections, validation \
         of every row and the per-thread order check, three runs (the first reads what synth \
         just wrote, the others warm page cache). Target: 20 M rows/s per process. The last \
         column is synth's generation-and-write rate for the same stream (when it was not \
         already on disk).",
    );
    b.table(
        &[
            "engine",
            "M function rows",
            "M rows/s (3 runs)",
            "synth M rows/s",
        ],
        &rows,
    );
    Ok(())
}
