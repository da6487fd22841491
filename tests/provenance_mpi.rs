//! The HDF5 provenance file under mpirun: contents equal what the engine
//! labelled, rank-count invariance, a killed run, bad output paths.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chimbuko_mpi::inspect::export_json::chimbuko_event_id;
use chimbuko_mpi::provenance::read::Provenance;
use chimbuko_mpi::provenance::records::{LABEL_ANOMALY, LABEL_NORMAL};
use chimbuko_mpi::util::csv::split_csv;
use common::*;

fn run_cmd(np: usize, data: &Path, out: &Path) -> Command {
    let mut c = mpirun(np);
    c.arg(exe())
        .args(["run", "--quiet", "--input"])
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .arg("--out")
        .arg(out);
    c
}

/// Label-file rows by event id: (in-situ label, final label).
fn labels_by_id(dir: &Path) -> BTreeMap<(u64, String), (String, String)> {
    sorted_labels(dir)
        .iter()
        .map(|l| {
            let f = split_csv(l);
            let rank: u64 = f[1].parse().unwrap();
            ((rank, f[3].clone()), (f[14].clone(), f[11].clone()))
        })
        .collect()
}

#[test]
fn the_file_holds_what_every_rank_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, &["--steps", "6", "--events-per-step", "3000"]);
    let labels = dir.path().join("labels");
    let out = dir.path().join("prov.h5");
    run_ok(
        run_cmd(2, &data, &out)
            .arg("--labels-out")
            .arg(&labels)
            .args(["--flush-steps", "2"]),
    );
    let by_id = labels_by_id(&labels);
    let p = Provenance::load(&out).unwrap();
    assert_eq!(p.attrs["completed"], "1");
    assert_eq!(p.attrs["ad_ranks"], "2");
    assert_eq!(p.attrs["steps_written"], "6");

    // anomalies: exactly the executions labelled anomalous in situ, with
    // the final label of the engine's label files.
    let anomalies = &p.collections[0];
    let in_file: BTreeSet<(u64, String)> = anomalies
        .records
        .iter()
        .map(|r| (r.rid, chimbuko_event_id(r.event_id.as_str()).to_owned()))
        .collect();
    let in_situ: BTreeSet<(u64, String)> = by_id
        .iter()
        .filter(|(_, (in_situ, _))| in_situ == "anomaly")
        .map(|(k, _)| k.clone())
        .collect();
    assert!(in_situ.len() > 20, "{} anomalies", in_situ.len());
    assert_eq!(in_file, in_situ);
    assert_eq!(in_file.len(), anomalies.records.len(), "no duplicates");
    for r in &anomalies.records {
        let (_, fin) = &by_id[&(r.rid, chimbuko_event_id(r.event_id.as_str()).to_owned())];
        let expect = if fin == "anomaly" {
            LABEL_ANOMALY
        } else {
            LABEL_NORMAL
        };
        assert_eq!(r.final_label, expect, "{}", r.event_id.as_str());
        assert_eq!(r.label, LABEL_ANOMALY);
    }
    // Normal samples were labelled normal, one per function and stream
    // step with anomalies (default --normal-samples 1).
    let normals = &p.collections[1];
    assert!(!normals.records.is_empty());
    let mut per_bucket = BTreeMap::new();
    for r in &normals.records {
        let (in_situ, _) = &by_id[&(r.rid, chimbuko_event_id(r.event_id.as_str()).to_owned())];
        assert_eq!(in_situ, "normal");
        *per_bucket.entry((r.rid, r.io_step, r.fid)).or_insert(0) += 1;
    }
    assert!(per_bucket.values().all(|&n| n == 1));

    // Companion tables point back at their records consistently.
    for (i, r) in anomalies.records.iter().enumerate() {
        let cs = &anomalies.call_stack
            [r.call_stack_start as usize..(r.call_stack_start + r.call_stack_len as u64) as usize];
        assert!(cs.iter().all(|c| c.record == i as u64));
        assert_eq!(cs[0].event_id.as_str(), r.event_id.as_str());
        assert_eq!(cs[0].level, 0);
        assert!(cs.len() >= 2, "compute and its parents");
        let w = &anomalies.exec_window[r.exec_window_start as usize
            ..(r.exec_window_start + r.exec_window_len as u64) as usize];
        let me = w
            .iter()
            .find(|x| x.offset == 0)
            .expect("record in its window");
        assert_eq!(me.event_id.as_str(), r.event_id.as_str());
        assert!(w.len() <= 11 && w.len() >= 6, "window of {}", w.len());
        assert!(
            w.windows(2).all(|p| p[0].entry <= p[1].entry),
            "entry order"
        );
        assert!(!r.hostname.as_str().is_empty());
    }
    // The demo's compute calls carry a PAPI counter and halo exchanges
    // carry messages: both show up.
    assert!(!anomalies.counter_events.is_empty());
    assert!(!anomalies.comm_window.is_empty() || !normals.comm_window.is_empty());
    // Per-step rows: every stream and step once.
    assert_eq!(p.steps.len(), 4 * 6);
    let total_exec: u64 = p.steps.iter().map(|s| s.executions).sum();
    assert_eq!(total_exec as usize, by_id.len());
    // func_stats counts final anomalies; its profile counts every execution.
    let final_anomalies = by_id.values().filter(|(_, f)| f == "anomaly").count() as u64;
    let stats_anomalies: u64 = p.func_stats.iter().map(|f| f.total_anomalies).sum();
    assert_eq!(stats_anomalies, final_anomalies);
    let profiled: u64 = p.func_stats.iter().map(|f| f.exclusive_count).sum();
    assert_eq!(profiled as usize, by_id.len());
    // Every anomaly names the model snapshot it was labelled with.
    for r in &anomalies.records {
        let m = &p.model_params[r.model_row as usize];
        assert_eq!(m.fid, r.fid);
        assert_eq!(m.io_step, r.labelled_step);
    }
    assert_eq!(p.ad_model.len(), p.functions.len());
}

