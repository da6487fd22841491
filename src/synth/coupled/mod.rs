//! A coupled synthetic application (`synth` with a `kind = "coupled"`
//! scenario): ranks that wait for each other as MPI makes them, so that a
//! delay on one rank shows up as waits on its partners — the ground truth
//! of incidents.
//!
//! [`scenario`] is the file format, [`sim`] the simulation of every rank's
//! calls; here the calls become each rank's TAU steps (cut every
//! `period_us` of application time, as TAU's periodic output cuts them) and
//! the ground truth is made: the injected roots and the waits they caused
//! (`truth-<binary>.csv`, the same format as every scenario's) and the
//! incidents
//! (`incidents-<binary>.csv`): each injected occurrence with the waits it
//! caused: the waits that are shorter, by at least a quarter of what it
//! injected, in the run simulated again without it, or longer in a run
//! with it alone than in one with no injection (a wait two injections
//! lengthened is listed under both).

pub mod scenario;
pub mod sim;

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use super::generator::{TruthRow, ET_ENTRY, ET_EXIT, ET_RECV, ET_SEND};
use crate::trace::writer::StepData;
use crate::util::csv::csv_field;
pub use scenario::CoupledScenario;
use scenario::InjectKind;
use sim::{simulate, EventKind, Simulation, Timed, HALO_TAG};

/// A simulated coupled run.
pub struct CoupledRun {
    /// The scenario.
    pub sc: CoupledScenario,
    /// Every rank's calls, with every injection.
    pub sim: Simulation,
    /// Steps of every rank's stream.
    pub steps: u64,
}

/// One row of the incident ground truth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncidentTruthRow {
    /// The injected occurrence (from 1, in injection then iteration order).
    pub incident: u64,
    /// `root` (the injected execution) or `wait` (a wait it caused).
    pub role: &'static str,
    /// Rank of the execution.
    pub rank: u64,
    /// Function name.
    pub function: String,
    /// Step of its EXIT.
    pub step: u64,
    /// ENTRY timestamp (µs).
    pub entry_us: u64,
    /// EXIT timestamp (µs).
    pub exit_us: u64,
    /// How much longer it took because of the injection (µs).
    pub effect_us: u64,
}

impl CoupledRun {
    /// Simulates `sc` with every injection.
    pub fn new(sc: CoupledScenario) -> Self {
        let sim = simulate(&sc, &[]);
        let last = sim
            .events
            .iter()
            .filter_map(|e| e.last())
            .map(|e| e.ts)
            .max()
            .unwrap_or(sc.start_time_us);
        let steps = (last - sc.start_time_us) / sc.period_us + 1;
        CoupledRun { sc, sim, steps }
    }

    fn step_of(&self, ts: u64) -> u64 {
        (ts.saturating_sub(self.sc.start_time_us) / self.sc.period_us).min(self.steps - 1)
    }

    /// The TAU steps of rank `rank`'s stream.
    pub fn rank_steps(&self, rank: u64) -> Vec<StepData> {
        let mut out: Vec<StepData> = (0..self.steps).map(|_| StepData::default()).collect();
        let mut defined = vec![false; self.sim.names.len()];
        out[0].new_attributes = vec![
            ("event_type 0".into(), "ENTRY".into()),
            ("event_type 1".into(), "EXIT".into()),
            ("event_type 2".into(), "SEND".into()),
            ("event_type 3".into(), "RECV".into()),
            ("program_name 0".into(), self.sc.binary.clone()),
            (
                format!("MetaData:{rank}:0:Hostname"),
                format!("node{:03}", rank / 4),
            ),
            (format!("MetaData:{rank}:0:Thread Type"), "CPU".into()),
        ];
        for e in &self.sim.events[rank as usize] {
            let step = &mut out[self.step_of(e.ts) as usize];
            match e.kind {
                EventKind::Entry(f) | EventKind::Exit(f) => {
                    if !defined[f] {
                        defined[f] = true;
                        step.new_attributes
                            .push((format!("timer {f}"), self.sim.names[f].clone()));
                    }
                    let et = if matches!(e.kind, EventKind::Entry(_)) {
                        ET_ENTRY
                    } else {
                        ET_EXIT
                    };
                    step.funcs.push([0, rank, 0, et, f as u64, e.ts]);
                }
                EventKind::Send { peer, bytes } => {
                    step.comms
                        .push([0, rank, 0, ET_SEND, HALO_TAG, peer, bytes, e.ts]);
                }
                EventKind::Recv { peer, bytes } => {
                    step.comms
                        .push([0, rank, 0, ET_RECV, HALO_TAG, peer, bytes, e.ts]);
                }
            }
        }
        out
    }

