//! Memory: peak resident memory of one AD rank versus function events per
//! step (without and with the provenance file), with the cost of one more
//! event per step and the base fitted to the smallest and largest steps; a
//! soak (many small steps on 2 AD ranks, with and without the end-of-run
//! re-evaluation), whose resident memory and step time must stay flat; and
//! a burst (one step with many times the usual events) against the bound
//! that fit gives.

use chimbuko_mpi::provenance::read::Provenance;

use crate::harness::{f, num, Bench};
use crate::plot;

/// Least-squares slope of y over x.
fn slope(xy: &[(f64, f64)]) -> f64 {
    let n = xy.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mx = xy.iter().map(|p| p.0).sum::<f64>() / n;
    let my = xy.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

/// Section 4: Memory: peak RSS vs events per step; a long soak; a burst.
pub(crate) fn memory(b: &mut Bench) -> anyhow::Result<()> {
    let eps: &[u64] = if b.quick {
        &[50_000, 100_000]
    } else {
        &[100_000, 250_000, 500_000]
    };
    let mut rows = Vec::new();
    let mut line = Vec::new();
    for &e in eps {
        let data = b.synth(
            &format!("rss-{e}"),
            Some("large.toml"),
            &[
                "--engine",
                "BP5",
                "--ranks",
                "1",
                "--steps",
                "8",
                "--events-per-step",
                &e.to_string(),
            ],
        )?;
        let input = data
            .join("tau-metrics-large-{rank}.bp")
            .display()
            .to_string();
        let mut rss = Vec::new();
        for with_file in [false, true] {
            let mut args = vec!["--input".to_string(), input.clone()];
            if with_file {
                args.extend([
                    "--out".into(),
                    b.work.join("rss.h5").display().to_string(),
                    "--overwrite".into(),
                ]);
            } else {
                args.push("--no-provenance".into());
            }
            let r = b.run(1, &args)?;
            rss.push(num(&r.summary["peak_rss_mb"]));
        }
        rows.push(vec![e.to_string(), f(rss[0], 0), f(rss[1], 0)]);
        line.push((e as f64 / 1000.0, rss[1]));
        if e == 500_000 {
            b.target(
                "peak RSS per AD rank at 500k function events per step",
                "≤ 100 MB",
                format!(
                    "{:.1} MB (analysis), {:.1} MB (with provenance)",
                    rss[0], rss[1]
                ),
                rss[0] <= 100.0 && rss[1] <= 100.0,
            );
        }
    }
    // Cost of one more function event per step, and what is there at none:
    // the straight line through the smallest and largest step measured.
    let (per_event_bytes, base_mb) = match (line.first(), line.last()) {
        (Some(&(e0, m0)), Some(&(e1, m1))) if e1 > e0 => {
            let slope = (m1 - m0) / (e1 - e0); // MiB per thousand events
            (slope * 1024.0 * 1024.0 / 1000.0, m0 - slope * e0)
        }
        _ => (f64::NAN, f64::NAN),
    };
    let exec_bytes = std::mem::size_of::<chimbuko_mpi::events::Execution>();
    b.section(
        "Memory",
        &format!(
            "Peak resident memory of one AD rank reading one stream of `large.toml` with 8 \
             steps of the given size (function events per step), without and with the \
             provenance file. It is set by the largest step, not by the run's length: each \
             function event of a step costs about {per_event_bytes:.0} bytes (its 24-byte \
             checked row, half of a {exec_bytes}-byte execution, its verdict and \
             provenance bookkeeping), on top of about {base_mb:.0} MB that the MPI, HDF5 and ADIOS2 \
             libraries and the program keep (fitted to the first and last rows)."
        ),
    );
    b.table(
        &[
            "function events per step",
            "peak RSS MB (analysis)",
            "peak RSS MB (with HDF5 provenance)",
        ],
        &rows,
    );
    plot::lines(
        &b.png("memory.png"),
        "Peak RSS vs events per step (1 AD rank)",
        "thousand function events per step",
        "peak RSS MB",
        false,
        &[("with provenance".into(), line)],
    )?;
    b.image("memory.png", "peak RSS vs events per step");

    // Soak: many small steps; memory and step time must stay flat.
    let steps = if b.quick { 500u64 } else { 10_000 };
    let data = b.synth(
        "soak",
        None,
        &[
            "--ranks",
            "4",
            "--steps",
            &steps.to_string(),
            "--events-per-step",
            "300",
        ],
    )?;
    // Twice: as users run it (anomalies kept for the end-of-run
    // re-evaluation, a bounded store: --max-stored-anomalies), and with the
    // re-evaluation off, which shows what the analysis itself keeps.
    let mut soak_rows = Vec::new();
    let mut rss_growth = Vec::new();
    let mut rank0 = Vec::new();
    for relabel in ["true", "false"] {
        let out = b.work.join(format!("soak-{relabel}.h5"));
        let r = b.run(
            2,
            &[
                "--input".into(),
                data.join("tau-metrics-demo-{rank}.bp")
                    .display()
                    .to_string(),
                "--out".into(),
                out.display().to_string(),
                "--overwrite".into(),
                "--flush-steps".into(),
                "100".into(),
                "--final-relabel".into(),
                relabel.into(),
            ],
        )?;
        let p = Provenance::load(&out)?;
        let rows: Vec<_> = p
            .ad_perf
            .iter()
            .filter(|r| r.ad_rank == 0)
            .cloned()
            .collect();
        let skip = rows.len() / 10; // start-up
        let rss: Vec<(f64, f64)> = rows
            .iter()
            .skip(skip)
            .map(|r| (r.io_step as f64, r.rss_mb))
            .collect();
        let time: Vec<(f64, f64)> = rows
            .iter()
            .skip(skip)
            .map(|r| {
                let t = r.read
                    + r.agree
                    + r.build
                    + r.reduce
                    + r.label
                    + r.collect
                    + r.write
                    + r.trim
                    + r.status;
                (r.io_step as f64, t * 1e3)
            })
            .collect();
        let mean_ms = time.iter().map(|p| p.1).sum::<f64>() / time.len().max(1) as f64;
        rss_growth.push(slope(&rss) * steps as f64);
        soak_rows.push(vec![
            relabel.to_string(),
            f(num(&r.summary["seconds"]), 1),
            f(rss.first().map_or(0.0, |p| p.1), 1),
            f(rss.last().map_or(0.0, |p| p.1), 1),
            format!("{:+.3}", slope(&rss) * 1000.0),
            f(mean_ms, 3),
            format!("{:+.4}", slope(&time) * 1000.0),
            num(&r.summary["anomalies_in_situ"]).to_string(),
        ]);
        if relabel == "true" {
            rank0 = rows;
        }
    }
    let over_run = |k: usize| rss_growth.get(k).copied().unwrap_or(f64::NAN);
    b.target(
        &format!("resident memory over {steps} steps"),
        "flat (< 1 MB growth without the end-of-run re-evaluation, whose store is bounded \
         by `--max-stored-anomalies`)",
        format!(
            "{:+.2} MB without, {:+.2} MB with the re-evaluation",
            over_run(1),
            over_run(0)
        ),
        over_run(1) < 1.0,
    );
    b.note(&format!(
        "Soak: {steps} steps of 4 streams (300 function events per stream and step) on 2 AD \
         ranks, provenance flushed every 100 steps. Resident memory and step time of AD rank 0 \
         after start-up (the first tenth of the steps), with their fitted slopes. With the \
         end-of-run re-evaluation on (the default) each anomaly and normal sample is \
         remembered until the end (about 220 bytes each, at most `--max-stored-anomalies`): \
         that is the growth of the first row ({:.1} MB over the run); without it nothing of \
         the run is kept and the fitted growth over the whole run is {:.2} MB.",
        over_run(0),
        over_run(1)
    ));
    b.table(
        &[
            "--final-relabel",
            "seconds",
            "RSS MB first",
            "RSS MB last",
            "RSS slope MB/1000 steps",
            "mean step ms",
            "step time slope ms/1000 steps",
            "anomalies",
        ],
        &soak_rows,
    );
    let rss_plot: Vec<(f64, f64)> = rank0.iter().map(|r| (r.io_step as f64, r.rss_mb)).collect();
    plot::lines(
        &b.png("soak.png"),
        &format!("Soak: resident memory of AD rank 0 over {steps} steps"),
        "step",
        "RSS MB",
        false,
        &[("rank 0".into(), rss_plot)],
    )?;
    b.image("soak.png", "RSS over a long run");

    // Burst: one step with 100x the usual events.
    let (usual, factor) = if b.quick {
        (2000u64, 20u64)
    } else {
        (5000, 100)
    };
    let mut burst_rows = Vec::new();
    for burst in [false, true] {
        let mut extra = vec![
            "--ranks".to_string(),
            "4".into(),
            "--steps".into(),
            "20".into(),
            "--events-per-step".into(),
            usual.to_string(),
        ];
        if burst {
            extra.extend(["--burst".into(), format!("10:{factor}")]);
        }
        let extra_ref: Vec<&str> = extra.iter().map(String::as_str).collect();
        let data = b.synth(if burst { "burst" } else { "noburst" }, None, &extra_ref)?;
        let r = b.run(
            2,
            &[
                "--input".into(),
                data.join("tau-metrics-demo-{rank}.bp")
                    .display()
                    .to_string(),
                "--out".into(),
                b.work.join("burst.h5").display().to_string(),
                "--overwrite".into(),
            ],
        )?;
        burst_rows.push(vec![
            if burst {
                format!(
                    "step 10 has {factor}x events ({} per stream)",
                    usual * factor
                )
            } else {
                "no burst".into()
            },
            f(num(&r.summary["peak_rss_mb"]), 0),
            f(num(&r.summary["seconds"]), 2),
        ]);
    }
    b.note(&format!(
        "Burst: 4 streams of {usual} function events per step on 2 AD ranks; one step with \
         {factor} times as many. The bound, from the fit above: peak RSS ≈ {base_mb:.0} MB + \
         {per_event_bytes:.0} bytes × (function events of the largest step held by one AD \
         rank); memory returns to the usual level after the burst."
    ));
    b.table(
        &["run", "peak RSS MB (largest rank)", "seconds"],
        &burst_rows,
    );
    Ok(())
}
