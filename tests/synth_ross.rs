//! `synth ross`: the generated ROSS files parse with the reader, hold the
//! relations real ROSS output holds (reference §7), are deterministic,
//! flush like ROSS, carry the injected anomalies where the ground truth
//! says, and the CLI writes them end to end.
//!
//! The file is long because the relations of real ROSS output, the
//! determinism and flushing, each injected anomaly kind against its ground
//! truth and the CLI end to end each need their own exact test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use chimbuko_mpi::synth::ross::{
    load_ross_scenario, write_ross, RossOptions, RossReport, RossScenario,
};
use chimbuko_mpi::trace::ross::*;

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn scenario(file: &str) -> RossScenario {
    load_ross_scenario(&RossOptions {
        scenario: Some(scenarios().join(file)),
        ..Default::default()
    })
    .unwrap()
}

fn generate(sc: &RossScenario, dir: &Path) -> RossReport {
    sc.validate().unwrap();
    write_ross(sc, dir, None).unwrap()
}

fn path(sc: &RossScenario, dir: &Path, kind: FileKind) -> PathBuf {
    dir.join(kind.file_name(&sc.ross.prefix))
}

fn engine(sc: &RossScenario, dir: &Path, kind: FileKind) -> (EngineSeries, EngineTotals) {
    let p = path(sc, dir, kind);
    let series = EngineSeries::read(&mut RecordReader::open(&p, kind).unwrap()).unwrap();
    let totals = EngineTotals::read(&mut RecordReader::open(&p, kind).unwrap()).unwrap();
    (series, totals)
}

/// Every event of the trace, owned: (src, dest, send, recv, real_ts).
fn events(sc: &RossScenario, dir: &Path) -> Vec<(u32, u32, f32, f32, f32)> {
    let mut r = RecordReader::open(path(sc, dir, FileKind::EvTrace), FileKind::EvTrace).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        let Record::Event(e) = rec else {
            panic!("not an event: {rec:?}")
        };
        out.push((e.src_lp, e.dest_lp, e.send_vts, e.recv_vts, e.real_ts));
    }
    out
}

fn check_engine_file(sc: &RossScenario, series: &EngineSeries, totals: &EngineTotals, rt: bool) {
    assert_eq!(series.pes.len(), sc.ross.pes as usize);
    assert_eq!(totals.pe_sum(), totals.kp_sum(), "KP sums = PE sums");
    if sc.ross.files.lp_data {
        assert_eq!(totals.pe_sum(), totals.lp_sum(), "LP sums = PE sums");
    }
    for (pe, s) in &series.pes {
        assert_eq!(
            s.first_decrease(),
            None,
            "PE {pe}: GVT or real time decreases"
        );
        assert_eq!(s.final_pe.is_some(), rt, "PE {pe}: final sample only in RT");
        if let Some(f) = s.final_pe {
            assert!(s
                .pe
                .iter()
                .all(|x| x.header.real_time <= f.header.real_time));
        }
        for x in &s.pe {
            let eff = EventCounts {
                nevent_processed: x.nevent_processed.into(),
                e_rbs: x.e_rbs.into(),
                ..Default::default()
            }
            .efficiency();
            assert!((f64::from(x.efficiency) - eff).abs() < 1e-3);
        }
    }
}