/// Everything of a record that must not depend on the number of AD ranks
/// (row positions of companion tables do, so their contents are compared).
fn canonical(p: &Provenance, c: usize) -> Vec<String> {
    let d = &p.collections[c];
    let mut out: Vec<String> = d
        .records
        .iter()
        .map(|r| {
            let span = |s: u64, l: u32| s as usize..(s + l as u64) as usize;
            let cs: Vec<String> = d.call_stack[span(r.call_stack_start, r.call_stack_len)]
                .iter()
                .map(|x| format!("{}/{}/{}", x.event_id.as_str(), x.exit, x.is_anomaly))
                .collect();
            let w: Vec<String> = d.exec_window[span(r.exec_window_start, r.exec_window_len)]
                .iter()
                .map(|x| format!("{}@{}/{}", x.event_id.as_str(), x.offset, x.is_anomaly))
                .collect();
            let comms = d.comm_window[span(r.comm_window_start, r.comm_window_len)].len();
            let counters: Vec<u64> = d.counter_events
                [span(r.counter_events_start, r.counter_events_len)]
                .iter()
                .map(|x| x.counter_value)
                .collect();
            let m = &p.model_params[r.model_row as usize];
            format!(
                "{} {} {} {} {} {} {} {:?} {:?} {:?} {:?} model={}/{}/{:?} cs={cs:?} w={w:?} comms={comms} ctr={counters:?}",
                r.rid,
                r.event_id.as_str(),
                r.func.as_str(),
                r.runtime_exclusive,
                r.io_step,
                r.label,
                r.final_label,
                r.outlier_score.to_bits(),
                r.final_score.to_bits(),
                r.io_step_tstart,
                r.io_step_tend,
                m.io_step,
                m.count,
                m.mean.to_bits(),
            )
        })
        .collect();
    out.sort();
    out
}

fn global_tables(p: &Provenance) -> String {
    let mut steps: Vec<String> = p
        .steps
        .iter()
        .map(|s| format!("{:?}", (s.pid, s.rid, s.io_step, s.executions, s.anomalies)))
        .collect();
    steps.sort();
    let mut meta: Vec<String> = p
        .metadata
        .iter()
        .map(|m| {
            format!(
                "{} {} {} {}",
                m.rid,
                m.tid,
                m.descr.as_str(),
                m.value.as_str()
            )
        })
        .collect();
    meta.sort();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{steps:?}\n{meta:?}",
        p.functions
            .iter()
            .map(|f| f.name.as_str().to_owned())
            .collect::<Vec<_>>(),
        p.func_stats
            .iter()
            .map(|f| format!("{f:?}"))
            .collect::<Vec<_>>(),
        p.counter_stats
            .iter()
            .map(|c| format!("{c:?}"))
            .collect::<Vec<_>>(),
        p.model_params
            .iter()
            .map(|m| format!(
                "{} {} {} {:?}",
                m.io_step,
                m.fid,
                m.count,
                m.stddev.to_bits()
            ))
            .collect::<Vec<_>>(),
    )
}

#[test]
fn the_file_does_not_depend_on_the_number_of_ad_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, &["--steps", "5", "--events-per-step", "3000"]);
    let mut files: Vec<(usize, Provenance)> = Vec::new();
    for np in [1usize, 2, 4] {
        let out = dir.path().join(format!("prov-{np}.h5"));
        run_ok(run_cmd(np, &data, &out).args(["--flush-steps", "2"]));
        files.push((np, Provenance::load(&out).unwrap()));
    }
    let (_, base) = &files[0];
    let base_a = canonical(base, 0);
    let base_n = canonical(base, 1);
    let base_g = global_tables(base);
    assert!(base_a.len() > 20);
    for (np, p) in &files[1..] {
        assert_eq!(p.attrs["ad_ranks"], np.to_string());
        assert_eq!(canonical(p, 0), base_a, "anomalies with {np} AD ranks");
        assert_eq!(canonical(p, 1), base_n, "normal samples with {np} AD ranks");
        assert_eq!(global_tables(p), base_g, "global tables with {np} AD ranks");
    }
}

