//! The ROSS analysis (`chimbuko-mpi ross`): the real fixtures (the
//! conservative run yields no anomaly; what the optimistic runs yield is
//! pinned and explained), and a slow PE injected into constructed samples,
//! found in its window with its victims attributed to it.

use std::path::{Path, PathBuf};
use std::process::Command;

use chimbuko_mpi::ross::peers::{self, PeerRule};
use chimbuko_mpi::ross::signals::{Entity, RunSeries, Signal};
use chimbuko_mpi::ross::{analyse, attribution, RossOptions};
use chimbuko_mpi::trace::ross::{EngineSeries, PeSample, Record, SampleHeader};

fn fixture(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ross")
        .join(run)
}

fn opts(run: &str, with_stdout: bool) -> RossOptions {
    RossOptions {
        path: fixture(run),
        ross_stdout: with_stdout.then(|| fixture(run).join("ross-stdout.txt")),
        ..Default::default()
    }
}

#[test]
fn the_conservative_run_has_no_anomaly() {
    for with_stdout in [false, true] {
        let r = analyse(&opts("phold-np2-cons-all", with_stdout)).unwrap();
        assert!(r.anomalies().is_empty(), "{}", r.text());
        assert_eq!(r.json["run"]["pes"], 2);
        let entities = r.json["entities"].as_array().unwrap();
        let pes: Vec<_> = entities.iter().filter(|e| e["kind"] == "pe").collect();
        assert_eq!(pes.len(), 2);
        // The stall below is the costliest incident, rooted at every PE.
        assert_eq!(entities[0]["kind"], "every_pe");
        let incidents = r.json["incidents"]["incidents"].as_array().unwrap();
        assert_eq!(incidents[0]["cause"], "run_wide_stall");
        assert_eq!(incidents[0]["root"]["kind"], "every_pe");
        // No PE stands out, but the whole run stalled: GVT interval 94
        // took 0.212 s of real time against about a millisecond usually
        // (59% of the run's real time), with no PE to blame: both ranks
        // were descheduled together (the fixture was recorded on an
        // oversubscribed machine). The run-wide detection (modal, the
        // default) reports it, and three shorter stalls.
        let wide = r.json["run_wide"].as_array().unwrap();
        let got: Vec<(String, u64, u64)> = wide
            .iter()
            .map(|w| {
                (
                    w["signal"].as_str().unwrap().to_string(),
                    w["intervals"][0].as_u64().unwrap(),
                    w["intervals"][1].as_u64().unwrap(),
                )
            })
            .collect();
        let want = [
            ("sample_gap_s", 94, 94),
            ("sample_gap_s", 187, 187),
            ("sample_gap_s", 228, 229),
            ("event_process_s", 228, 228),
        ];
        assert_eq!(
            got,
            want.map(|(s, a, b)| (s.to_string(), a, b)).to_vec(),
            "{}",
            r.text()
        );
        let stall = &wide[0];
        assert!(stall["caused_by_pe"].is_null() && stall["caused_by_lp"].is_null());
        assert!((stall["evidence"]["value"].as_f64().unwrap() - 0.2123).abs() < 1e-4);
        assert!((stall["evidence"]["share_of_run"].as_f64().unwrap() - 0.592).abs() < 1e-3);
        assert!(r.text().contains("every PE slowed at once"), "{}", r.text());
    }
}