    /// The injected roots and the waits they caused (each execution
    /// once), as rows of the usual ground truth: every one of them is an
    /// anomaly.
    pub fn truth(&self) -> Vec<TruthRow> {
        let mut rows = self.incident_truth();
        rows.sort_by_key(|r| (r.rank, r.entry_us, r.function.clone(), r.role != "root"));
        rows.dedup_by_key(|r| (r.rank, r.entry_us, r.function.clone()));
        rows.into_iter()
            .map(|r| TruthRow {
                rank: r.rank,
                thread: 0,
                step: r.step,
                function: r.function,
                entry_us: r.entry_us,
                exit_us: r.exit_us,
                exclusive_us: r.exit_us - r.entry_us,
            })
            .collect()
    }

    /// The root of injection `j` in iteration `it`.
    fn root_call(&self, j: usize, it: u64) -> Option<(u64, Timed)> {
        let inj = &self.sc.injections[j];
        let name = match inj.kind {
            InjectKind::Delay => inj.function.clone().unwrap_or_default(),
            InjectKind::Message => "MPI_Sendrecv".into(),
            InjectKind::Stall => "MPI_Allreduce".into(),
        };
        let f = self.sim.function(&name)?;
        self.sim.calls[inj.rank as usize]
            .iter()
            .find(|c| c.iteration == it && c.function == f)
            .map(|c| (inj.rank, *c))
    }

    /// The incidents' ground truth: each injected occurrence, then the
    /// waits it caused: a wait lengthened by several injections (two late
    /// ranks in one iteration) is listed under each, with the latest
    /// occurrence of each up to the wait's iteration.
    pub fn incident_truth(&self) -> Vec<IncidentTruthRow> {
        let n = self.sc.injections.len();
        // (injection, iteration) → incident id.
        let mut ids = Vec::new();
        let mut rows = Vec::new();
        for (j, inj) in self.sc.injections.iter().enumerate() {
            let mut its = inj.iterations.clone();
            its.sort_unstable();
            its.dedup();
            for it in its {
                let Some((rank, c)) = self.root_call(j, it) else {
                    continue;
                };
                ids.push((j, it));
                rows.push(self.row(ids.len() as u64, "root", rank, &c, 0));
            }
        }
        // Each wait, lengthened by which injections, and by how much.
        let mut causes: Vec<Vec<Vec<(usize, u64)>>> = self
            .sim
            .calls
            .iter()
            .map(|c| vec![Vec::new(); c.len()])
            .collect();
        // An injection causes a wait when the run without it waits less,
        // or when a run with it alone waits more than a run with none (two
        // late ranks can each hide the other in the first comparison).
        let none = simulate(&self.sc, &vec![false; n]);
        for j in 0..n {
            let mut without = vec![true; n];
            without[j] = false;
            let without = simulate(&self.sc, &without);
            let mut alone = vec![false; n];
            alone[j] = true;
            let alone = simulate(&self.sc, &alone);
            let min = min_effect_us(&self.sc, j);
            let dur = |s: &Simulation, r: usize, k: usize| {
                s.calls[r].get(k).map_or(0, |c| c.exit - c.entry)
            };
            for (r, calls) in self.sim.calls.iter().enumerate() {
                for (k, c) in calls.iter().enumerate() {
                    if !self.sim.is_wait(c.function) {
                        continue;
                    }
                    let removed = (c.exit - c.entry).saturating_sub(dur(&without, r, k));
                    let added = dur(&alone, r, k).saturating_sub(dur(&none, r, k));
                    let effect = removed.max(added);
                    if effect >= min {
                        causes[r][k].push((j, effect));
                    }
                }
            }
        }
        let roots: Vec<(u64, Timed)> = ids
            .iter()
            .filter_map(|&(j, it)| self.root_call(j, it))
            .collect();
        for (r, calls) in self.sim.calls.iter().enumerate() {
            for (k, c) in calls.iter().enumerate() {
                if roots.iter().any(|(rr, rc)| *rr == r as u64 && rc == c) {
                    continue;
                }
                for &(j, effect) in &causes[r][k] {
                    let occurrence = ids
                        .iter()
                        .enumerate()
                        .filter(|(_, (jj, it))| *jj == j && *it <= c.iteration)
                        .map(|(i, _)| i)
                        .next_back();
                    if let Some(i) = occurrence {
                        rows.push(self.row(i as u64 + 1, "wait", r as u64, c, effect));
                    }
                }
            }
        }
        rows
    }

