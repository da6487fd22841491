//! `chimbuko-mpi run`: the bulk-synchronous analysis.
//!
//! Every AD rank owns a contiguous block of the application's streams and all
//! ranks walk the steps in lockstep (see `docs/` and the architecture doc):
//! read → agree on names → build executions → partial model → reduce →
//! label → collect → status. There is no parameter server: the global model
//! after step *t* is the exact sum of every rank's partial models up to *t*,
//! identical on every rank.

pub mod config;
pub mod names;
pub mod report;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::collectives::Collectives;
use crate::detect::copod::{Copod, CopodParams};
use crate::detect::hbos::{Hbos, HbosParams};
use crate::detect::modal::{Modal, ModalParams};
use crate::detect::sstd::{Sstd, SstdParams};
use crate::detect::{Detector, Label};
use crate::events::{EventIssues, EventOptions, Execution, IndexMap, StepEvents, StreamEvents};
use crate::trace::adios::{Engine, ReadOptions};
use crate::trace::tau::{NextStep, TauReaderOptions, TauStep, TauStreamReader};
use config::{FunctionRules, StreamSpec};
use names::GlobalNames;
use report::{FunctionTotals, LabelWriter, Phase, RunSummary, Timings, TruthSet};

/// Detectors available to `--algorithm` (see `docs/algorithms.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Algorithm {
    /// Mean ± σ·stddev of the runtime (Chimbuko's SSTD).
    Sstd,
    /// Histogram-based outlier score (Chimbuko's HBOS).
    Hbos,
    /// Copula-based outlier detection (Chimbuko's COPOD).
    Copod,
    /// Robust distance to the nearest normal runtime mode.
    Modal,
}

