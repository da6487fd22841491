//! ROSS: `chimbuko-mpi ross` on `synth ross` output. The event-trace pass
//! (MB/s and records/s, 1 and 2 AD ranks, from the page cache) on a
//! 1.15 GB full trace, peak RSS against file size, the engine files alone,
//! the latency of `--follow` from a flush landing to its anomalies being
//! written, and precision/recall against the generator's ground truth at
//! 2 and 4 simulated PEs: of the peer comparison (slow PE, hotspot LP) and
//! of each detector on the run-wide series (every PE slow at once).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use serde_json::Value;

use crate::harness::{f, Bench};

/// `synth ross` of a scenario file (kept between runs, like `Bench::synth`).
fn synth_ross(b: &Bench, name: &str, scenario: &Path, extra: &[&str]) -> anyhow::Result<PathBuf> {
    let key = format!("{} {extra:?}", std::fs::read_to_string(scenario)?);
    let args = [
        "synth".into(),
        "ross".into(),
        scenario.as_os_str().to_owned(),
    ];
    b.generate(name, &key, &args, extra)
}

/// What one `ross` run reported.
struct RossRun {
    summary: Value,
    mb_per_s: f64,
    records: f64,
    seconds: f64,
    rss_mb: f64,
    wall: f64,
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split(key).nth(1)
}

fn number(s: Option<&str>) -> f64 {
    s.and_then(|r| {
        r.trim_start()
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()
    })
    .and_then(|x| x.parse().ok())
    .unwrap_or(0.0)
}

fn ross(b: &Bench, np: usize, run: &Path, extra: &[&str]) -> anyhow::Result<RossRun> {
    let sum = b.work.join("ross-summary.json");
    let _ = std::fs::remove_file(&sum);
    let t = std::time::Instant::now();
    let out = b
        .mpirun(np)
        .arg(&b.bin)
        .arg("ross")
        .arg(run)
        .arg("--no-provenance")
        .arg("--summary-out")
        .arg(&sum)
        .args(extra)
        .output()?;
    let wall = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        bail!("ross {} on {np} ranks: {err}", run.display());
    }
    let line = err
        .lines()
        .find(|l| l.contains("event trace:"))
        .unwrap_or("");
    Ok(RossRun {
        summary: serde_json::from_str(&std::fs::read_to_string(&sum)?)?,
        mb_per_s: number(after(line, "rank(s) (")),
        records: number(after(line, "MB, ")),
        seconds: number(after(line, "counted in ")),
        rss_mb: number(after(line, "peak RSS ")),
        wall,
    })
}