#[test]
fn files_parse_and_hold_the_relations_of_real_ross_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut sc = scenario("ross-phold.toml");
    sc.ross.intervals = 40;
    sc.ross.files.model = chimbuko_mpi::synth::ross::scenario::ModelMode::Both;
    sc.ross.files.event_payload_sz = 8;
    let rep = generate(&sc, dir.path());
    let files = StatsFiles::find(dir.path()).unwrap();
    assert_eq!(files.prefix, "ross-stats");
    assert_eq!(files.kinds.len(), 4);
    for f in &rep.files {
        assert_eq!(std::fs::metadata(&f.path).unwrap().len(), f.bytes);
    }
    let (gvt_s, gvt_t) = engine(&sc, dir.path(), FileKind::Gvt);
    let (rt_s, rt_t) = engine(&sc, dir.path(), FileKind::Rt);
    check_engine_file(&sc, &gvt_s, &gvt_t, false);
    check_engine_file(&sc, &rt_s, &rt_t, true);
    // One GVT sample per PE per interval, with the constant batch.
    for s in gvt_s.pes.values() {
        assert_eq!(s.pe.len(), sc.ross.intervals as usize);
        assert!(s.pe.iter().all(|x| x.nevent_processed == 256));
    }
    // RT sums are the run's totals; the GVT file's deltas add up the same.
    assert_eq!(rt_t.pe_sum(), gvt_t.pe_sum());
    let processed = rt_t.pe_sum().nevent_processed;
    assert_eq!(processed, 4 * 256 * 40);
    assert!(rt_t.pe_sum().e_rbs > 0);
    let ev = events(&sc, dir.path());
    assert_eq!(ev.len() as u64, processed, "full trace = events processed");
    assert!(ev.iter().all(|e| e.3 >= e.2), "recv_vts >= send_vts");
    let tt = TraceTotals::read(
        &mut RecordReader::open(path(&sc, dir.path(), FileKind::EvTrace), FileKind::EvTrace)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(tt.payload_bytes, 8 * processed);
    assert!(u64::from(tt.max_lp) < 4 * 16);
    // Model samples: one per LP per GVT sample and per RT sample.
    let mut r =
        RecordReader::open(path(&sc, dir.path(), FileKind::Model), FileKind::Model).unwrap();
    let (mut gvt_n, mut rt_n, mut gvt_processed) = (0u64, 0u64, 0u64);
    while let Some(rec) = r.next_record().unwrap() {
        let Record::Model(m) = rec else { panic!() };
        assert_eq!(m.payload.len(), 4);
        assert!(m.ts >= f64::from(m.gvt) - 1e-3);
        match m.stats_type {
            StatsType::Gvt => {
                gvt_n += 1;
                gvt_processed += u64::from(u32::from_le_bytes(m.payload.try_into().unwrap()));
            }
            StatsType::RealTime => rt_n += 1,
        }
    }
    assert_eq!(gvt_n, 64 * 40);
    let rt_points: usize = rt_s.pes.values().map(|s| s.pe.len()).sum();
    assert_eq!(rt_n, 16 * rt_points as u64);
    assert_eq!(gvt_processed, processed);
    assert_eq!(rep.truth.len(), 0);
}

#[test]
fn commit_and_rollback_traces_count_net_events_and_primary_rollbacks() {
    let mut sc = scenario("ross-phold.toml");
    sc.ross.intervals = 30;
    for (mode, name) in [
        (
            chimbuko_mpi::synth::ross::scenario::TraceMode::Commit,
            "commit",
        ),
        (
            chimbuko_mpi::synth::ross::scenario::TraceMode::Rollback,
            "rollback",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        sc.ross.files.evtrace = mode;
        generate(&sc, dir.path());
        let (_, rt) = engine(&sc, dir.path(), FileKind::Rt);
        let n = events(&sc, dir.path()).len() as i64;
        let want = if name == "commit" {
            rt.pe_sum().net_events()
        } else {
            rt.pe
                .values()
                .map(|p| (p.rb_total - p.rb_secondary) as i64)
                .sum()
        };
        assert_eq!(n, want, "{name} trace");
        assert!(n > 0);
    }
}

#[test]
fn same_scenario_and_seed_give_the_same_bytes() {
    let mut sc = scenario("ross-hotspot.toml");
    sc.ross.intervals = 30;
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    generate(&sc, a.path());
    generate(&sc, b.path());
    sc.ross.seed += 1;
    generate(&sc, c.path());
    let mut names: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names.len(), 5, "{names:?}");
    for n in &names {
        let x = std::fs::read(a.path().join(n)).unwrap();
        assert_eq!(x, std::fs::read(b.path().join(n)).unwrap(), "{n:?}");
    }
    let ev = |d: &Path| std::fs::read(d.join("hotspot-evtrace.bin")).unwrap();
    assert_ne!(ev(a.path()), ev(c.path()), "another seed, other bytes");
}