    fn row(
        &self,
        incident: u64,
        role: &'static str,
        rank: u64,
        c: &Timed,
        effect: u64,
    ) -> IncidentTruthRow {
        IncidentTruthRow {
            incident,
            role,
            rank,
            function: self.sim.names[c.function].clone(),
            step: self.step_of(c.exit),
            entry_us: c.entry,
            exit_us: c.exit,
            effect_us: effect,
        }
    }
}

/// The smallest lengthening of a wait that counts as caused by injection
/// `j`: a quarter of what it injects, and at least 200 µs.
fn min_effect_us(sc: &CoupledScenario, j: usize) -> u64 {
    let inj = &sc.injections[j];
    let amount = match inj.kind {
        InjectKind::Delay | InjectKind::Stall => inj.add_us,
        InjectKind::Message => {
            (inj.factor - 1.0) * sc.message_bytes as f64 / sc.bandwidth_bytes_per_us
        }
    };
    ((amount / 4.0).round() as u64).max(200)
}

/// Path of the incident ground truth.
pub fn incident_truth_path(out: &Path, binary: &str) -> std::path::PathBuf {
    out.join(format!("incidents-{binary}.csv"))
}

const HEADER: &str = "incident,role,rank,thread,function,step,entry_us,exit_us,effect_us";

/// Writes the incident ground truth as CSV.
pub fn write_incident_truth(path: &Path, rows: &[IncidentTruthRow]) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(f, "{HEADER}")?;
    for r in rows {
        writeln!(
            f,
            "{},{},{},0,{},{},{},{},{}",
            r.incident,
            r.role,
            r.rank,
            csv_field(&r.function),
            r.step,
            r.entry_us,
            r.exit_us,
            r.effect_us
        )?;
    }
    f.flush()?;
    Ok(())
}

/// `synth` on a coupled scenario: writes every rank's stream (or only one
/// with `--only-rank`, or this MPI rank's with `--mpi`; the simulation is
/// deterministic, so every process computes the same run) and, unless
/// `--no-truth`, both ground truths.
pub fn run(a: &super::SynthOptions, text: &str) -> anyhow::Result<()> {
    let mut sc = CoupledScenario::from_toml(text)?;
    if let Some(v) = a.seed {
        sc.seed = v;
    }
    if let Some(v) = a.ranks {
        sc.ranks = v;
    }
    if let Some(v) = &a.binary {
        sc.binary = v.clone();
    }
    sc.validate()?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let (ranks, mpi): (Vec<u64>, Option<crate::collectives::Collectives>) = if a.mpi {
        let coll = crate::collectives::Collectives::init()?;
        anyhow::ensure!(
            coll.size() as u64 == sc.ranks,
            "the coupled scenario has {} ranks; run it with as many MPI ranks",
            sc.ranks
        );
        (vec![coll.rank() as u64], Some(coll))
    } else if let Some(r) = a.only_rank {
        anyhow::ensure!(
            r < sc.ranks,
            "rank {r} is outside the scenario's {} ranks",
            sc.ranks
        );
        (vec![r], None)
    } else {
        ((0..sc.ranks).collect(), None)
    };
    let run = CoupledRun::new(sc);
    let writes_truth = !a.no_truth
        && ranks
            .first()
            .is_some_and(|&r| r == 0 || a.only_rank.is_none());
    if writes_truth {
        super::write_truth(
            &super::truth_path(&a.out, &run.sc.binary, None),
            &run.truth(),
        )?;
        write_incident_truth(
            &incident_truth_path(&a.out, &run.sc.binary),
            &run.incident_truth(),
        )?;
    }
    if let Some(coll) = &mpi {
        coll.barrier();
    }
    let pace = a
        .pace_ms
        .map(|ms| std::time::Duration::from_secs_f64(ms.max(0.0) / 1e3));
    for &r in &ranks {
        let path = super::stream_path(&a.out, &a.prefix, &run.sc.binary, r);
        let mut w =
            crate::trace::writer::TauStreamWriter::create(&path, a.engine, a.adios_params.clone())
                .with_context(|| format!("creating {}", path.display()))?;
        for step in run.rank_steps(r) {
            w.write_step(&step)?;
            if let Some(coll) = &mpi {
                coll.barrier();
            }
            if let Some(p) = pace {
                std::thread::sleep(p);
            }
        }
        w.close()?;
    }
    if ranks.first() == Some(&0) {
        println!(
            "synth: coupled application {:?}: {} rank(s) x {} iterations in {} steps, {} injection(s); streams {}",
            run.sc.binary,
            run.sc.ranks,
            run.sc.iterations,
            run.steps,
            run.sc.injections.len(),
            super::stream_path(&a.out, &a.prefix, &run.sc.binary, 0).display()
        );
    }
    Ok(())
}