#[test]
fn what_the_optimistic_runs_yield() {
    // Four ranks on two cores roll back heavily everywhere, and every PE
    // is descheduled now and then: the peer comparison is built to see
    // past both. What remains: in the 4-rank GVT run, PE 3 spent far longer
    // in its event handlers than its peers over two consecutive GVT
    // intervals (a descheduling long enough to show), which is reported;
    // and LP 35 (PE 2, KP 0), which LP samples show in a rollback cascade
    // over two GVT intervals: it executed 253 and 227 events where its
    // peers' median was 55, and 197 and 249 of them were rolled back — the
    // same events executed again and again, a real rolling-back LP.
    let quiet = ["phold-np2-opt-all-pe", "phold-np4-opt-smallbuf-multiflush"];
    for run in quiet {
        let r = analyse(&opts(run, true)).unwrap();
        assert!(r.anomalies().is_empty(), "{run}: {}", r.text());
    }
    let r = analyse(&opts("phold-np4-opt-gvt-kplp-rbtrace", true)).unwrap();
    let a = r.anomalies();
    assert_eq!(a.len(), 3, "{}", r.text());
    for (lp, signal) in [(&a[1], "events_processed"), (&a[2], "events_rolled_back")] {
        assert_eq!(lp["kind"], "lp");
        assert_eq!(
            (lp["pe"].as_u64(), lp["kp"].as_u64(), lp["lp"].as_u64()),
            (Some(2), Some(0), Some(35))
        );
        assert_eq!(lp["signal"], signal);
        assert_eq!(lp["intervals"], serde_json::json!([5, 6]));
    }
    assert_eq!(
        a[1]["evidence"]["values"],
        serde_json::json!([89.0, 253.0, 227.0, 133.0])
    );
    assert_eq!(a[0]["kind"], "pe");
    assert_eq!(a[0]["pe"], 3);
    assert_eq!(a[0]["signal"], "event_process_s");
    for key in [
        "kind",
        "pe",
        "kp",
        "lp",
        "gvt_from",
        "gvt_to",
        "real_from",
        "real_to",
        "signal",
        "score",
    ] {
        assert!(a[0].get(key).is_some(), "missing {key}");
    }
    assert!(a[0]["gvt_from"].as_f64() < a[0]["gvt_to"].as_f64());
    assert!(a[0]["real_from"].as_f64() <= a[0]["real_to"].as_f64());
    assert_eq!(r.json["entities"][0]["pe"], 3, "PE 3 costs the most");
    // The same answer every time.
    let again = analyse(&opts("phold-np4-opt-gvt-kplp-rbtrace", true)).unwrap();
    assert_eq!(again.json, r.json);
}

#[test]
fn a_run_with_only_real_time_samples_is_analysed_on_its_real_time_grid() {
    // The RT-only fixture: no GVT file, so the series are the RT file's,
    // on one real-time grid. One window stands out: PE 0 held 40 pending
    // events for two steps while its peers held one or two (PHOLD's queues
    // are nearly empty at this population; PE 0 fell behind for a moment).
    let r = analyse(&opts("phold-np4-opt-rt-kp-committrace", true)).unwrap();
    assert_eq!(r.json["run"]["pes"], 4);
    assert_eq!(r.json["run"]["gvt_intervals"], 0);
    assert!(r.json["run"]["rt_steps"].as_u64().unwrap() > 10);
    let a = r.anomalies();
    assert_eq!(a.len(), 1, "{}", r.text());
    assert_eq!(a[0]["series"], "rt");
    assert_eq!(a[0]["pe"], 0);
    assert_eq!(a[0]["signal"], "queue_size");
    assert_eq!(
        a[0]["evidence"]["values"],
        serde_json::json!([1.0, 40.0, 40.0, 2.0])
    );
    // The commit trace was counted: its records are the net events.
    assert_eq!(r.json["run"]["trace"]["records"], 31957);
}

#[test]
fn a_run_without_engine_samples_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("phold-np4-opt-rt-kp-committrace").join("stats-output/r3-evtrace.bin");
    std::fs::copy(&src, dir.path().join("r3-evtrace.bin")).unwrap();
    let err = analyse(&RossOptions {
        path: dir.path().to_path_buf(),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("r3-gvt.bin") && err.contains("--engine-stats"),
        "{err}"
    );
    let err = analyse(&RossOptions {
        path: std::env::temp_dir().join("no-such-ross-run"),
        ..Default::default()
    })
    .unwrap_err();
    assert!(format!("{err:#}").contains("no-such-ross-run"), "{err:#}");
}