#[test]
fn small_buffers_flush_often_with_pes_interleaved() {
    let dir = tempfile::tempdir().unwrap();
    let mut sc = scenario("ross-phold.toml");
    sc.ross.intervals = 50;
    sc.ross.buffer_size = 4 << 10;
    let rep = generate(&sc, dir.path());
    let (gvt, _) = engine(&sc, dir.path(), FileKind::Gvt);
    let gvt_rep = rep.files.iter().find(|f| f.kind == FileKind::Gvt).unwrap();
    assert!(gvt_rep.flushes >= 10, "{gvt_rep:?}");
    assert!(
        gvt.pe_blocks >= 4 * gvt_rep.flushes - 4,
        "{} blocks",
        gvt.pe_blocks
    );
    check_engine_file(&sc, &gvt, &engine(&sc, dir.path(), FileKind::Gvt).1, false);
    // In the full trace, destination LPs give the PE: blocks interleave.
    let ev = events(&sc, dir.path());
    let pe_of = |e: &(u32, u32, f32, f32, f32)| e.1 / 16;
    let blocks = 1 + ev
        .windows(2)
        .filter(|w| pe_of(&w[0]) != pe_of(&w[1]))
        .count();
    let ev_rep = rep
        .files
        .iter()
        .find(|f| f.kind == FileKind::EvTrace)
        .unwrap();
    assert!(ev_rep.flushes >= 10);
    // Each flush holds at least the block of the PE whose buffer filled,
    // at most one block per PE.
    assert!(blocks as u64 >= ev_rep.flushes && blocks as u64 <= 4 * ev_rep.flushes);
    assert!(blocks > 4 * 10, "{blocks} blocks");
    // Per PE, the real time of its events never goes back.
    let mut last: BTreeMap<u32, f32> = BTreeMap::new();
    for e in &ev {
        let l = last.entry(pe_of(e)).or_insert(0.0);
        assert!(e.4 >= *l);
        *l = e.4;
    }
    // A single flush when the buffers hold everything.
    let one = tempfile::tempdir().unwrap();
    sc.ross.buffer_size = 64 << 20;
    let rep = generate(&sc, one.path());
    assert!(rep.files.iter().all(|f| f.flushes == 1), "{:?}", rep.files);
    assert_eq!(engine(&sc, one.path(), FileKind::Gvt).0.pe_blocks, 4);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn slow_pe_shows_where_the_truth_says() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario("ross-slowpe.toml");
    let rep = generate(&sc, dir.path());
    assert_eq!(rep.truth.len(), 1);
    let t = &rep.truth[0];
    assert_eq!((t.kind, t.pe, t.kp, t.lp), ("slow_pe", Some(2), None, None));
    assert_eq!((t.gvt_from, t.gvt_to), (40.0, 60.0));
    assert!(t.real_to > t.real_from);
    let (gvt, _) = engine(&sc, dir.path(), FileKind::Gvt);
    // GVT sample of interval i has ts = i + 1.
    let inside = |ts: f64| ts > t.gvt_from && ts <= t.gvt_to;
    let factor = 100.0;
    let per_pe = |pe: u32, win: bool, f: &dyn Fn(&PeSample) -> f64| -> Vec<f64> {
        gvt.pes[&pe]
            .pe
            .iter()
            .filter(|s| inside(s.header.ts) == win)
            .map(f)
            .collect()
    };
    let proc_s = |s: &PeSample| f64::from(s.event_process_s);
    let others = median(
        (0..4)
            .filter(|p| *p != 2)
            .flat_map(|p| per_pe(p, true, &proc_s))
            .collect(),
    );
    let slow = per_pe(2, true, &proc_s);
    assert_eq!(slow.len(), 20);
    assert!(
        slow.iter().all(|s| *s >= factor / 2.0 * others),
        "{slow:?} vs {others}"
    );
    assert!(per_pe(2, false, &proc_s).iter().all(|s| *s < 3.0 * others));
    // Rollbacks rise on every PE; nevent_processed stays the batch.
    for pe in 0..4 {
        let rbs = |w| per_pe(pe, w, &|s: &PeSample| f64::from(s.e_rbs));
        let (a, b) = (rbs(true), rbs(false));
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            mean(&a) > 3.0 * mean(&b),
            "PE {pe}: {} vs {}",
            mean(&a),
            mean(&b)
        );
        assert!(per_pe(pe, true, &|s| f64::from(s.nevent_processed))
            .iter()
            .all(|n| *n == 256.0));
    }
    // GVT advances more slowly per real second.
    let rate = |win: bool| {
        let s: Vec<&PeSample> = gvt.pes[&0].pe.iter().collect();
        let (mut gv, mut rs) = (0.0, 0.0);
        for w in s.windows(2).filter(|w| inside(w[1].header.ts) == win) {
            gv += w[1].header.ts - w[0].header.ts;
            rs += w[1].header.real_time - w[0].header.real_time;
        }
        gv / rs
    };
    assert!(
        rate(true) * 10.0 < rate(false),
        "{} vs {}",
        rate(true),
        rate(false)
    );
    // The slow PE takes more real-time samples in its window.
    let (rt, _) = engine(&sc, dir.path(), FileKind::Rt);
    let count = |pe: u32| {
        rt.pes[&pe]
            .pe
            .iter()
            .filter(|s| s.header.real_time >= t.real_from && s.header.real_time <= t.real_to)
            .count()
    };
    for pe in [0, 1, 3] {
        assert!(
            count(2) > 2 * count(pe),
            "PE 2: {} vs PE {pe}: {}",
            count(2),
            count(pe)
        );
    }
    // Stragglers on the other PEs come from the slow PE.
    let ev = events(&sc, dir.path());
    let win: Vec<_> = ev
        .iter()
        .filter(|e| f64::from(e.3) >= t.gvt_from && f64::from(e.3) < t.gvt_to && e.1 / 16 != 2)
        .collect();
    let from_slow = win.iter().filter(|e| e.0 / 16 == 2).count();
    assert!(from_slow * 2 > win.len(), "{from_slow} of {}", win.len());
}