#[test]
fn a_killed_run_leaves_a_readable_file_with_every_flushed_step() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("sst");
    let out = dir.path().join("prov.h5");
    // An application that never ends soon: 200 paced steps over SST.
    let mut writer = Command::new(exe());
    writer
        .arg("synth")
        .arg("--out")
        .arg(&data)
        .args(["--engine", "SST", "--ranks", "2", "--steps", "200"])
        .args(["--events-per-step", "1000", "--pace-ms", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut writer = writer.spawn().unwrap();
    let mut ad = mpirun(2);
    ad.arg(exe())
        .args([
            "run",
            "--engine",
            "SST",
            "--app-ranks",
            "2",
            "--flush-steps",
            "4",
        ])
        .arg("--input")
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut ad = ad.spawn().unwrap();
    // Wait for step 10's progress line: steps 0..8 are flushed by then
    // (flushes after steps 3 and 7), and the next flush is after step 11.
    let reader = std::io::BufReader::new(ad.stdout.take().unwrap());
    let mut seen = false;
    for line in reader.lines() {
        let line = line.unwrap();
        if line.starts_with("step 10:") {
            seen = true;
            break;
        }
    }
    kill_tree(ad.id());
    kill_tree(writer.id());
    let _ = ad.wait();
    let _ = writer.wait();
    assert!(seen, "the run never reached step 10");
    let p = Provenance::load(&out).expect("a killed run's file opens");
    assert_eq!(p.attrs["completed"], "0");
    let steps: u64 = p.attrs["steps_written"].parse().unwrap();
    assert_eq!(steps, 8);
    // Every flushed step is there, for both streams.
    let flushed: BTreeSet<u64> = p.steps.iter().map(|s| s.io_step).collect();
    assert_eq!(flushed, (0..8).collect());
    assert_eq!(p.steps.len(), 16);
    assert!(!p.functions.is_empty());
    assert!(!p.func_stats.is_empty());
    // `inspect` says so, first thing, for people and for scripts.
    let text = run_ok(Command::new(exe()).arg("inspect").arg(&out));
    assert!(
        text.starts_with("warning: the run did not complete") && text.contains("8 step(s)"),
        "{text}"
    );
    let json = run_ok(Command::new(exe()).args(["inspect", "--json"]).arg(&out));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["completed"], false);
    // A reader that stops early (`inspect FILE | head`): no error, status 0.
    let mut early = Command::new(exe())
        .args(["inspect", "--settings"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(early.stdout.take());
    let early = early.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&early.stderr);
    assert!(
        early.status.success() && err.is_empty(),
        "{:?}: {err}",
        early.status
    );
}

/// Every rank fails; the error, the same on every rank, is said once.
fn fails_on_every_rank(cmd: &mut Command, expect: &str) {
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches(expect).count(), 1, "{expect:?} once in:\n{err}");
    assert_eq!(err.matches("chimbuko-mpi: error: ").count(), 1, "{err}");
    assert!(!err.contains("AD rank"), "{err}");
}

#[test]
fn bad_output_paths_fail_clearly_on_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(
        &data,
        &["--ranks", "2", "--steps", "2", "--events-per-step", "500"],
    );
    // A run that fails before its first step (more application ranks
    // claimed than there are streams) leaves no file to block its re-run.
    let early = dir.path().join("early.h5");
    let out = run_cmd(2, &data, &early)
        .args(["--app-ranks", "4", "--open-timeout", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        !early.exists(),
        "a run without a step left {}",
        early.display()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("was removed"));
    // An existing file is never replaced silently.
    let existing = dir.path().join("exists.h5");
    std::fs::write(&existing, b"precious").unwrap();
    fails_on_every_rank(&mut run_cmd(2, &data, &existing), "--overwrite");
    assert_eq!(std::fs::read(&existing).unwrap(), b"precious");
    // A directory that does not exist, and one nobody may write to.
    let missing = dir.path().join("no/such/dir/prov.h5");
    fails_on_every_rank(&mut run_cmd(2, &data, &missing), "does not exist");
    fails_on_every_rank(
        &mut run_cmd(2, &data, &PathBuf::from("/proc/prov.h5")),
        "not writable",
    );
    // A device that is always full: the write fails, every rank stops.
    let out = run_cmd(2, &data, Path::new("/dev/full"))
        .arg("--overwrite")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("write failed") || err.contains("No space"),
        "{err}"
    );
}
