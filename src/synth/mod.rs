//! `chimbuko-mpi synth`: synthetic TAU-format traces with known anomalies.
//!
//! A scenario (TOML, see `scenarios/`) describes ranks, threads, steps, the
//! call tree with per-function runtime distributions or runtime laws (self
//! time as a function of message size or a counter, [`law`]), messages,
//! counters and injected anomalies. For each rank we write one stream
//! `<out>/<prefix>-<binary>-<rank>.bp` with the real ADIOS2 library, laid out
//! as TAU writes it, plus the ground truth `<out>/truth-<binary>.csv` listing
//! every injected anomalous execution.
//!
//! A scenario with `kind = "coupled"` describes instead an application
//! whose ranks wait for each other ([`coupled`]): the ground truth of
//! incidents. [`ross`] (`synth ross`) writes synthetic ROSS
//! instrumentation files, with their own scenario format and ground truth.

pub mod coupled;
pub mod family;
pub mod generator;
pub mod law;
mod load;
mod local_names;
pub mod rng;
pub mod ross;
pub mod scenario;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::trace::adios::Engine;
use crate::trace::writer::TauStreamWriter;
use crate::util::csv::csv_field;
pub use generator::{RankGenerator, TruthRow};
pub use scenario::{Scenario, DEMO_SCENARIO};

/// What `synth` is asked to write (the flags of the same names).
#[derive(Debug, Clone)]
pub struct SynthOptions {
    /// Scenario file (TOML). Without it, the built-in demo scenario.
    pub scenario: Option<PathBuf>,
    /// Output directory for streams and ground truth.
    pub out: PathBuf,
    /// ADIOS2 engine: BPFile, BP4, BP5 or SST.
    pub engine: Engine,
    /// Stream name prefix (TAU's `TAU_ADIOS2_FILENAME`).
    pub prefix: String,
    /// Write only this rank (e.g. one process per rank).
    pub only_rank: Option<u64>,
    /// Take the rank to write from the MPI launcher's environment
    /// (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID), so that
    /// `mpirun -np N chimbuko-mpi synth --rank-from-env` acts as an N-rank application.
    pub rank_from_env: bool,
    /// Run as an MPI application: each rank of this program's communicator
    /// (split from MPI_COMM_WORLD by MPI_APPNUM, so that it works in an MPMD
    /// launch beside the AD) writes the stream of its rank; the ranks meet
    /// in a barrier on that communicator every step, like an application's
    /// own collectives, and rank 0 writes the ground truth first.
    pub mpi: bool,
    /// Sleep this long between steps (to emulate an application's I/O period).
    pub pace_ms: Option<f64>,
    /// Override the scenario's seed.
    pub seed: Option<u64>,
    /// Override the scenario's rank count.
    pub ranks: Option<u64>,
    /// Override the scenario's step count.
    pub steps: Option<u64>,
    /// One step with more events: `STEP:FACTOR` (e.g. `5:100`).
    pub burst: Option<(u64, u64)>,
    /// Override the scenario's function events per rank per step.
    pub events_per_step: Option<u64>,
    /// Override the binary name used in stream names.
    pub binary: Option<String>,
    /// Do not write the ground truth (used for the per-rank writer
    /// processes of SST runs, whose parent writes it up front).
    pub no_truth: bool,
    /// Extra ADIOS2 engine parameter KEY=VALUE (repeatable).
    pub adios_params: Vec<(String, String)>,
}

/// Loads the scenario named by the arguments and applies overrides.
pub fn load_scenario(a: &SynthOptions) -> anyhow::Result<Scenario> {
    let text = match &a.scenario {
        Some(p) => std::fs::read_to_string(p)
            .with_context(|| format!("reading scenario {}", p.display()))?,
        None => DEMO_SCENARIO.to_owned(),
    };
    let name = a
        .scenario
        .as_ref()
        .map_or("built-in demo".into(), |p| p.display().to_string());
    let mut sc = Scenario::from_toml(&text).with_context(|| format!("scenario {name}"))?;
    if let Some(v) = a.seed {
        sc.seed = v;
    }
    if let Some(v) = a.ranks {
        sc.ranks = v;
    }
    if let Some(v) = a.steps {
        sc.steps = v;
    }
    if let Some(v) = a.events_per_step {
        sc.events_per_step = v;
    }
    if let Some((step, factor)) = a.burst {
        sc.bursts.push(scenario::BurstSpec { step, factor });
    }
    if let Some(v) = &a.binary {
        sc.binary = v.clone();
    }
    sc.validate()
        .with_context(|| format!("scenario {name} with overrides"))?;
    Ok(sc)
}

/// Path of rank `rank`'s stream.
pub fn stream_path(out: &Path, prefix: &str, binary: &str, rank: u64) -> PathBuf {
    out.join(format!("{prefix}-{binary}-{rank}.bp"))
}