#[test]
fn hotspot_lp_shows_where_the_truth_says() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario("ross-hotspot.toml");
    let rep = generate(&sc, dir.path());
    let t = &rep.truth[0];
    assert_eq!(
        (t.kind, t.pe, t.kp, t.lp),
        ("hotspot_lp", Some(2), Some(1), Some(37))
    );
    assert_eq!((t.gvt_from, t.gvt_to), (20.0, 30.0));
    // The rollback trace's most frequent dest_lp in the window is the LP.
    let ev = events(&sc, dir.path());
    let mut by_dest: BTreeMap<u32, usize> = BTreeMap::new();
    let mut outside: BTreeMap<u32, usize> = BTreeMap::new();
    for e in &ev {
        let win = f64::from(e.3) >= t.gvt_from && f64::from(e.3) < t.gvt_to;
        *if win { &mut by_dest } else { &mut outside }
            .entry(e.1)
            .or_default() += 1;
    }
    let top = by_dest.iter().max_by_key(|(_, n)| **n).unwrap();
    assert_eq!(*top.0, 37, "{by_dest:?}");
    let second = by_dest
        .iter()
        .filter(|(lp, _)| **lp != 37)
        .map(|(_, n)| *n)
        .max()
        .unwrap();
    assert!(*top.1 > 5 * second, "{} vs {second}", top.1);
    assert!(outside.get(&37).copied().unwrap_or(0) < 3 * outside.values().max().unwrap() / 2);
    // The LP's PE processes several times more events, its queue peaks.
    let (gvt, totals) = engine(&sc, dir.path(), FileKind::Gvt);
    let inside = |ts: f64| ts > t.gvt_from && ts <= t.gvt_to;
    let win = |pe: u32| -> Vec<PeSample> {
        gvt.pes[&pe]
            .pe
            .iter()
            .filter(|s| inside(s.header.ts))
            .copied()
            .collect()
    };
    let hot = win(2);
    assert_eq!(hot.len(), 10);
    for pe in [0, 1, 3] {
        for (h, o) in hot.iter().zip(win(pe)) {
            assert!(h.nevent_processed >= 3 * o.nevent_processed);
        }
    }
    let max_q = |pe: u32| gvt.pes[&pe].pe.iter().map(|s| s.pq_qsize).max().unwrap();
    assert!(max_q(2) >= 2 * max_q(0).max(max_q(1)).max(max_q(3)));
    // The LP's own counters carry it.
    let lp = &totals.lp[&37];
    let other = &totals.lp[&36];
    assert!(lp.counts.nevent_processed > 5 * other.counts.nevent_processed);
}