/// Command-line options of `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Stream path pattern with `{rank}`, e.g. `dir/tau-metrics-app-{rank}.bp`.
    /// Repeat for workflows with several programs (one per binary).
    #[arg(long = "input", required = true)]
    pub inputs: Vec<String>,
    /// Number of application ranks (streams) per input; one value for all
    /// inputs or one per input. Default for file engines: count the files.
    #[arg(long = "app-ranks")]
    pub app_ranks: Vec<u64>,
    /// Program index of each input (default: 0, 1, ... in input order).
    #[arg(long = "program-idx")]
    pub program_idx: Vec<u32>,
    /// ADIOS2 engine: BPFile, BP4, BP5 or SST.
    #[arg(long, default_value = "BPFile")]
    pub engine: Engine,
    /// Anomaly detector.
    #[arg(long, value_enum, default_value = "modal")]
    pub algorithm: Algorithm,
    /// SSTD: anomalies lie outside mean ± sigma·stddev.
    #[arg(long, default_value_t = 6.0)]
    pub sigma: f64,
    /// HBOS and COPOD: score threshold as a fraction of the score range
    /// (Chimbuko's hbos_thres).
    #[arg(long, default_value_t = 0.99)]
    pub hbos_threshold: f64,
    /// HBOS: bins of the labelling histogram.
    #[arg(long, default_value_t = 200)]
    pub hbos_max_bins: usize,
    /// modal: anomalies lie more than this many robust scales from every
    /// normal runtime mode.
    #[arg(long, default_value_t = 6.0)]
    pub modal_threshold: f64,
    /// modal: share of a function's executions a runtime mode needs to be
    /// normal behaviour.
    #[arg(long, default_value_t = 0.05)]
    pub modal_min_share: f64,
    /// modal: smallest scale of a mode, in ln(1 + µs) (0.025: with threshold
    /// 6, runtimes within about -14 %/+16 % of a mode are never anomalies).
    #[arg(long, default_value_t = 0.025)]
    pub modal_min_spread: f64,
    /// A function is labelled only once the global model holds this many of its executions.
    #[arg(long, default_value_t = 2)]
    pub min_count: u64,
    /// Judge inclusive instead of exclusive runtimes.
    #[arg(long)]
    pub use_inclusive: bool,
    /// Functions whose name matches this regular expression are never flagged.
    #[arg(long)]
    pub ignore_regex: Option<String>,
    /// File with function names (one per line, `#` comments) never flagged.
    #[arg(long)]
    pub ignore_file: Option<PathBuf>,
    /// File of per-function thresholds: lines `<value> <function name>`
    /// (sstd: sigma; hbos, copod: threshold; modal: robust distance).
    #[arg(long)]
    pub threshold_file: Option<PathBuf>,
    /// Write every execution's label to `<dir>/labels-<ad rank>.csv` (large).
    #[arg(long)]
    pub labels_out: Option<PathBuf>,
    /// Write the final global model (JSON) here (rank 0).
    #[arg(long)]
    pub model_out: Option<PathBuf>,
    /// Write the run summary (JSON) here (rank 0).
    #[arg(long)]
    pub summary_out: Option<PathBuf>,
    /// Ground-truth CSV(s) from `synth`, one per input: report precision/recall.
    #[arg(long = "truth")]
    pub truth: Vec<PathBuf>,
    /// Seconds to wait for each stream to appear.
    #[arg(long, default_value_t = 60.0)]
    pub open_timeout: f64,
    /// Seconds without a new step before a stream is declared stalled (ended).
    #[arg(long, default_value_t = 300.0)]
    pub step_timeout: f64,
    /// Stop after this many steps.
    #[arg(long)]
    pub max_steps: Option<u64>,
    /// Executions held back for lack of data, per rank, before they are
    /// emitted as unlabeled.
    #[arg(long, default_value_t = 100_000)]
    pub max_pending: usize,
    /// Rank 0 prints progress every this many steps (0: never).
    #[arg(long, default_value_t = 1)]
    pub progress_every: u64,
    /// Rows of the summary's top-functions table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Keep in-situ labels as final: do not re-judge anomalies against the
    /// final model at the end of the run.
    #[arg(long = "no-final-relabel", action = clap::ArgAction::SetFalse)]
    pub final_relabel: bool,
    /// Anomalies kept per rank for the end-of-run re-judgement; beyond this
    /// they are final as labelled in situ.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_stored_anomalies: usize,
    /// Less output (no per-step progress, no reader warnings).
    #[arg(long)]
    pub quiet: bool,
}

/// One stream owned by this rank.
struct OwnedStream {
    spec: StreamSpec,
    reader: Option<TauStreamReader>,
    events: StreamEvents,
    map: IndexMap,
    /// This step's executions (buffers reused from step to step).
    out: StepEvents,
    done: bool,
    idle: Duration,
}

/// Index of the status vector shared every step.
mod status {
    pub const EXECUTIONS: usize = 0;
    pub const ANOMALIES: usize = 1;
    pub const ACTIVE_STREAMS: usize = 2;
    pub const FAILED: usize = 3;
    pub const ROWS: usize = 4;
    pub const LEN: usize = 5;
}

/// Entry point of `chimbuko-mpi run`.
pub fn run_cli(args: RunArgs) -> anyhow::Result<()> {
    let coll = Collectives::init()?;
    let result = run(&coll, &args);
    if let Err(e) = &result {
        // One write per rank, so that mpirun does not interleave the lines of
        // different ranks' messages.
        let msg = format!("chimbuko-mpi: AD rank {}: error: {e:#}\n", coll.rank());
        let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
        return Err(anyhow::Error::new(AlreadyReported));
    }
    result
}

/// An error whose message has already been printed (by the rank it
/// concerns); `main` only sets the exit status.
#[derive(Debug)]
pub struct AlreadyReported;

impl std::fmt::Display for AlreadyReported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("error already reported")
    }
}

impl std::error::Error for AlreadyReported {}