/// Path of the ground truth (all ranks, or one rank's fragment).
pub fn truth_path(out: &Path, binary: &str, rank: Option<u64>) -> PathBuf {
    match rank {
        None => out.join(format!("truth-{binary}.csv")),
        Some(r) => out.join(format!("truth-{binary}-{r}.csv")),
    }
}

/// What writing one rank produced.
#[derive(Debug, Clone, Default)]
pub struct RankReport {
    /// Steps written.
    pub steps: u64,
    /// Function rows (ENTRY/EXIT) written.
    pub func_rows: u64,
    /// Comm rows written.
    pub comm_rows: u64,
    /// Counter rows written.
    pub counter_rows: u64,
    /// The anomalies injected into this rank.
    pub truth: Vec<TruthRow>,
}

/// Generates and writes rank `rank` of `sc` to `path`.
pub fn write_rank(
    sc: &Scenario,
    rank: u64,
    path: &Path,
    engine: Engine,
    params: Vec<(String, String)>,
    pace: Option<Duration>,
) -> anyhow::Result<RankReport> {
    let target = StreamTarget {
        path,
        engine,
        params,
        pace,
    };
    write_rank_with(sc, rank, target, &mut || {})
}

/// Where and how one rank's stream is written.
pub struct StreamTarget<'a> {
    /// The stream's path.
    pub path: &'a Path,
    /// The ADIOS2 engine writing it.
    pub engine: Engine,
    /// The engine's parameters.
    pub params: Vec<(String, String)>,
    /// A pause after every step (a live application's pace), if any.
    pub pace: Option<Duration>,
}

/// [`write_rank`] to `target`, calling `after_step` after every step
/// written.
pub fn write_rank_with(
    sc: &Scenario,
    rank: u64,
    target: StreamTarget<'_>,
    after_step: &mut dyn FnMut(),
) -> anyhow::Result<RankReport> {
    let StreamTarget {
        path,
        engine,
        params,
        pace,
    } = target;
    let mut writer = TauStreamWriter::create(path, engine, params)?;
    let mut generator = RankGenerator::new(sc, rank);
    let mut report = RankReport::default();
    while let Some(step) = generator.next_step() {
        report.steps += 1;
        report.func_rows += step.funcs.len() as u64;
        report.comm_rows += step.comms.len() as u64;
        report.counter_rows += step.counters.len() as u64;
        writer.write_step(&step)?;
        after_step();
        if let Some(p) = pace {
            std::thread::sleep(p);
        }
    }
    writer.close()?;
    report.truth = std::mem::take(&mut generator.truth);
    Ok(report)
}

/// Generates rank `rank` without writing anything (tests compare what the
/// reader returns with this).
pub fn generate_rank(
    sc: &Scenario,
    rank: u64,
) -> (Vec<crate::trace::writer::StepData>, Vec<TruthRow>) {
    let mut generator = RankGenerator::new(sc, rank);
    let mut steps = Vec::new();
    while let Some(s) = generator.next_step() {
        steps.push(s);
    }
    (steps, generator.truth)
}

const TRUTH_HEADER: &str = "rank,thread,step,function,entry_us,exit_us,inclusive_us,exclusive_us";

/// Writes ground-truth rows as CSV.
pub fn write_truth(path: &Path, rows: &[TruthRow]) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(f, "{TRUTH_HEADER}")?;
    for r in rows {
        writeln!(
            f,
            "{},{},{},{},{},{},{},{}",
            r.rank,
            r.thread,
            r.step,
            csv_field(&r.function),
            r.entry_us,
            r.exit_us,
            r.exit_us - r.entry_us,
            r.exclusive_us
        )?;
    }
    f.flush()?;
    Ok(())
}

/// `synth --mpi`: one stream per rank of this program's communicator.
fn run_mpi(a: &SynthOptions, mut sc: Scenario) -> anyhow::Result<()> {
    let coll = crate::collectives::Collectives::init()?;
    let (rank, size) = (coll.rank() as u64, coll.size() as u64);
    sc.ranks = size;
    let mut result = Ok(());
    if rank == 0 {
        result = std::fs::create_dir_all(&a.out)
            .with_context(|| format!("creating {}", a.out.display()))
            .and_then(|_| {
                let truth: Vec<TruthRow> =
                    (0..size).flat_map(|r| generate_rank(&sc, r).1).collect();
                write_truth(&truth_path(&a.out, &sc.binary, None), &truth)
            });
    }
    let failed = coll.allreduce_sum(&[result.is_err() as u64])[0];
    result?;
    if failed > 0 {
        bail!("synth rank 0 could not write the ground truth");
    }
    let pace = a
        .pace_ms
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1e3));
    let path = stream_path(&a.out, &a.prefix, &sc.binary, rank);
    let target = StreamTarget {
        path: &path,
        engine: a.engine,
        params: a.adios_params.clone(),
        pace,
    };
    let rep = write_rank_with(&sc, rank, target, &mut || coll.barrier())
        .with_context(|| format!("writing rank {rank} to {}", path.display()))?;
    if rank == 0 {
        println!(
            "synth: MPI application of {size} rank(s) (MPI_APPNUM {:?}, world of {}), {} steps each, engine {}",
            coll.appnum(),
            coll.world_size(),
            rep.steps,
            a.engine
        );
    }
    Ok(())
}