#[test]
fn truth_file_has_the_documented_columns() {
    let dir = tempfile::tempdir().unwrap();
    let mut sc = scenario("ross-hotspot.toml");
    sc.anomaly.extend(scenario("ross-slowpe.toml").anomaly);
    sc.ross.intervals = 70;
    sc.validate().unwrap();
    let rep = generate(&sc, dir.path());
    let text = std::fs::read_to_string(&rep.truth_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "kind,pe,kp,lp,gvt_from,gvt_to,real_from,real_to,signal"
    );
    assert_eq!(lines.len(), 3);
    let f: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(&f[..6], ["hotspot_lp", "2", "1", "37", "20", "30"]);
    let f: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(&f[..6], ["slow_pe", "2", "", "", "40", "60"]);
    let (from, to): (f64, f64) = (f[6].parse().unwrap(), f[7].parse().unwrap());
    assert!(from >= sc.ross.start_real_time && to > from);
    assert!(f[8].contains("event_process_s"));
}

fn bad(text: &str) -> String {
    let err = RossScenario::from_toml(text).and_then(|sc| sc.validate().map(|_| sc));
    format!("{:#}", err.expect_err("should be refused"))
}

#[test]
fn bad_scenarios_are_refused_with_a_clear_error() {
    let e = bad("[ross]\npes = 2\nbogus = 1\n");
    assert!(e.contains("bogus"), "{e}");
    let e = bad("[ross]\n[ross.files]\nevtrace = \"sometimes\"\n");
    assert!(e.contains("sometimes"), "{e}");
    let e = bad("[ross]\npes = 2\n[[anomaly]]\nkind = \"slow_pe\"\npe = 2\ngvt_from = 1.0\ngvt_to = 5.0\nfactor = 10.0\n");
    assert!(
        e.contains("pe 2 is out of range") && e.contains("2 PEs"),
        "{e}"
    );
    let e = bad("[ross]\nintervals = 10\n[[anomaly]]\nkind = \"hotspot_lp\"\nlp = 3\ngvt_from = 5.0\ngvt_to = 50.0\nfactor = 10.0\n");
    assert!(e.contains("outside the run's GVT range"), "{e}");
    let e = bad("[ross]\n[[anomaly]]\nkind = \"hotspot_lp\"\nlp = 1000\ngvt_from = 5.0\ngvt_to = 6.0\nfactor = 10.0\n");
    assert!(e.contains("lp 1000 is out of range"), "{e}");
    let e = bad("[ross]\n[[anomaly]]\nkind = \"slow_pe\"\npe = 0\ngvt_from = 5.0\ngvt_to = 6.0\nfactor = 0.5\n");
    assert!(e.contains("factor"), "{e}");
    let e = bad("[ross]\n[[anomaly]]\nkind = \"slow_pe\"\npe = 0\ngvt_from = 5.0\ngvt_to = 6.0\nfactor = 5.0\nlp = 3\n");
    assert!(e.contains("lp"), "{e}");
    let e = bad("[ross]\n[[anomaly]]\nkind = \"fast_pe\"\n");
    assert!(e.contains("fast_pe"), "{e}");
    let e = bad("[ross]\nevents_per_interval = 0\n");
    assert!(e.contains("events_per_interval"), "{e}");
    let e = bad("[ross]\n[ross.files]\ngvt = false\nrt = false\nevtrace = \"none\"\n");
    assert!(e.contains("no file"), "{e}");
    let e = bad("description = \"no ross table\"\n");
    assert!(e.contains("ross"), "{e}");
}

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chimbuko-mpi"))
}

