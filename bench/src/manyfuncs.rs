//! Many functions: peak resident memory and time per step of an AD rank
//! versus the number of distinct functions of the application (1,000 to
//! 10^5: template-heavy C++), with most of them rare. The scenario is
//! `scenarios/manyfuncs.toml` with the family's size changed: each step
//! calls a Zipf-distributed draw of the family (each application rank
//! favouring different members), so only a small part of the functions
//! runs in any step and new names keep appearing in late steps. Runs on 8
//! AD ranks (one per stream, oversubscribed on a small machine) with the
//! provenance file, as a user would.

use crate::harness::{f, num, timing, Bench, PHASES};

/// The scenario with a family of `n` functions.
fn scenario_text(b: &Bench, n: usize) -> anyhow::Result<String> {
    let base = std::fs::read_to_string(b.root.join("scenarios").join("manyfuncs.toml"))?;
    let mut out = String::new();
    let mut in_family = false;
    for line in base.lines() {
        if line.starts_with('[') {
            in_family = line.trim() == "[[family]]";
        }
        if in_family && line.starts_with("count") {
            out.push_str(&format!("count = {n}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

/// Section: peak RSS and step time versus distinct functions.
pub(crate) fn manyfuncs(b: &mut Bench) -> anyhow::Result<()> {
    let sizes: &[usize] = if b.quick {
        &[1000, 10_000]
    } else {
        &[1000, 30_000, 100_000]
    };
    let detectors: &[&str] = if b.quick {
        &["modal"]
    } else {
        &["modal", "sstd"]
    };
    let np = 8;
    let mut rows = Vec::new();
    // (detector, functions in the scenario) → (functions seen, RSS, ms/step)
    let mut got: Vec<(&str, usize, f64, f64, f64)> = Vec::new();
    for &n in sizes {
        let text = scenario_text(b, n)?;
        let path = b.work.join(format!("manyfuncs-{n}.toml"));
        std::fs::write(&path, &text)?;
        let data = b.generate(
            &format!("manyfuncs-{n}"),
            &text,
            &["synth".into(), path.into_os_string()],
            &[],
        )?;
        let input = data
            .join("tau-metrics-manyfuncs-{rank}.bp")
            .display()
            .to_string();
        for &det in detectors {
            let args = vec![
                "--input".to_string(),
                input.clone(),
                "--algorithm".into(),
                det.into(),
                "--out".into(),
                b.work.join("manyfuncs.h5").display().to_string(),
                "--overwrite".into(),
            ];
            let r = b.run(np, &args)?;
            let s = &r.summary;
            let steps = num(&s["steps"]).max(1.0);
            let seen = s["functions"].as_array().map_or(0, |a| a.len());
            let per = |phase: &str| timing(s, phase) * 1e3 / steps;
            let total: f64 = PHASES.iter().map(|p| per(p)).sum();
            let rss = num(&s["peak_rss_mb"]);
            rows.push(vec![
                n.to_string(),
                seen.to_string(),
                det.to_string(),
                f(rss, 0),
                f(total, 1),
                f(per("read"), 1),
                f(per("agree"), 1),
                f(per("reduce"), 1),
                f(per("collect"), 1),
                f(per("write"), 1),
                f(num(&s["collective_calls_per_step"]), 1),
            ]);
            got.push((det, n, seen as f64, rss, total));
        }
    }
    b.section(
        "Many functions",
        &format!(
            "Peak resident memory (largest AD rank) and time per step versus the number of \
             distinct functions: `scenarios/manyfuncs.toml` (8 application ranks, 20 steps of \
             4,000 function events per rank; each step calls 20 members of a family drawn by a \
             Zipf law, each rank favouring different members) with the family's size changed, \
             on {np} AD ranks (one stream each; oversubscribed on this 2-core machine, so the \
             times include waiting for a core and are comparable between rows only) with the \
             provenance file. Most functions are rare: the functions \
             seen are those drawn at least once, and only a small part of them runs in any \
             step. The model reduction covers only each step's active functions, the profiles \
             and anomaly metrics of the provenance file are agreed over the functions that \
             changed since the last write, and its global tables get rows for new and changed \
             functions only, so the time per step follows what runs in the step."
        ),
    );
    b.table(
        &[
            "functions (family)",
            "functions seen",
            "detector",
            "peak RSS MB",
            "ms/step",
            "read",
            "agree",
            "reduce",
            "collect",
            "write",
            "collective calls/step",
        ],
        &rows,
    );
    // Memory per function beyond the base, from the smallest and largest.
    for &det in detectors {
        let mine: Vec<_> = got.iter().filter(|g| g.0 == det).collect();
        if let (Some(lo), Some(hi)) = (mine.first(), mine.last()) {
            if hi.2 > lo.2 {
                b.note(&format!(
                    "{det}: {:.0} bytes per function seen beyond the base (from {} to {} \
                     functions; names, model, profile, provenance bookkeeping and the reader's \
                     per-stream dictionaries together).",
                    (hi.3 - lo.3) * 1024.0 * 1024.0 / (hi.2 - lo.2),
                    lo.2,
                    hi.2
                ));
            }
        }
    }
    let find = |det: &str, n: usize| got.iter().find(|g| g.0 == det && g.1 == n).copied();
    let default = "modal";
    if let Some(g) = find(default, 100_000) {
        b.target(
            "peak RSS per AD rank at 10^5 functions (manyfuncs.toml, modal, provenance)",
            "< 200 MB",
            format!("{:.0} MB ({} functions seen)", g.3, g.2),
            g.3 < 200.0,
        );
    }
    if let Some(g) = find(default, 30_000) {
        b.target(
            "peak RSS per AD rank at 30,000 functions",
            "< 100 MB",
            format!("{:.0} MB ({} functions seen)", g.3, g.2),
            g.3 < 100.0,
        );
        if let Some(small) = find(default, 1000) {
            b.target(
                "time per step at 30,000 functions vs 1,000",
                "within 2×",
                format!("{:.1} vs {:.1} ms ({:.2}×)", g.4, small.4, g.4 / small.4),
                g.4 <= 2.0 * small.4,
            );
        }
    }
    Ok(())
}