/// The analysis, on an initialized communicator.
pub fn run(coll: &Collectives, args: &RunArgs) -> anyhow::Result<()> {
    let (rank, size) = (coll.rank(), coll.size());
    let start = Instant::now();
    // Configuration errors are the same on every rank: fail before any step.
    let all_specs = config::expand_inputs(args)?;
    let rules = FunctionRules::load(args)?;
    let mine = config::block_of(&all_specs, rank, size);
    if rank == 0 && !args.quiet {
        eprintln!(
            "run: {} stream(s) on {size} AD rank(s), engine {}, algorithm {:?}",
            all_specs.len(),
            args.engine,
            args.algorithm
        );
        if all_specs.len() < size {
            eprintln!(
                "run: warning: more AD ranks than streams; {} rank(s) idle",
                size - all_specs.len()
            );
        }
    }
    let mut streams: Vec<OwnedStream> = mine
        .into_iter()
        .map(|spec| OwnedStream {
            events: StreamEvents::new(
                spec.program,
                spec.app_rank,
                spec.path.display().to_string(),
                EventOptions::default(),
            ),
            spec,
            reader: None,
            map: IndexMap::default(),
            out: StepEvents::default(),
            done: false,
            idle: Duration::ZERO,
        })
        .collect();

    let mut names = GlobalNames::default();
    let mut detector = make_detector(args)?;
    let mut ignored: Vec<bool> = Vec::new();
    let mut sink = report::Sink {
        totals: FunctionTotals::default(),
        truth: TruthSet::load(&args.truth, &all_specs)?,
        labels: match &args.labels_out {
            Some(dir) => Some(LabelWriter::create(dir, rank)?),
            None => None,
        },
    };
    let mut stored: Vec<(u64, u64, crate::detect::Verdict, Execution)> = Vec::new();
    let mut timings = Timings::default();
    let mut pending: Vec<(u64, Execution)> = Vec::new();
    let mut failure: Option<String> = None;
    let mut issues_total = EventIssues::default();
    let mut global_rows = 0u64;
    let mut global_executions = 0u64;
    let mut global_anomalies = 0u64;
    let mut steps_done = 0u64;

    // Open streams (errors are reported through the first status exchange).
    for s in &mut streams {
        match open_stream(s, args) {
            Ok(r) => s.reader = Some(r),
            Err(e) => {
                failure.get_or_insert(format!("{e:#}"));
                s.done = true;
            }
        }
    }

    let mut step = 0u64;
    loop {
        if args.max_steps.is_some_and(|m| step >= m) {
            break;
        }
        // 1 read
        let t = Instant::now();
        let mut tau_steps: Vec<(usize, TauStep)> = Vec::new();
        let mut rows = 0u64;
        for (i, s) in streams.iter_mut().enumerate() {
            if s.done || failure.is_some() {
                continue;
            }
            match read_step(s, args) {
                Ok(Some(st)) => {
                    rows += (st.funcs.len() + st.comms.len() + st.counters.len()) as u64;
                    tau_steps.push((i, st));
                }
                Ok(None) => s.done = true,
                Err(e) => {
                    failure.get_or_insert(format!("{e:#}"));
                    s.done = true;
                }
            }
        }
        timings.add(Phase::Read, t.elapsed());

        // 2 agree on names first seen this step
        let t = Instant::now();
        let mut unknown = Vec::new();
        for (i, st) in &tau_steps {
            names.unknown_names(streams[*i].spec.program, &st.new_attributes, &mut unknown);
        }
        unknown.sort();
        unknown.dedup();
        let agreed = coll.agree_names(&unknown);
        let new_functions = names.extend(agreed);
        for f in new_functions {
            let (program, name) = &names.functions.keys[f as usize];
            if ignored.len() <= f as usize {
                ignored.resize(f as usize + 1, false);
            }
            ignored[f as usize] = rules.is_ignored(name);
            if let Some(th) = rules.threshold(name) {
                detector.set_function_threshold(f, th);
            }
            let _ = program;
        }
        detector.ensure_functions(names.functions.len());
        sink.totals.ensure(names.functions.len());
        for (i, st) in &tau_steps {
            let s = &mut streams[*i];
            names.update_map(s.spec.program, &st.new_attributes, &mut s.map);
        }
        timings.add(Phase::Agree, t.elapsed());

        // 3 build executions (row buffers go back to their reader at once)
        let t = Instant::now();
        for s in &mut streams {
            s.out.clear();
        }
        for (i, st) in tau_steps {
            let s = &mut streams[i];
            s.events.process_step_into(step, &st, &s.map, &mut s.out);
            if s.out.issues.has_problems() && !args.quiet {
                eprintln!("warning: {}", s.out.issues.summary(&s.events_name(), step));
            }
            issues_total.merge(&s.out.issues);
            if let Some(r) = s.reader.as_mut() {
                r.recycle(st);
            }
        }
        timings.add(Phase::Build, t.elapsed());

        // 4 summarize: this step's partial model
        let t = Instant::now();
        let use_inclusive = args.use_inclusive;
        let value = |e: &Execution| {
            if use_inclusive {
                e.inclusive
            } else {
                e.exclusive
            }
        };
        for e in streams.iter().flat_map(|s| s.out.executions.iter()) {
            if !is_ignored(&ignored, e.function) {
                detector.observe(e.function, value(e));
            }
        }
        let partial = detector.take_partial();
        timings.add(Phase::Summarize, t.elapsed());

        // 5 reduce: global model = previous + all ranks' partials
        let t = Instant::now();
        crate::detect::reduce_step(detector.as_mut(), partial, |w| coll.reduce_wire(w));
        timings.add(Phase::Reduce, t.elapsed());

        // 6 label (held executions first, in their original order)
        let t = Instant::now();
        let mut step_anomalies = 0u64;
        let mut step_labelled = 0u64;
        let held = std::mem::take(&mut pending);
        let judge = |e: &Execution| {
            if is_ignored(&ignored, e.function) {
                crate::detect::Verdict {
                    label: Label::Normal,
                    score: 0.0,
                }
            } else {
                detector.label(e.function, value(e))
            }
        };
        for (done_step, e) in held {
            let verdict = judge(&e);
            if verdict.label == Label::Unlabeled && pending.len() < args.max_pending {
                pending.push((done_step, e));
                continue;
            }
            step_labelled += 1;
            if verdict.label == Label::Anomaly {
                step_anomalies += 1;
                if args.final_relabel && stored.len() < args.max_stored_anomalies {
                    stored.push((done_step, step, verdict, e));
                    continue;
                }
            }
            sink.emit(&e, done_step, step, verdict.label, verdict, &names)?;
        }
        for e in streams.iter().flat_map(|s| s.out.executions.iter()) {
            let verdict = judge(e);
            if verdict.label == Label::Unlabeled && pending.len() < args.max_pending {
                pending.push((step, *e));
                continue;
            }
            step_labelled += 1;
            if verdict.label == Label::Anomaly {
                step_anomalies += 1;
                // Kept until the end, to be re-judged against the final model.
                if args.final_relabel && stored.len() < args.max_stored_anomalies {
                    stored.push((step, step, verdict, *e));
                    continue;
                }
            }
            sink.emit(e, step, step, verdict.label, verdict, &names)?;
        }
        timings.add(Phase::Label, t.elapsed());

        // 10 status: who still has data, who failed, progress numbers
        let t = Instant::now();
        let mut st = [0u64; status::LEN];
        st[status::EXECUTIONS] = step_labelled;
        st[status::ANOMALIES] = step_anomalies;
        st[status::ACTIVE_STREAMS] = streams.iter().filter(|s| !s.done).count() as u64;
        st[status::FAILED] = failure.is_some() as u64;
        st[status::ROWS] = rows;
        let g = coll.allreduce_sum(&st);
        timings.add(Phase::Status, t.elapsed());
        if g[status::FAILED] > 0 {
            return Err(collective_failure(coll, failure.as_deref()));
        }
        global_rows += g[status::ROWS];
        global_executions += g[status::EXECUTIONS];
        global_anomalies += g[status::ANOMALIES];
        if g[status::ROWS] > 0 {
            steps_done = step + 1;
        }
        if rank == 0
            && !args.quiet
            && args.progress_every > 0
            && step % args.progress_every == 0
            && g[status::ROWS] > 0
        {
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            println!(
                "step {step}: {} rows, {} executions, {} anomalies (total {global_anomalies}); {:.2} M rows/s overall",
                g[status::ROWS],
                g[status::EXECUTIONS],
                g[status::ANOMALIES],
                global_rows as f64 / secs / 1e6
            );
        }
        if g[status::ACTIVE_STREAMS] == 0 {
            break;
        }
        step += 1;
    }

    // End of run: what is still held is labelled against the final model,
    // and in-situ anomalies are re-judged against it (as the reference does
    // before its final write): early steps have thin models, so some calls
    // flagged then are ordinary once the whole run is known.
    let value = |e: &Execution| {
        if args.use_inclusive {
            e.inclusive
        } else {
            e.exclusive
        }
    };
    for (done_step, e) in std::mem::take(&mut pending) {
        let verdict = detector.label(e.function, value(&e));
        sink.emit(&e, done_step, steps_done, verdict.label, verdict, &names)?;
    }
    let mut pruned = 0u64;
    for (done_step, labelled_step, in_situ, e) in std::mem::take(&mut stored) {
        let fin = detector.label(e.function, value(&e));
        if fin.label != Label::Anomaly {
            pruned += 1;
        }
        sink.emit(&e, done_step, labelled_step, in_situ.label, fin, &names)?;
    }
    let mut open_calls = 0u64;
    for s in &mut streams {
        open_calls += s.events.open_calls() as u64;
        let fin = s.events.finish();
        issues_total.merge(&fin);
    }
    if let Some(w) = sink.labels.take() {
        w.finish()?;
    }

    // Final reductions: per-function totals, truth, timings, model identity.
    let global_totals = sink.totals.reduce(coll);
    let truth_counts = sink.truth.as_ref().map(|t| t.reduce(coll)).transpose()?;
    let pruned = coll.allreduce_sum(&[pruned])[0];
    let digest = detector.digest();
    let dmin = coll.allreduce_min(&[digest])[0];
    let dmax = coll.allreduce_max(&[digest])[0];
    if dmin != dmax {
        bail!(
            "internal error: global models differ across AD ranks (digests {dmin:x} vs {dmax:x})"
        );
    }
    let open_total = coll.allreduce_sum(&[open_calls, issues_total.total()]);
    let phase_max = timings.reduce_max(coll);
    let peak_rss_kb = coll.allreduce_max(&[crate::tuning::peak_rss_kb()])[0];
    if rank == 0 {
        let summary = RunSummary {
            ad_ranks: size,
            streams: all_specs.len(),
            steps: steps_done,
            rows: global_rows,
            executions: global_executions,
            anomalies_in_situ: global_anomalies,
            anomalies: global_totals.anomalies.iter().sum(),
            anomalies_pruned_at_end: pruned,
            open_calls_at_end: open_total[0],
            event_issues: open_total[1],
            seconds: start.elapsed().as_secs_f64(),
            model_digest: format!("{digest:016x}"),
            peak_rss_mb: peak_rss_kb as f64 / 1024.0,
            timings: phase_max,
            truth: truth_counts,
        };
        report::print_summary(
            &summary,
            &global_totals,
            &names,
            detector.as_ref(),
            args.top,
        );
        if let Some(p) = &args.model_out {
            report::write_model(p, &names, detector.as_ref(), &global_totals)?;
        }
        if let Some(p) = &args.summary_out {
            report::write_summary(p, &summary, &global_totals, &names, detector.as_ref())?;
        }
    }
    Ok(())
}