#[test]
fn cli_writes_files_and_truth() {
    let dir = tempfile::tempdir().unwrap();
    let out = exe()
        .args(["synth", "ross"])
        .arg(scenarios().join("ross-hotspot.toml"))
        .arg("--out")
        .arg(dir.path())
        .args([
            "--seed",
            "5",
            "--pes",
            "4",
            "--intervals",
            "40",
            "--prefix",
            "cli",
        ])
        .args(["--pace-ms", "0"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("synth ross: 4 PEs x 40 intervals"),
        "{stdout}"
    );
    assert!(stdout.contains("1 injected anomalies"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let files = StatsFiles::find(dir.path()).unwrap();
    assert_eq!(files.prefix, "cli");
    let truth = std::fs::read_to_string(dir.path().join("truth-ross.csv")).unwrap();
    assert!(truth
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("hotspot_lp,2,1,37,20,30,"));

    // Without a scenario: the built-in one.
    let d2 = tempfile::tempdir().unwrap();
    let out = exe()
        .args(["synth", "ross", "--intervals", "5", "--out"])
        .arg(d2.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(d2.path().join("ross-stats-evtrace.bin").exists());

    // A bad scenario: an error, not a panic.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[ross]\npes = 2\n[[anomaly]]\nkind = \"slow_pe\"\npe = 7\ngvt_from = 1.0\ngvt_to = 2.0\nfactor = 3.0\n").unwrap();
    let out = exe()
        .args(["synth", "ross"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("pe 7 is out of range") && !stderr.contains("panicked"),
        "{stderr}"
    );

    // `synth [SCENARIO]` (TAU) is unchanged.
    let d3 = tempfile::tempdir().unwrap();
    let out = exe()
        .arg("synth")
        .arg(scenarios().join("demo.toml"))
        .arg("--out")
        .arg(d3.path())
        .args(["--ranks", "1", "--steps", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        d3.path().join("truth-demo.csv").exists()
            || std::fs::read_dir(d3.path()).unwrap().count() >= 2
    );
}

#[test]
fn a_large_trace_streams_through_small_buffers() {
    // About 50 MB of full event trace through 1 MiB buffers.
    let dir = tempfile::tempdir().unwrap();
    let mut sc = scenario("ross-phold.toml");
    sc.ross.events_per_interval = 4096;
    sc.ross.intervals = 128;
    sc.ross.buffer_size = 1 << 20;
    sc.ross.files.model = chimbuko_mpi::synth::ross::scenario::ModelMode::None;
    sc.ross.files.lp_data = false;
    let rep = generate(&sc, dir.path());
    let ev = rep
        .files
        .iter()
        .find(|f| f.kind == FileKind::EvTrace)
        .unwrap();
    assert!(ev.bytes >= 50_000_000, "{ev:?}");
    assert!(ev.flushes >= ev.bytes / (4 << 20), "{ev:?}");
    let tt =
        TraceTotals::read(&mut RecordReader::open(&ev.path, FileKind::EvTrace).unwrap()).unwrap();
    let (_, rt) = engine(&sc, dir.path(), FileKind::Rt);
    assert_eq!(tt.records, rt.pe_sum().nevent_processed);
    assert_eq!(tt.records, 4 * 4096 * 128);
}

#[test]
fn slow_run_slows_every_pe_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario("ross-slowrun.toml");
    let rep = generate(&sc, dir.path());
    let t = &rep.truth[0];
    assert_eq!((t.kind, t.pe, t.kp, t.lp), ("slow_run", None, None, None));
    assert_eq!((t.gvt_from, t.gvt_to), (50.0, 60.0));
    let csv = std::fs::read_to_string(dir.path().join("truth-ross.csv")).unwrap();
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("slow_run,,,,50,60,"),
        "{csv}"
    );
    let (gvt, _) = engine(&sc, dir.path(), FileKind::Gvt);
    let inside = |ts: f64| ts > t.gvt_from && ts <= t.gvt_to;
    for pe in 0..4u32 {
        let proc_s = |win: bool| {
            median(
                gvt.pes[&pe]
                    .pe
                    .iter()
                    .filter(|s| inside(s.header.ts) == win)
                    .map(|s| f64::from(s.event_process_s))
                    .collect(),
            )
        };
        let ratio = proc_s(true) / proc_s(false);
        assert!((24.0..36.0).contains(&ratio), "PE {pe}: x{ratio}");
    }
    // Every interval in the window lasts longer in real time.
    let gaps: Vec<(bool, f64)> = gvt.pes[&0]
        .pe
        .windows(2)
        .map(|w| {
            (
                inside(w[1].header.ts),
                w[1].header.real_time - w[0].header.real_time,
            )
        })
        .collect();
    let slow = median(gaps.iter().filter(|g| g.0).map(|g| g.1).collect());
    let usual = median(gaps.iter().filter(|g| !g.0).map(|g| g.1).collect());
    assert!(slow > 2.0 * usual, "{slow} vs {usual}");
}
