//! Incidents of ROSS runs on `synth ross` ground truth: each kind of
//! culprit (a slow PE, a PE stopped inside a handler, a hotspot LP, a
//! CPU-heavy LP, a remote-event storm, every PE slow at once) is the root
//! of the first incident listed, in its window, at 2 and 4 PEs over several
//! seeds; a run without a culprit lists none.

use std::path::Path;

use chimbuko_mpi::incidents::{Cause, EntityKind, IncidentList};
use chimbuko_mpi::ross::{analyse_shared, share::Alone, RossOptions as Analysis};
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

/// The scenario at `pes` PEs and `seed`, its culprit moved onto the last
/// PE.
fn case(file: &str, pes: u32, seed: u64) -> RossScenario {
    let mut sc = scenario(file);
    sc.ross.pes = pes;
    sc.ross.seed = seed;
    let lps_per_pe = sc.lps_per_pe();
    for a in sc.anomaly.iter_mut() {
        match a {
            RossAnomaly::SlowPe { pe, .. } | RossAnomaly::PausedPe { pe, .. } => *pe = pes - 1,
            RossAnomaly::HotspotLp { lp, .. } | RossAnomaly::CpuHeavyLp { lp, .. } => {
                *lp = (pes - 1) * lps_per_pe + 5
            }
            RossAnomaly::SlowRun { .. } | RossAnomaly::RemoteStorm { .. } => {}
        }
    }
    sc.validate().unwrap();
    sc
}

fn incidents(sc: &RossScenario) -> IncidentList {
    let dir = tempfile::tempdir().unwrap();
    write_ross(sc, dir.path(), None).unwrap();
    let f = analyse_shared(
        &Analysis {
            path: dir.path().to_path_buf(),
            ..Default::default()
        },
        &Alone,
    )
    .unwrap();
    f.incidents
}

/// The root the first incident must have: its cause, the kind of entity,
/// its PE and LP.
fn expected(sc: &RossScenario) -> (Cause, EntityKind, Option<u32>, Option<u32>) {
    let lps_per_pe = sc.lps_per_pe();
    match sc.anomaly[0] {
        RossAnomaly::SlowPe { pe, .. } => (Cause::SlowPe, EntityKind::Pe, Some(pe), None),
        RossAnomaly::PausedPe { pe, .. } => (Cause::PausedPe, EntityKind::Pe, Some(pe), None),
        RossAnomaly::HotspotLp { lp, .. } => (
            Cause::HotspotLp,
            EntityKind::Lp,
            Some(lp / lps_per_pe),
            Some(lp),
        ),
        // ROSS times no LP: a CPU-heavy LP is seen as its PE.
        RossAnomaly::CpuHeavyLp { lp, .. } => {
            (Cause::SlowPe, EntityKind::Pe, Some(lp / lps_per_pe), None)
        }
        RossAnomaly::RemoteStorm { .. } => (Cause::RollbackStorm, EntityKind::EveryPe, None, None),
        RossAnomaly::SlowRun { .. } => (Cause::RunWideStall, EntityKind::EveryPe, None, None),
    }
}

#[test]
fn each_kind_of_culprit_is_the_first_incident_in_its_window() {
    for file in [
        "ross-slowpe.toml",
        "ross-paused.toml",
        "ross-hotspot.toml",
        "ross-heavylp.toml",
        "ross-storm.toml",
        "ross-slowrun.toml",
    ] {
        for pes in [2, 4] {
            for seed in 1..=3 {
                let sc = case(file, pes, seed);
                let list = incidents(&sc);
                let what = format!("{file} at {pes} PEs, seed {seed}");
                let first = list
                    .incidents
                    .first()
                    .unwrap_or_else(|| panic!("{what}: no incident"));
                let (cause, kind, pe, lp) = expected(&sc);
                assert_eq!(first.cause, cause, "{what}: {first:?}");
                assert_eq!(first.root.kind, kind, "{what}");
                assert_eq!(first.root.pe, pe, "{what}");
                assert_eq!(first.root.lp, lp, "{what}");
                // Its window overlaps the injected one (an interval of
                // slack on each side).
                let (from, to) = sc.anomaly.iter().fold((f64::MAX, 0.0f64), |w, a| {
                    (w.0.min(a.window().0), w.1.max(a.window().1))
                });
                let (gf, gt) = (first.window.gvt_from.unwrap(), first.window.gvt_to.unwrap());
                assert!(
                    gf <= to + 1.0 && from - 1.0 <= gt,
                    "{what}: window {gf}..{gt}"
                );
                assert!(
                    first.cost_s > 0.0 && first.share > 0.01,
                    "{what}: {first:?}"
                );
                // Nothing else as costly.
                for other in &list.incidents[1..] {
                    assert!(other.cost_s < 0.5 * first.cost_s, "{what}: {other:?}");
                }
            }
        }
    }
}

#[test]
fn a_run_without_a_culprit_lists_no_incident() {
    for pes in [2, 4] {
        for seed in 1..=3 {
            let mut sc = scenario("ross-phold.toml");
            sc.ross.pes = pes;
            sc.ross.seed = seed;
            sc.anomaly.clear();
            sc.validate().unwrap();
            let list = incidents(&sc);
            assert!(
                list.incidents.is_empty(),
                "{pes} PEs, seed {seed}: {:?}",
                list.incidents
            );
        }
    }
}