/// A PE sample with the counters that matter here; the rest 0.
fn sample(pe: u32, k: usize, event_s: f32, rollbacks: u32, processed: u32) -> PeSample {
    PeSample {
        header: SampleHeader {
            flag: 0,
            ts: 10.0 * k as f64,
            real_time: 0.1 * k as f64,
        },
        peid: pe,
        nevent_processed: processed,
        nevent_abort: 0,
        e_rbs: rollbacks * 3,
        rb_total: rollbacks,
        rb_secondary: 0,
        fc_attempts: 0,
        pq_qsize: 100,
        nsend_network: 50,
        nread_network: 50,
        ngvts: 1,
        pe_event_ties: 0,
        all_reduce_count: 1,
        efficiency: 90.0,
        net_read_s: 0.0,
        net_other_s: 0.0,
        gvt_s: 0.001,
        fossil_collect_s: 0.0,
        event_abort_s: 0.0,
        event_process_s: event_s,
        pq_s: 0.0,
        rollback_s: rollbacks as f32 * 1e-3,
        cancel_q_s: 0.0,
        avl_s: 0.0,
        buddy_s: 0.0,
        lz4_s: 0.0,
    }
}

#[test]
fn an_injected_slow_pe_is_found_and_named_as_the_cause() {
    // Four PEs, 40 GVT intervals, a little deterministic noise; PE 2's
    // handlers take 10x longer in intervals 10..=19, and the others roll
    // back 8x more then (its stragglers).
    let mut engine = EngineSeries::default();
    for k in 0..40usize {
        for pe in 0..4u32 {
            let noise = 1.0 + 0.05 * (((k * 7 + pe as usize * 3) % 5) as f32 - 2.0);
            let slow = (10..20).contains(&k);
            let event_s = 0.01 * noise * if slow && pe == 2 { 10.0 } else { 1.0 };
            let rollbacks = (20.0 * noise) as u32 * if slow && pe != 2 { 8 } else { 1 };
            let s = sample(pe, k, event_s, rollbacks, 256);
            engine.add(&Record::Pe(s));
        }
    }
    let series = RunSeries::from_engine(&engine);
    let found = peers::find(&series, &PeerRule::default(), true);
    let slow: Vec<_> = found
        .iter()
        .filter(|a| a.signal == Signal::EventProcessTime)
        .collect();
    assert_eq!(slow.len(), 1, "{found:#?}");
    assert_eq!(slow[0].entity, Entity::Pe(2));
    assert_eq!((slow[0].window.first, slow[0].window.last), (10, 19));
    assert_eq!(slow[0].window.span.gvt_from, 90.0);
    assert_eq!(slow[0].window.span.gvt_to, 190.0);
    // The victims roll back together, so none stands out from its peers:
    // nothing is reported against them, and whatever is reported on
    // another PE is attributed to the slow one.
    let caused = attribution::causes(&found);
    for (a, c) in found.iter().zip(&caused) {
        assert!(
            a.entity.pe() == 2 || *c == Some(2),
            "{a:?} is blamed on a victim"
        );
    }
    let costs = attribution::costs(&series, &found, &caused);
    let top = costs.iter().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
    assert_eq!(*top.0, 2);
}

#[test]
fn the_cli_writes_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.json");
    let run = fixture("phold-np4-opt-gvt-kplp-rbtrace");
    let o = Command::new(env!("CARGO_BIN_EXE_chimbuko-mpi"))
        .arg("ross")
        .arg(&run)
        .arg("--ross-stdout")
        .arg(run.join("ross-stdout.txt"))
        .arg("--summary-out")
        .arg(&out)
        .arg("--no-provenance")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("PE 3: event_process_s"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["anomalies"].as_array().unwrap().len(), 3);
    assert_eq!(v["run"]["ross_totals"]["events_processed"], 326286);
}
