//! Incidents of TAU traces under mpirun, against the ground truth of the
//! coupled scenarios (`scenarios/incidents-*.toml`): the injected roots are
//! found and nothing else is listed, the waits they caused are members of
//! their incident and never roots, a run without injections lists nothing,
//! and the incident tables are identical at 1, 2 and 4 AD ranks.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use chimbuko_mpi::incidents::{Cause, IncidentList, Role};
use chimbuko_mpi::output::truth_incidents::{IncidentScore, IncidentTruth};
use chimbuko_mpi::provenance::read::Provenance;
use common::*;

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("incidents-{name}.toml"))
}

/// Writes the scenario's streams (BP4) and ground truth to `dir`.
fn synth(name: &str, dir: &Path) {
    let mut c = Command::new(exe());
    c.arg("synth")
        .arg(scenario(name))
        .arg("--out")
        .arg(dir)
        .args(["--engine", "BP4"]);
    run_ok(&mut c);
}

/// Runs the analysis on `np` AD ranks and reads the incidents back.
fn incidents(name: &str, data: &Path, np: usize, out: &Path) -> IncidentList {
    let binary = format!("incidents_{name}");
    let file = out.join(format!("{name}-{np}.h5"));
    let mut c = mpirun(np);
    c.arg(exe())
        .args(["run", "--quiet", "--input"])
        .arg(data.join(format!("tau-metrics-{binary}-{{rank}}.bp")))
        .arg("--out")
        .arg(&file);
    run_ok(&mut c);
    Provenance::load(&file).unwrap().incidents
}

fn truth(name: &str, data: &Path) -> IncidentTruth {
    IncidentTruth::load(&data.join(format!("incidents-incidents_{name}.csv"))).unwrap()
}

/// The checks every scenario with injections must pass.
fn assert_found(name: &str, s: &IncidentScore) {
    assert!(s.roots > 0, "{name}: no injected root in the truth");
    assert!(s.root_recall >= 0.95, "{name}: root recall {s:?}");
    assert!(s.root_precision >= 0.9, "{name}: root precision {s:?}");
    assert_eq!(
        s.waits_as_roots, 0,
        "{name}: a propagated wait is a root: {s:?}"
    );
    assert!(s.waits_linked >= 50, "{name}: few waits linked: {s:?}");
    assert!(
        s.waits_right as f64 >= 0.95 * s.waits_linked as f64,
        "{name}: waits outside their root's incident: {s:?}"
    );
}

#[test]
fn ring_incidents_are_the_injected_ones_at_any_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth("ring", &data);
    let truth = truth("ring", &data);
    let one = incidents("ring", &data, 1, dir.path());
    let score = truth.score(&one);
    assert_found("ring", &score);
    // Each kind of injection is the root of its own incident.
    let cause_at = |rank: u64| {
        one.incidents
            .iter()
            .find(|i| i.root.rank == Some(rank))
            .map(|i| (i.cause, i.root.function.clone().unwrap_or_default()))
    };
    assert_eq!(
        cause_at(1),
        Some((Cause::OversizedMessage, "MPI_Sendrecv".into()))
    );
    assert_eq!(cause_at(2), Some((Cause::SlowExecution, "compute".into())));
    assert_eq!(cause_at(5), Some((Cause::SlowExecution, "kernel".into())));
    assert_eq!(
        cause_at(6),
        Some((Cause::StalledInMpi, "MPI_Allreduce".into()))
    );
    // The oversized message's bytes are its evidence.
    let big = one
        .incidents
        .iter()
        .find(|i| i.cause == Cause::OversizedMessage)
        .unwrap();
    let bytes = big
        .evidence
        .iter()
        .find(|e| e.what == "bytes_sent")
        .unwrap();
    assert_eq!(bytes.value, 52_428_800.0);
    assert_eq!(bytes.usual, 1_048_576.0);
    assert_eq!(big.occurrences, 5);
    assert!(big.counts.get(Role::PropagatedWait) > 0);
    // The costliest first.
    assert!(one.incidents.windows(2).all(|w| w[0].cost_s >= w[1].cost_s));
    for np in [2, 4] {
        let other = incidents("ring", &data, np, dir.path());
        assert_eq!(other, one, "incidents differ at {np} AD ranks");
    }
}

#[test]
fn halo_incidents_are_the_injected_ones_at_any_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth("halo", &data);
    let truth = truth("halo", &data);
    let one = incidents("halo", &data, 1, dir.path());
    assert_found("halo", &truth.score(&one));
    // Two roots of one step are two incidents.
    let step_roots: Vec<u64> = one
        .incidents
        .iter()
        .filter(|i| i.occurrences == 1 && i.cause == Cause::SlowExecution)
        .filter_map(|i| i.root.rank)
        .collect();
    assert!(
        step_roots.contains(&2) && step_roots.contains(&6),
        "{step_roots:?}"
    );
    let two = incidents("halo", &data, 2, dir.path());
    assert_eq!(two, one, "incidents differ at 2 AD ranks");
}

#[test]
fn a_run_without_injections_lists_no_incident() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth("control", &data);
    for np in [1, 2] {
        let list = incidents("control", &data, np, dir.path());
        assert!(
            list.incidents.is_empty(),
            "{np} AD ranks listed {:?}",
            list.incidents
                .iter()
                .map(|i| (i.root.label(), i.cost_s))
                .collect::<Vec<_>>()
        );
        assert!(list.total_rank_s > 0.0);
    }
}