/// Section: ROSS.
pub(crate) fn ross_section(b: &mut Bench) -> anyhow::Result<()> {
    let scenario = b.root.join("scenarios/ross-bench.toml");
    // Full size: 200 GVT intervals (1.15 GB of trace); quick: 8 (46 MB).
    let big_intervals = if b.quick { "8" } else { "200" };
    let small = synth_ross(b, "ross-small", &scenario, &["--intervals", "20"])?;
    let big = synth_ross(b, "ross-big", &scenario, &["--intervals", big_intervals])?;
    let mut rows = Vec::new();
    let mut best = [0.0f64; 2];
    let mut rss_max: f64 = 0.0;
    for (name, dir) in [("small", &small), ("big", &big)] {
        let bytes = std::fs::metadata(dir.join("bench-evtrace.bin"))?.len() as f64;
        for np in [1usize, 2] {
            let runs: Vec<RossRun> = (0..3)
                .map(|_| ross(b, np, dir, &[]))
                .collect::<anyhow::Result<_>>()?;
            let rates: Vec<String> = runs.iter().map(|r| f(r.mb_per_s, 0)).collect();
            let top = runs.iter().map(|r| r.mb_per_s).fold(0.0, f64::max);
            let fastest = runs
                .iter()
                .min_by(|a, c| a.seconds.total_cmp(&c.seconds))
                .context("no run")?;
            if name == "big" {
                best[np - 1] = top;
            }
            let rss = runs.iter().map(|r| r.rss_mb).fold(0.0, f64::max);
            rss_max = rss_max.max(rss);
            rows.push(vec![
                format!("{name} ({} MB)", f(bytes / 1e6, 0)),
                np.to_string(),
                rates.join(" / "),
                f(top / np as f64, 0),
                f(
                    fastest.records / fastest.seconds.max(1e-9) / np as f64 / 1e6,
                    1,
                ),
                f(rss, 1),
                f(fastest.wall, 2),
            ]);
        }
    }
    // The engine files alone (a directory with only the GVT and RT files).
    let engine_dir = b.work.join("data/ross-engine");
    let _ = std::fs::remove_dir_all(&engine_dir);
    std::fs::create_dir_all(&engine_dir)?;
    let mut engine_bytes = 0.0;
    for file in ["bench-gvt.bin", "bench-rt.bin"] {
        std::fs::copy(big.join(file), engine_dir.join(file))?;
        engine_bytes += std::fs::metadata(big.join(file))?.len() as f64;
    }
    let engine_runs: Vec<RossRun> = (0..3)
        .map(|_| ross(b, 1, &engine_dir, &[]))
        .collect::<anyhow::Result<_>>()?;
    let engine_wall = engine_runs
        .iter()
        .map(|r| r.wall)
        .fold(f64::INFINITY, f64::min);
    b.section(
        "ROSS: event trace and engine files",
        "`chimbuko-mpi ross` on `synth ross scenarios/ross-bench.toml` (4 PEs, 1024 LPs, a \
         full event trace of 24-byte records: 48 million at 200 GVT intervals; a 20-interval \
         run as the small file), three runs each from the page cache. The event-trace pass \
         validates every record (times finite and ordered, sizes) and counts events per \
         destination LP and per GVT interval; the rate is that pass's, measured by the \
         program (`ross: event trace: ...` on stderr). With 2 ranks each counts a byte range \
         of its own (ranges guessed and proven, see `src/ross/share.rs`): on this 2-core \
         machine the two ranks also share the cores with mpirun. Peak RSS is the largest \
         rank's high-water mark: the trace pass is flat in the trace's size (arrays per LP, \
         a 1 MiB read buffer); what grows is the engine samples every rank keeps (13.7 MB of \
         GVT and RT files at 200 intervals, 1.4 MB at 20). Wall time includes mpirun's start, reading the engine files and the \
         analysis.",
    );
    b.table(
        &[
            "trace",
            "AD ranks",
            "MB/s (3 runs)",
            "best MB/s per rank",
            "M records/s per rank",
            "peak RSS MB",
            "wall s",
        ],
        &rows,
    );
    b.note(&format!(
        "Engine files alone (GVT and RT files of the big run, {} MB, one rank): {} s wall \
         including mpirun's start, the series of every PE and KP, the real-time grid and the \
         peer comparison.",
        f(engine_bytes / 1e6, 1),
        f(engine_wall, 2)
    ));
    b.target(
        "ROSS event trace, per AD rank",
        ">= 1000 MB/s",
        format!("{} MB/s (1 rank)", f(best[0], 0)),
        best[0] >= 1000.0,
    );
    b.target(
        "ROSS peak RSS, any file size",
        "< 100 MB",
        format!("{} MB", f(rss_max, 1)),
        rss_max < 100.0,
    );
    follow_latency(b)?;
    detection(b)?;
    run_wide_detection(b)?;
    Ok(())
}

