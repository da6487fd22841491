//! Detection on `synth ross` ground truth: a slow PE and a hotspot LP, at
//! 2 and 4 simulated PEs over several seeds, found in the right window.
//! Precision and recall are printed as a table (`scripts/bench.sh` copies
//! it into `docs/benchmarks.md`) and held to a floor here.
//!
//! Scoring: the truth is found (recall) when the culprit itself is
//! reported in a window overlapping the injected one — for a slow PE, the
//! PE's `event_process_s` in the GVT series; for a hotspot LP, the LP (from
//! its LP samples or the event trace). A reported anomaly is correct
//! (precision) when it overlaps the injected window and is the culprit,
//! belongs to it (the hotspot's PE and KP surge with it), or is attributed
//! to it (`caused_by_pe`: the slow PE's victims).

use std::path::Path;

use chimbuko_mpi::ross::{analyse, RossOptions as Analysis};
use chimbuko_mpi::synth::ross::RossAnomaly;
use chimbuko_mpi::synth::ross::{load_ross_scenario, write_ross, RossOptions, RossScenario};

fn scenario(file: &str) -> RossScenario {
    load_ross_scenario(&RossOptions {
        scenario: Some(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(file),
        ),
        ..Default::default()
    })
    .unwrap()
}

/// One case: the scenario at `pes` PEs and `seed`, its culprit moved onto
/// the last PE.
fn case(file: &str, pes: u32, seed: u64, strength: Option<f64>) -> RossScenario {
    let mut sc = scenario(file);
    sc.ross.pes = pes;
    sc.ross.seed = seed;
    let lps_per_pe = sc.lps_per_pe();
    for a in sc.anomaly.iter_mut() {
        match a {
            RossAnomaly::SlowPe { pe, factor, .. } => {
                *pe = pes - 1;
                *factor = strength.unwrap_or(*factor);
            }
            RossAnomaly::HotspotLp { lp, factor, .. } => {
                *lp = (pes - 1) * lps_per_pe + 5;
                *factor = strength.unwrap_or(*factor);
            }
        }
    }
    sc.validate().unwrap();
    sc
}

#[derive(Default, Debug)]
struct Score {
    runs: usize,
    found: usize,
    reported: usize,
    correct: usize,
    iou: f64,
}

fn overlap(a: (f64, f64), b: (f64, f64)) -> f64 {
    (a.1.min(b.1) - a.0.max(b.0)).max(0.0)
}

fn evaluate(sc: &RossScenario, score: &mut Score) {
    let dir = tempfile::tempdir().unwrap();
    write_ross(sc, dir.path(), None).unwrap();
    let r = analyse(&Analysis {
        path: dir.path().to_path_buf(),
        ..Default::default()
    })
    .unwrap();
    let truth = &sc.anomaly[0];
    let (from, to) = truth.window();
    let lps_per_kp = sc.ross.lps_per_kp;
    let lps_per_pe = sc.lps_per_pe();
    let (culprit_pe, culprit_lp, culprit_kp) = match *truth {
        RossAnomaly::SlowPe { pe, .. } => (pe, None, None),
        RossAnomaly::HotspotLp { lp, .. } => (
            lp / lps_per_pe,
            Some(lp),
            Some((lp % lps_per_pe) / lps_per_kp),
        ),
    };
    score.runs += 1;
    let mut best_iou: f64 = 0.0;
    let mut found = false;
    for a in r.anomalies() {
        score.reported += 1;
        let w = (
            a["gvt_from"].as_f64().unwrap_or(0.0),
            a["gvt_to"].as_f64().unwrap_or(0.0),
        );
        // One GVT interval of slack on each side.
        let overlaps = overlap(w, (from - 1.0, to + 1.0)) > 0.0;
        let pe = a["pe"].as_u64().map(|p| p as u32);
        let lp = a["lp"].as_u64().map(|l| l as u32);
        let kp = a["kp"].as_u64().map(|k| k as u32);
        let cause = a["caused_by_pe"].as_u64().map(|p| p as u32);
        let is_culprit = match culprit_lp {
            None => a["kind"] == "pe" && pe == Some(culprit_pe),
            Some(l) => lp == Some(l),
        };
        let belongs = match culprit_lp {
            None => pe == Some(culprit_pe) || cause == Some(culprit_pe),
            Some(l) => {
                lp == Some(l)
                    || (pe == Some(culprit_pe)
                        && (a["kind"] == "pe" || (a["kind"] == "kp" && kp == culprit_kp)))
            }
        };
        if overlaps && belongs {
            score.correct += 1;
        }
        let counts_as_found = is_culprit
            && overlaps
            && (culprit_lp.is_some() || (a["signal"] == "event_process_s" && a["series"] == "gvt"));
        if counts_as_found {
            found = true;
            let inter = overlap(w, (from, to));
            let union = (w.1.max(to) - w.0.min(from)).max(1e-12);
            best_iou = best_iou.max(inter / union);
        }
    }
    if found {
        score.found += 1;
        score.iou += best_iou;
    }
}

#[test]
fn slow_pes_and_hotspot_lps_are_found_in_their_windows() {
    println!("| injected | PEs | runs | recall | precision | anomalies | window IoU |");
    println!("|---|---|---|---|---|---|---|");
    // The scenarios' strengths, then weaker ones (reported, not held to
    // the floor: they show where detection starts to fade).
    for (file, name, strength) in [
        ("ross-slowpe.toml", "slow PE (x100, GVT 40-60)", None),
        ("ross-hotspot.toml", "hotspot LP (x48, GVT 20-30)", None),
        ("ross-slowpe.toml", "slow PE (x4, GVT 40-60)", Some(4.0)),
        ("ross-hotspot.toml", "hotspot LP (x8, GVT 20-30)", Some(8.0)),
    ] {
        for pes in [2, 4] {
            let mut s = Score::default();
            for seed in 1..=5 {
                evaluate(&case(file, pes, seed, strength), &mut s);
            }
            let recall = s.found as f64 / s.runs as f64;
            let precision = s.correct as f64 / (s.reported.max(1)) as f64;
            println!(
                "| {name} | {pes} | {} | {recall:.2} | {precision:.2} | {} | {:.2} |",
                s.runs,
                s.reported,
                s.iou / s.found.max(1) as f64
            );
            if strength.is_none() {
                assert_eq!(recall, 1.0, "{name} at {pes} PEs: {s:?}");
                assert!(precision >= 0.9, "{name} at {pes} PEs: {s:?}");
            }
        }
    }
}
