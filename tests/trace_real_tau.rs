//! Real TAU output (TAU 2.35 + ADIOS2 BP4, `../shared/fixtures/tau/simple_workflow`)
//! must read without error, every step, with the counts in its `dump.txt`.

mod common;

use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::format::*;
use common::*;

/// One step line of `dump.txt`.
#[derive(Debug, PartialEq, Eq)]
struct Expected {
    step: usize,
    timer_events: usize,
    entries: usize,
    exits: usize,
    comm: usize,
    counter: usize,
    timers: i64,
    counters: i64,
    attrs: usize,
    ts_first: u64,
    ts_last: u64,
}

/// Parses the per-step table of `file` from `dump.txt`.
fn expected_steps(file: &str) -> Vec<Expected> {
    let text = std::fs::read_to_string(fixture_dir().join("dump.txt")).expect("dump.txt");
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("file: ") {
            inside = line == format!("file: {file}");
            continue;
        }
        if !inside {
            continue;
        }
        if line.starts_with("TOTAL") {
            break;
        }
        let cleaned: String = line
            .chars()
            .map(|c| if "(),/".contains(c) { ' ' } else { c })
            .collect();
        let f: Vec<&str> = cleaned.split_whitespace().collect();
        if f.len() != 11 || f[0].parse::<usize>().is_err() {
            continue;
        }
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        out.push(Expected {
            step: n(0) as usize,
            timer_events: n(1) as usize,
            entries: n(2) as usize,
            exits: n(3) as usize,
            comm: n(4) as usize,
            counter: n(5) as usize,
            timers: n(6) as i64,
            counters: n(7) as i64,
            attrs: n(8) as usize,
            ts_first: n(9),
            ts_last: n(10),
        });
    }
    out
}

#[test]
fn every_fixture_stream_matches_dump_txt() {
    for file in [
        "tau-metrics-main1-0.bp",
        "tau-metrics-main1-1.bp",
        "tau-metrics-main2-0.bp",
        "tau-metrics-main2-1.bp",
    ] {
        let want = expected_steps(file);
        assert_eq!(want.len(), 22, "{file}: dump.txt parsed");
        let mut opts = reader_options(Engine::BP4);
        opts.program_idx = if file.contains("main2") { 1 } else { 0 };
        let mut r =
            chimbuko_mpi::trace::tau::TauStreamReader::open(&fixture_dir().join(file), opts)
                .unwrap();
        let mut got = Vec::new();
        let mut all_rows = 0;
        loop {
            match r.next_step(std::time::Duration::from_secs(5)).unwrap() {
                chimbuko_mpi::trace::source::NextStep::Step(s) => {
                    assert!(
                        s.issues.is_empty(),
                        "{file} step {}: {:?}",
                        s.step,
                        s.issues
                    );
                    let dict = r.dictionary();
                    let entries = s
                        .funcs
                        .iter()
                        .filter(|row| {
                            dict.event_type(row.event_type.into()) == Some(EventKind::Entry)
                        })
                        .count();
                    // The program column is overridden with --program-idx.
                    assert_eq!(s.program, opts_program(file));
                    assert!(s
                        .func_rows()
                        .iter()
                        .all(|row| row[COL_PROGRAM] == opts_program(file)));
                    let (a, b) = s.time_range().unwrap();
                    all_rows += s.funcs.len();
                    got.push(Expected {
                        step: s.step,
                        timer_events: s.funcs.len(),
                        entries,
                        exits: s.funcs.len() - entries,
                        comm: s.comms.len(),
                        counter: s.counters.len(),
                        timers: s.declared.timers.unwrap(),
                        counters: s.declared.counters.unwrap(),
                        attrs: r.attribute_count(),
                        ts_first: a,
                        ts_last: b,
                    });
                }
                chimbuko_mpi::trace::source::NextStep::NotReady => {
                    panic!("{file}: file engine not ready")
                }
                chimbuko_mpi::trace::source::NextStep::EndOfStream => break,
            }
        }
        assert_eq!(got, want, "{file}");
        assert_eq!(all_rows, 2010, "{file}: total timer events");
        // Names as TAU defined them (local indices differ per rank).
        let d = r.dictionary();
        assert_eq!(d.functions.iter().flatten().count(), 6);
        assert_eq!(d.counters.iter().flatten().count(), 33);
        assert!(d
            .functions
            .iter()
            .flatten()
            .any(|n| n.starts_with("[PTHREAD] addr=<")));
        assert!(
            d.counters
                .iter()
                .flatten()
                .filter(|n| n.starts_with(MONITORING_PREFIX))
                .count()
                >= 30
        );
        assert!(d
            .metadata
            .iter()
            .any(|m| m.description == "CPU Cores" && m.value == "2"));
    }
}

fn opts_program(file: &str) -> u64 {
    if file.contains("main2") {
        1
    } else {
        0
    }
}

#[test]
fn monitoring_thread_is_thread_1_and_never_exits_its_pthread_timer() {
    let path = fixture_dir().join("tau-metrics-main1-0.bp");
    let (steps, r) = read_all(&path, reader_options(Engine::BP4));
    let d = r.dictionary();
    let pthread = d
        .functions
        .iter()
        .position(|n| n.as_deref().is_some_and(|n| n.starts_with("[PTHREAD]")))
        .unwrap() as u64;
    let rows: Vec<_> = steps
        .iter()
        .flat_map(|s| s.funcs.iter())
        .filter(|r| u64::from(r.function) == pthread)
        .collect();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r.thread == 1));
    assert!(rows
        .iter()
        .all(|r| d.event_type(r.event_type.into()) == Some(EventKind::Entry)));
    // Monitoring counters come from thread 1.
    let monitoring: Vec<_> = steps
        .iter()
        .flat_map(|s| s.counters.iter())
        .filter(|c| {
            d.counter(c[COUNTER_COL_COUNTER])
                .is_some_and(|n| n.starts_with(MONITORING_PREFIX))
        })
        .collect();
    assert_eq!(monitoring.len(), 672);
    assert!(monitoring.iter().all(|c| c[COL_THREAD] == 1));
}

#[test]
fn dump_command_reads_the_fixture() {
    let out = std::process::Command::new(exe())
        .args(["dump", "--engine", "BP4", "--json"])
        .arg(fixture_dir().join("tau-metrics-main2-1.bp"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["steps"].as_array().unwrap().len(), 22);
    assert_eq!(v["total_func_events"], 2010);
    assert_eq!(v["total_counter_events"], 672);
    assert_eq!(v["functions"].as_array().unwrap().len(), 6);
}