/// `--follow` beside a writer: latency from a flush landing (the GVT
/// file's mtime) to the live anomaly being written.
fn follow_latency(b: &mut Bench) -> anyhow::Result<()> {
    let sc = std::fs::read_to_string(b.root.join("scenarios/ross-hotspot.toml"))?.replace(
        "prefix = \"hotspot\"",
        "prefix = \"hotspot\"\nbuffer_size = 8192",
    );
    let sc_path = b.work.join("ross-follow.toml");
    std::fs::write(&sc_path, sc)?;
    let mut rows = Vec::new();
    let mut worst: f64 = 0.0;
    for poll in ["50", "200"] {
        let dir = b.work.join("data/ross-follow");
        let _ = std::fs::remove_dir_all(&dir);
        let live = b.work.join("ross-live.jsonl");
        let child = Command::new(&b.bin)
            .arg("ross")
            .arg(&dir)
            .args([
                "--follow",
                "--no-provenance",
                "--idle-timeout",
                "20",
                "--poll-ms",
                poll,
            ])
            .arg("--live-out")
            .arg(&live)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        std::thread::sleep(std::time::Duration::from_millis(300));
        let out = Command::new(&b.bin)
            .args(["synth", "ross"])
            .arg(&sc_path)
            .arg("--out")
            .arg(&dir)
            .args(["--pace-ms", "100"])
            .output()?;
        if !out.status.success() {
            bail!(
                "synth ross (paced): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let status = child.wait_with_output()?.status;
        if !status.success() {
            bail!("ross --follow failed");
        }
        let mut lat: Vec<f64> = std::fs::read_to_string(&live)?
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["latency_s"].as_f64())
            .collect();
        lat.sort_by(f64::total_cmp);
        let med = lat.get(lat.len() / 2).copied().unwrap_or(0.0);
        let max = lat.last().copied().unwrap_or(0.0);
        if poll == "200" {
            worst = max;
        }
        rows.push(vec![
            poll.to_string(),
            lat.len().to_string(),
            f(med * 1e3, 0),
            f(max * 1e3, 0),
        ]);
    }
    b.section(
        "ROSS: --follow latency",
        "`ross --follow` beside `synth ross scenarios/ross-hotspot.toml --pace-ms 100` (8 KiB \
         buffers, so the writer flushes often, sleeping 100 ms after each flush). Latency: from \
         the flush landing (the GVT file's modification time) to the live anomaly being \
         written to `--live-out`. A size is read once it has been seen unchanged at two polls \
         in a row (a collective write lands rank by rank), so the latency is one to two poll \
         periods plus the analysis of the series so far.",
    );
    b.table(
        &[
            "poll ms",
            "live anomalies",
            "median latency ms",
            "max latency ms",
        ],
        &rows,
    );
    b.target(
        "ROSS --follow latency (default poll 200 ms)",
        "< 1 s",
        format!("{} ms max", f(worst * 1e3, 0)),
        worst < 1.0,
    );
    Ok(())
}

/// Precision and recall against `synth ross`'s ground truth (the scoring
/// of `tests/ross_detection.rs`).
fn detection(b: &mut Bench) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    let seeds: u64 = if b.quick { 2 } else { 5 };
    for (file, name, factor) in [
        ("ross-slowpe.toml", "slow PE", "100.0"),
        ("ross-slowpe.toml", "slow PE", "4.0"),
        ("ross-hotspot.toml", "hotspot LP", "48.0"),
        ("ross-hotspot.toml", "hotspot LP", "8.0"),
    ] {
        for pes in [2u32, 4] {
            let text = std::fs::read_to_string(b.root.join("scenarios").join(file))?;
            let lps_per_pe = 16;
            let (culprit_pe, culprit_lp) = if file.contains("slowpe") {
                (pes - 1, None)
            } else {
                (pes - 1, Some((pes - 1) * lps_per_pe + 5))
            };
            let text = text
                .replace("pe = 2\n", &format!("pe = {culprit_pe}\n"))
                .replace("lp = 37\n", &format!("lp = {}\n", culprit_lp.unwrap_or(0)))
                .replace(
                    &format!(
                        "factor = {}\n",
                        if file.contains("slowpe") {
                            "100.0"
                        } else {
                            "48.0"
                        }
                    ),
                    &format!("factor = {factor}\n"),
                );
            let sc = b.work.join(format!("ross-q-{pes}.toml"));
            std::fs::write(&sc, text)?;
            let (mut runs, mut found, mut reported, mut correct) = (0, 0, 0, 0);
            for seed in 1..=seeds {
                let (pes_arg, seed_arg) = (pes.to_string(), seed.to_string());
                let extra = ["--pes", pes_arg.as_str(), "--seed", seed_arg.as_str()];
                let dir = synth_ross(b, "ross-quality", &sc, &extra)?;
                let truth = std::fs::read_to_string(dir.join("truth-ross.csv"))?;
                let row: Vec<&str> = truth.lines().nth(1).unwrap_or("").split(',').collect();
                let from: f64 = row.get(4).and_then(|x| x.parse().ok()).unwrap_or(0.0);
                let to: f64 = row.get(5).and_then(|x| x.parse().ok()).unwrap_or(0.0);
                let r = ross(b, 1, &dir, &[])?;
                runs += 1;
                let mut hit = false;
                for a in r.summary["anomalies"].as_array().into_iter().flatten() {
                    reported += 1;
                    let (w0, w1) = (
                        a["gvt_from"].as_f64().unwrap_or(0.0),
                        a["gvt_to"].as_f64().unwrap_or(0.0),
                    );
                    let overlaps = w1.min(to + 1.0) > w0.max(from - 1.0);
                    let pe = a["pe"].as_u64().map(|p| p as u32);
                    let lp = a["lp"].as_u64().map(|p| p as u32);
                    let cause = a["caused_by_pe"].as_u64().map(|p| p as u32);
                    let kp = a["kp"].as_u64().map(|p| p as u32);
                    let (culprit, belongs) = match culprit_lp {
                        None => (
                            a["kind"] == "pe"
                                && pe == Some(culprit_pe)
                                && a["signal"] == "event_process_s"
                                && a["series"] == "gvt",
                            pe == Some(culprit_pe) || cause == Some(culprit_pe),
                        ),
                        Some(l) => (
                            lp == Some(l),
                            lp == Some(l)
                                || (pe == Some(culprit_pe)
                                    && (a["kind"] == "pe"
                                        || (a["kind"] == "kp" && kp == Some((l % 16) / 4)))),
                        ),
                    };
                    if overlaps && belongs {
                        correct += 1;
                    }
                    hit |= overlaps && culprit;
                }
                found += usize::from(hit);
            }
            rows.push(vec![
                format!("{name} x{factor}"),
                pes.to_string(),
                runs.to_string(),
                f(found as f64 / runs as f64, 2),
                f(correct as f64 / reported.max(1) as f64, 2),
                reported.to_string(),
            ]);
            if factor == "100.0" || factor == "48.0" {
                let recall = found as f64 / runs as f64;
                let precision = correct as f64 / reported.max(1) as f64;
                if recall < 1.0 || precision < 0.9 {
                    b.missed.push(format!(
                        "ross {name} x{factor} at {pes} PEs: recall {recall:.2}, precision {precision:.2}"
                    ));
                }
            }
        }
    }
    b.section(
        "ROSS: detection against ground truth",
        "`synth ross` runs with one injected culprit (on the last PE) over several seeds, at 2 \
         and 4 simulated PEs, analysed with the default settings. Recall: the culprit itself \
         is reported in a window overlapping the injected one (a slow PE: its \
         `event_process_s` in the GVT series; a hotspot LP: the LP, from its LP samples or \
         the rollback trace's stragglers). Precision: the share of reported anomalies that \
         overlap the window and are the culprit, belong to it (a hotspot's PE and KP surge \
         with it) or are attributed to it (`caused_by_pe`: the slow PE's victims). The \
         scenarios' strengths (x100, x48) are held to recall 1 and precision 0.9 by \
         `tests/ross_detection.rs`; the weaker ones (x4, x8) show where detection starts to \
         fade. The real fixtures: the conservative run yields no anomaly; what the optimistic \
         ones yield is pinned and explained in `tests/ross_analysis.rs` and the README.",
    );
    b.table(
        &[
            "injected",
            "PEs",
            "runs",
            "recall",
            "precision",
            "anomalies",
        ],
        &rows,
    );
    Ok(())
}