/// `chimbuko-mpi synth`: writes the streams and the ground truth.
pub fn run(a: SynthOptions) -> anyhow::Result<()> {
    if let Some(p) = &a.scenario {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("reading scenario {}", p.display()))?;
        if coupled::CoupledScenario::is_coupled(&text) {
            return coupled::run(&a, &text).with_context(|| format!("scenario {}", p.display()));
        }
    }
    let sc = load_scenario(&a)?;
    if a.mpi {
        return run_mpi(&a, sc);
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let only = match (a.only_rank, a.rank_from_env) {
        (Some(r), _) => Some(r),
        (None, true) => Some(crate::util::launcher::rank_from_env().context(
            "--rank-from-env: none of OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID is set",
        )?),
        (None, false) => None,
    };
    if let Some(r) = only {
        if r >= sc.ranks {
            bail!("rank {r} is outside the scenario's {} ranks", sc.ranks);
        }
    }
    let pace = a
        .pace_ms
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1e3));
    let start = Instant::now();
    let ranks: Vec<u64> = match only {
        Some(r) => vec![r],
        None => (0..sc.ranks).collect(),
    };
    // SST writers block until their reader connects, so each rank must be
    // its own process; re-run ourselves once per rank.
    if a.engine == Engine::SST && only.is_none() && sc.ranks > 1 {
        return spawn_rank_processes(&a, &sc);
    }
    let mut total = RankReport::default();
    for &r in &ranks {
        let path = stream_path(&a.out, &a.prefix, &sc.binary, r);
        let rep = write_rank(&sc, r, &path, a.engine, a.adios_params.clone(), pace)
            .with_context(|| format!("writing rank {r} to {}", path.display()))?;
        total.steps = total.steps.max(rep.steps);
        total.func_rows += rep.func_rows;
        total.comm_rows += rep.comm_rows;
        total.counter_rows += rep.counter_rows;
        total.truth.extend(rep.truth);
    }
    let truth = truth_path(&a.out, &sc.binary, only);
    if !a.no_truth {
        write_truth(&truth, &total.truth)?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "synth: {} rank(s) x {} steps, engine {}: {} function / {} comm / {} counter rows, {} injected anomalies; {:.2} s ({:.1} M function rows/s)",
        ranks.len(),
        total.steps,
        a.engine,
        total.func_rows,
        total.comm_rows,
        total.counter_rows,
        total.truth.len(),
        secs,
        total.func_rows as f64 / secs.max(1e-9) / 1e6
    );
    println!(
        "synth: streams {}, ground truth {}",
        stream_path(&a.out, &a.prefix, &sc.binary, ranks[0]).display(),
        truth.display()
    );
    Ok(())
}

/// Runs one `synth --only-rank r` process per rank. The ground truth is
/// written first, from a dry run of the (deterministic) generator, so that
/// it exists before any reader reaches the end of the streams.
fn spawn_rank_processes(a: &SynthOptions, sc: &Scenario) -> anyhow::Result<()> {
    let truth: Vec<TruthRow> = (0..sc.ranks).flat_map(|r| generate_rank(sc, r).1).collect();
    write_truth(&truth_path(&a.out, &sc.binary, None), &truth)?;
    let exe = std::env::current_exe().context("locating our own executable")?;
    let mut children = Vec::new();
    for r in 0..sc.ranks {
        let mut cmd = Command::new(&exe);
        cmd.arg("synth");
        if let Some(p) = &a.scenario {
            cmd.arg(p);
        }
        cmd.arg("--out").arg(&a.out);
        cmd.args(["--engine", a.engine.adios_name(), "--prefix", &a.prefix]);
        cmd.args(["--only-rank", &r.to_string(), "--no-truth"]);
        cmd.args([
            "--seed",
            &sc.seed.to_string(),
            "--ranks",
            &sc.ranks.to_string(),
        ]);
        cmd.args(["--steps", &sc.steps.to_string()]);
        cmd.args([
            "--events-per-step",
            &sc.events_per_step.to_string(),
            "--binary",
            &sc.binary,
        ]);
        if let Some(p) = a.pace_ms {
            cmd.args(["--pace-ms", &p.to_string()]);
        }
        if let Some((step, factor)) = a.burst {
            cmd.args(["--burst", &format!("{step}:{factor}")]);
        }
        for (k, v) in &a.adios_params {
            cmd.arg("--adios-param").arg(format!("{k}={v}"));
        }
        children.push((
            r,
            cmd.spawn()
                .with_context(|| format!("starting writer for rank {r}"))?,
        ));
    }
    let mut failed = Vec::new();
    for (r, mut c) in children {
        if !c.wait().map(|s| s.success()).unwrap_or(false) {
            failed.push(r);
        }
    }
    if !failed.is_empty() {
        bail!("writer process(es) for rank(s) {failed:?} failed");
    }
    Ok(())
}