/// The detector chosen by `--algorithm`, with its flags checked (the same
/// answer on every rank, so a bad flag stops all ranks before any step).
fn make_detector(args: &RunArgs) -> anyhow::Result<Box<dyn Detector>> {
    let finite_positive = |v: f64, flag: &str| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(anyhow::anyhow!(
                "--{flag} must be a positive number, got {v}"
            ))
        }
    };
    let share = |v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(v)
        } else {
            Err(anyhow::anyhow!(
                "--modal-min-share must lie in [0, 1], got {v}"
            ))
        }
    };
    Ok(match args.algorithm {
        Algorithm::Sstd => Box::new(Sstd::new(SstdParams {
            sigma: args.sigma,
            min_count: args.min_count,
        })),
        Algorithm::Hbos => {
            if args.hbos_max_bins == 0 {
                bail!("--hbos-max-bins must be at least 1");
            }
            Box::new(Hbos::with_params(
                HbosParams {
                    threshold: args.hbos_threshold,
                    max_bins: args.hbos_max_bins,
                },
                args.min_count,
            ))
        }
        Algorithm::Copod => Box::new(Copod::with_params(
            CopodParams {
                threshold: args.hbos_threshold,
            },
            args.min_count,
        )),
        Algorithm::Modal => Box::new(Modal::with_params(
            ModalParams {
                threshold: finite_positive(args.modal_threshold, "modal-threshold")?,
                min_share: share(args.modal_min_share)?,
                min_spread: finite_positive(args.modal_min_spread, "modal-min-spread")?,
            },
            args.min_count,
        )),
    })
}