/// Run-wide slowdowns (every PE slow at once) against the ground truth,
/// for every detector `--algorithm` takes (the scoring of
/// `tests/ross_detection.rs`'s run-wide test).
fn run_wide_detection(b: &mut Bench) -> anyhow::Result<()> {
    let seeds: u64 = if b.quick { 2 } else { 5 };
    let scenario = b.root.join("scenarios/ross-slowrun.toml");
    let mut rows = Vec::new();
    for algorithm in ["modal", "sstd", "hbos", "copod"] {
        for pes in [2u32, 4] {
            let (mut runs, mut found, mut reported, mut correct, mut blamed) = (0, 0, 0, 0, 0);
            for seed in 1..=seeds {
                let (pes_arg, seed_arg) = (pes.to_string(), seed.to_string());
                let extra = ["--pes", pes_arg.as_str(), "--seed", seed_arg.as_str()];
                let dir = synth_ross(b, "ross-run-wide", &scenario, &extra)?;
                let r = ross(b, 1, &dir, &["--algorithm", algorithm])?;
                runs += 1;
                blamed += r.summary["anomalies"].as_array().map_or(0, Vec::len);
                let mut hit = false;
                for w in r.summary["run_wide"].as_array().into_iter().flatten() {
                    reported += 1;
                    let (w0, w1) = (
                        w["gvt_from"].as_f64().unwrap_or(0.0),
                        w["gvt_to"].as_f64().unwrap_or(0.0),
                    );
                    // The injected window is GVT [50, 60), one interval of slack.
                    if w1.min(61.0) > w0.max(49.0) {
                        correct += 1;
                        hit |= w["caused_by_pe"].is_null() && w["caused_by_lp"].is_null();
                    }
                }
                found += usize::from(hit);
            }
            let recall = found as f64 / runs as f64;
            let precision = correct as f64 / reported.max(1) as f64;
            if matches!(algorithm, "modal" | "sstd") && (recall < 1.0 || precision < 0.9) {
                b.missed.push(format!(
                    "ross run-wide {algorithm} at {pes} PEs: recall {recall:.2}, precision {precision:.2}"
                ));
            }
            rows.push(vec![
                algorithm.to_string(),
                pes.to_string(),
                runs.to_string(),
                f(recall, 2),
                f(precision, 2),
                reported.to_string(),
                blamed.to_string(),
            ]);
        }
    }
    b.section(
        "ROSS: run-wide slowdowns against ground truth",
        "`synth ross scenarios/ross-slowrun.toml`: every PE's event handlers 10x slower at once \
         for GVT 50-60, so no PE stands out from its peers. Each detector `--algorithm` takes \
         judges the run-level series (real seconds per GVT interval; event time, rollbacks and \
         rolled-back events summed over PEs) interval by interval against the intervals before. \
         Recall: a run-wide window overlapping the injected one, attributed to no PE. \
         Precision: the share of run-wide windows that overlap it. The last column counts the \
         PE/KP/LP anomalies reported (none is right: no PE is to blame). modal (the default) \
         and sstd are held to recall 1 and precision 0.9 by `tests/ross_detection.rs`; hbos and \
         copod call every new extreme of a short series anomalous (a value outside the model's \
         histogram gets the top score), which the 1%-of-the-run floor only partly filters.",
    );
    b.table(
        &[
            "detector",
            "PEs",
            "runs",
            "recall",
            "precision",
            "windows",
            "PE/KP/LP anomalies",
        ],
        &rows,
    );
    Ok(())
}