fn is_ignored(ignored: &[bool], f: u32) -> bool {
    ignored.get(f as usize).copied().unwrap_or(false)
}

impl OwnedStream {
    fn events_name(&self) -> String {
        self.spec.path.display().to_string()
    }
}

fn open_stream(s: &OwnedStream, args: &RunArgs) -> anyhow::Result<TauStreamReader> {
    let opts = TauReaderOptions {
        engine: args.engine,
        program_idx: s.spec.program as u64,
        expected_rank: Some(s.spec.app_rank),
        adios: ReadOptions {
            open_timeout: Duration::from_secs_f64(args.open_timeout.max(0.0)),
            ..Default::default()
        },
        report_issues: !args.quiet,
    };
    TauStreamReader::open(&s.spec.path, opts)
        .with_context(|| format!("opening stream of app rank {}", s.spec.app_rank))
}

/// The next step of a stream; `None` at its end (or when it stalls).
fn read_step(s: &mut OwnedStream, args: &RunArgs) -> anyhow::Result<Option<TauStep>> {
    let Some(reader) = s.reader.as_mut() else {
        return Ok(None);
    };
    let poll = Duration::from_millis(100);
    let limit = Duration::from_secs_f64(args.step_timeout.max(0.1));
    loop {
        match reader.next_step(poll)? {
            NextStep::Step(st) => {
                s.idle = Duration::ZERO;
                return Ok(Some(*st));
            }
            NextStep::EndOfStream => return Ok(None),
            NextStep::NotReady => {
                s.idle += poll;
                if s.idle >= limit {
                    eprintln!(
                        "warning: {}: no new step for {:.0} s; treating the stream as ended",
                        reader.stream(),
                        s.idle.as_secs_f64()
                    );
                    return Ok(None);
                }
            }
        }
    }
}

/// Every rank learns every failing rank's message, then all return an error.
fn collective_failure(coll: &Collectives, mine: Option<&str>) -> anyhow::Error {
    let msgs = coll.allgather_bytes(mine.unwrap_or("").as_bytes());
    let text: Vec<String> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(r, m)| format!("AD rank {r}: {}", String::from_utf8_lossy(m)))
        .collect();
    anyhow::anyhow!(
        "analysis stopped because AD rank(s) failed:\n  {}",
        text.join("\n  ")
    )
}
