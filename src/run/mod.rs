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
pub mod settings;
pub mod signals;
pub mod streams;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::collectives::Collectives;
use crate::detect::copod::{Copod, CopodParams};
use crate::detect::hbos::{Hbos, HbosParams};
use crate::detect::modal::{Modal, ModalParams};
use crate::detect::sstd::{Sstd, SstdParams};
use crate::detect::Verdict;
use crate::detect::{Detector, Label};
use crate::events::{EventIssues, Execution};
use crate::output::collect::{ProvenanceOptions, StepContext};
use crate::output::hdf5file::AttrValue;
use crate::output::records::{PerfRow, StepRow};
use crate::output::stats::GlobalStats;
use crate::output::viz::{StreamStep, StreamStepBuilder, VizStream};
use crate::output::ProvenanceWriter;
use crate::trace::adios::Engine;
use crate::trace::tau::TauStep;
use config::{FunctionRules, StreamSpec};
use names::GlobalNames;
use report::{FunctionTotals, LabelWriter, Phase, RunSummary, Timings, TruthSet};
use streams::OwnedStream;

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
    /// Stream path pattern with `{rank}` (the application rank) and
    /// optionally `{binary}`, e.g. `dir/tau-metrics-app-{rank}.bp`. Repeat
    /// for workflows with several programs (one per binary). Default: TAU's
    /// naming, `<trace-dir>/<prefix>-{binary}-{rank}.bp`, one per --binary.
    #[arg(long = "input")]
    pub inputs: Vec<String>,
    /// Application binary name(s), one per program of the workflow: fills
    /// `{binary}` in --input, or TAU's default stream names without --input.
    #[arg(long = "binary")]
    pub binaries: Vec<String>,
    /// Directory of the streams when --input is not given.
    #[arg(long, default_value = ".")]
    pub trace_dir: PathBuf,
    /// Stream name prefix (TAU_ADIOS2_FILENAME) when --input is not given.
    #[arg(long, default_value = "tau-metrics")]
    pub prefix: String,
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
    /// Re-judge the run's anomalies (and normal samples) against the final
    /// model at the end, as the reference's post-pruning does; both labels
    /// are kept. `--final-relabel false` keeps the in-situ labels as final.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub final_relabel: bool,
    /// Same as `--final-relabel false`.
    #[arg(long)]
    pub no_final_relabel: bool,
    /// Anomalies kept per rank for the end-of-run re-judgement; beyond this
    /// they are final as labelled in situ.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_stored_anomalies: usize,
    /// Less output (no per-step progress, no reader warnings).
    #[arg(long)]
    pub quiet: bool,
    /// Provenance file (HDF5) written collectively by all AD ranks. Default:
    /// `chimbuko-<binary>-<start time>.h5` in the working directory.
    #[arg(long = "out")]
    pub out: Option<PathBuf>,
    /// Do not write a provenance file (analysis and reports only).
    #[arg(long, conflicts_with = "out")]
    pub no_provenance: bool,
    /// Replace an existing provenance file.
    #[arg(long)]
    pub overwrite: bool,
    /// Append buffered provenance to the file every this many steps (and at
    /// the end); a run killed in between keeps every flushed step.
    #[arg(long, default_value_t = 10)]
    pub flush_steps: u64,
    /// Executions on each side of a recorded execution in its window.
    #[arg(long, default_value_t = 5)]
    pub window: usize,
    /// Normal executions recorded per function with anomalies, per
    /// application rank and step (0: none).
    #[arg(long, default_value_t = 1)]
    pub normal_samples: usize,
    /// Anomalies shorter than this exclusive runtime (µs) are not recorded.
    #[arg(long, default_value_t = 0)]
    pub min_anomaly_us: u64,
    /// Live statistics (Chimbuko's visualisation stream) as JSON lines:
    /// a file, or `-` for stdout (AD rank 0).
    #[arg(long)]
    pub stats_out: Option<String>,
    /// POST each live statistics packet to this http:// URL (Chimbuko's
    /// visualisation server, or any collector); failures are reported once
    /// and never stop the analysis.
    #[arg(long)]
    pub viz_url: Option<String>,
    /// Steps between live statistics packets.
    #[arg(long, default_value_t = 1)]
    pub stats_every: u64,
    /// Read each stream's next step while the current one is analysed.
    /// Pays off when the AD rank has cores to spare for its streams'
    /// threads (not on a 2-core machine); holds one more step of rows per
    /// stream in memory.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub prefetch: bool,
    /// After SIGTERM/SIGINT the AD ranks stop together at the end of the
    /// step and write what they have; a rank that cannot finish within
    /// this many seconds (a peer is gone) exits anyway.
    #[arg(long, default_value_t = 30.0)]
    pub stop_grace: f64,
    /// TOML file of settings (keys: flag names). Every flag can also be set
    /// in the environment as CHIMBUKO_<FLAG> (e.g. CHIMBUKO_FLUSH_STEPS=5);
    /// a flag beats the environment, which beats the file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The effective settings and where each came from (filled in before
    /// the run; printed at start and stored in the provenance file).
    #[arg(skip)]
    pub settings: Vec<settings::Setting>,
}

/// Index of the status vector shared every step.
mod status {
    pub const EXECUTIONS: usize = 0;
    pub const ANOMALIES: usize = 1;
    pub const ACTIVE_STREAMS: usize = 2;
    pub const FAILED: usize = 3;
    pub const ROWS: usize = 4;
    /// Some rank received SIGTERM/SIGINT.
    pub const STOP: usize = 5;
    pub const LEN: usize = 6;
}

/// Entry point of `chimbuko-mpi run`.
pub fn run_cli(mut args: RunArgs) -> anyhow::Result<()> {
    if args.no_final_relabel {
        args.final_relabel = false;
    }
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
    signals::install(rank, Duration::from_secs_f64(args.stop_grace.max(0.0)));
    let start = Instant::now();
    let started_at = coll.allreduce_max(&[unix_seconds()])[0];
    // Configuration errors are the same on every rank: fail before any step.
    let all_specs = config::agree_on_streams(coll, args)?;
    let rules = FunctionRules::load(args)?;
    let mine = config::block_of(&all_specs, rank, size);
    if rank == 0 && !args.quiet {
        print_settings(&args.settings);
        eprintln!(
            "run: {} stream(s) on {size} AD rank(s), engine {}, algorithm {:?}",
            all_specs.len(),
            args.engine,
            args.algorithm
        );
        if coll.world_size() > size {
            eprintln!(
                "run: MPMD launch: the AD is program MPI_APPNUM {} ({size} of {} processes); it communicates only on its own communicator",
                coll.appnum().unwrap_or(0),
                coll.world_size()
            );
        }
    }
    let mut streams: Vec<OwnedStream> = mine.into_iter().map(OwnedStream::new).collect();

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
    // Open streams (setup errors are reported through the first status
    // exchange; a stream that exists but cannot be read just fails). Their
    // threads start reading the first step at once, while this thread
    // creates the provenance file.
    let mut failure: Option<String> = None;
    for s in &mut streams {
        s.start_open(args);
    }
    for s in &mut streams {
        if let Err(e) = s.opened(args) {
            failure.get_or_insert(format!("{e:#}"));
        }
        if !s.done() {
            s.request_step();
        }
    }

    // The provenance file (collective: every rank opens it or all fail).
    let prov_path = provenance_path(coll, args, &all_specs, started_at);
    let mut prov = match &prov_path {
        Some(p) => Some(ProvenanceWriter::create(
            p,
            coll,
            args.overwrite,
            // Flushed records are remembered only for the end-of-run
            // re-evaluation; without it, memory stays flat.
            if args.final_relabel {
                args.max_stored_anomalies
            } else {
                0
            },
            args.use_inclusive,
        )?),
        None => None,
    };
    let run_attrs = RunAttributes::new(coll, args, &all_specs, started_at);
    if let Some(w) = &prov {
        w.set_attrs(&run_attrs.at_start())?;
        if rank == 0 && !args.quiet {
            eprintln!("run: provenance file {}", w.path().display());
        }
    }
    let mut viz = if args.stats_out.is_some() || args.viz_url.is_some() {
        Some(VizStream::new(
            rank,
            args.stats_out.as_deref(),
            args.viz_url.as_deref(),
            args.stats_every,
        )?)
    } else {
        None
    };
    let mut profiles = GlobalStats::default();
    let prov_opts = ProvenanceOptions {
        window: args.window,
        normal_samples: args.normal_samples,
        min_anomaly_us: args.min_anomaly_us,
    };
    let mut stored: Vec<(u64, u64, crate::detect::Verdict, Execution)> = Vec::new();
    let mut timings = Timings::default();
    // Bytes this rank sent in the agreement, the model reduction and the
    // status exchange.
    let mut traffic = [0u64; 3];
    let calls_before = coll.calls_made();
    let mut pending: Vec<(u64, Execution)> = Vec::new();
    let mut issues_total = EventIssues::default();
    let mut global_rows = 0u64;
    let mut global_executions = 0u64;
    let mut global_anomalies = 0u64;
    let mut steps_done = 0u64;

    // The runtime the detectors judge, in every step and at the end.
    let value = |e: &Execution| e.judged_runtime(args.use_inclusive);

    // Inside the loop nothing returns early before the status exchange:
    // every rank must take part in every collective of the step, so errors
    // go to `failure` and stop all ranks together at the end of the step.
    let mut step = 0u64;
    loop {
        if args.max_steps.is_some_and(|m| step >= m) {
            break;
        }
        // 1 read
        let t = Instant::now();
        let mut tau_steps: Vec<(usize, TauStep)> = Vec::new();
        let mut rows = 0u64;
        if failure.is_none() {
            for s in streams.iter_mut().filter(|s| !s.done()) {
                s.request_step();
            }
            for (i, s) in streams.iter_mut().enumerate() {
                if s.done() {
                    continue;
                }
                if let Some(st) = s.wait_step(args, step) {
                    rows += (st.funcs.len() + st.comms.len() + st.counters.len()) as u64;
                    tau_steps.push((i, st));
                    if args.prefetch {
                        // The stream's thread reads the next step while
                        // this one is analysed.
                        s.request_step();
                    }
                }
            }
        }
        // Every rank has its step: waiting here for the slowest one counts
        // as reading, so that the collectives' times below are the
        // exchanges themselves, not the ranks' imbalance.
        coll.barrier();
        timings.add(Phase::Read, t.elapsed());

        // 2 agree on names first seen this step
        let t = Instant::now();
        let sent = coll.bytes_sent();
        let mut unknown = Vec::new();
        for (i, st) in &tau_steps {
            names.unknown_names(streams[*i].spec.program, &st.new_attributes, &mut unknown);
        }
        unknown.sort();
        unknown.dedup();
        let agreed = coll.agree_names(&unknown);
        let new_functions = names.extend(agreed);
        for f in new_functions {
            let (_, name) = &names.functions.keys[f as usize];
            if ignored.len() <= f as usize {
                ignored.resize(f as usize + 1, false);
            }
            ignored[f as usize] = rules.is_ignored(name);
            if let Some(th) = rules.threshold(name) {
                detector.set_function_threshold(f, th);
            }
        }
        detector.ensure_functions(names.functions.len());
        sink.totals.ensure(names.functions.len());
        for (i, st) in &tau_steps {
            let s = &mut streams[*i];
            names.update_map(s.spec.program, &st.new_attributes, &mut s.map);
            if let Some(w) = prov.as_mut() {
                s.prov.observe_metadata(&st.new_attributes, &mut w.metadata);
            }
        }
        timings.add(Phase::Agree, t.elapsed());
        traffic[0] += coll.bytes_sent() - sent;

        // 3 build executions (row buffers go back to their reader at once),
        // and 4 summarize: each execution goes into this step's partial
        // model (and the run's profiles) the moment it completes, while it
        // is in cache; a separate pass over a big step's executions would
        // be a trip through memory.
        let t = Instant::now();
        for s in &mut streams {
            s.out.clear();
        }
        let profiling = prov.is_some() || viz.is_some();
        let mut summarize = |e: &Execution| {
            if !is_ignored(&ignored, e.function) {
                detector.observe(e.function, value(e));
            }
            if profiling {
                profiles
                    .function(e.function)
                    .profile(e.inclusive(), e.exclusive);
            }
        };
        let mut active: Vec<usize> = Vec::with_capacity(tau_steps.len());
        for (i, st) in tau_steps {
            let s = &mut streams[i];
            s.events
                .process_step_observed(step, &st, &s.map, &mut s.out, &mut summarize);
            if s.out.issues.has_problems() && !args.quiet {
                eprintln!("warning: {}", s.out.issues.summary(&s.name(), step));
            }
            issues_total.merge(&s.out.issues);
            let step_issues = std::mem::take(&mut s.out.issues);
            s.count_event_issues(&step_issues);
            s.out.issues = step_issues;
            s.spare = Some(st);
            active.push(i);
        }
        timings.add(Phase::Build, t.elapsed());

        // 4 summarize (the executions went in as they completed): the
        // counters' profiles, and the partial model taken for the reduction
        let t = Instant::now();
        if profiling {
            profile_counters(&mut profiles, &streams);
        }
        let partial = detector.take_partial();
        timings.add(Phase::Summarize, t.elapsed());

        // 5 reduce: global model = previous + all ranks' partials
        let t = Instant::now();
        let sent = coll.bytes_sent();
        crate::detect::reduce_step(detector.as_mut(), partial, |w| coll.reduce_wire(w));
        timings.add(Phase::Reduce, t.elapsed());
        traffic[1] += coll.bytes_sent() - sent;

        // 6 label (held executions first, in their original order)
        let t = Instant::now();
        let mut step_anomalies = 0u64;
        let mut step_labelled = 0u64;
        let held = std::mem::take(&mut pending);
        let judge = |e: &Execution| {
            if is_ignored(&ignored, e.function) {
                Verdict {
                    label: Label::Normal,
                    score: 0.0,
                }
            } else {
                detector.label(e.function, value(e))
            }
        };
        let mut late_records: Vec<(u64, Verdict, Execution)> = Vec::new();
        for (done_step, e) in held {
            let verdict = judge(&e);
            if verdict.label == Label::Unlabeled && pending.len() < args.max_pending {
                pending.push((done_step, e));
                continue;
            }
            step_labelled += 1;
            if verdict.label == Label::Anomaly {
                step_anomalies += 1;
                late_records.push((done_step, verdict, e));
                if args.final_relabel && stored.len() < args.max_stored_anomalies {
                    stored.push((done_step, step, verdict, e));
                    continue;
                }
            }
            if let Err(e) = sink.emit(&e, done_step, step, verdict.label, verdict, &names) {
                failure.get_or_insert(format!("{e:#}"));
            }
        }
        let collecting = prov.is_some();
        let mut live: Vec<StreamStep> = Vec::new();
        for &i in &active {
            let s = &mut streams[i];
            s.verdicts.clear();
            if collecting {
                s.prov.begin_step(names.functions.len(), &prov_opts);
            }
            let mut summary = viz
                .as_ref()
                .map(|_| StreamStepBuilder::new(s.spec.program, s.spec.app_rank, step));
            for (k, e) in s.out.executions.iter().enumerate() {
                let verdict = judge(e);
                s.verdicts.push(verdict);
                if collecting {
                    s.prov.offer(k, e, verdict);
                }
                if let (Some(b), Label::Anomaly) = (summary.as_mut(), verdict.label) {
                    b.add(e.function, verdict.score, e.exclusive, e.entry, e.exit);
                }
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
                if let Err(e) = sink.emit(e, step, step, verdict.label, verdict, &names) {
                    failure.get_or_insert(format!("{e:#}"));
                }
            }
            live.extend(summary.map(StreamStepBuilder::finish));
        }
        timings.add(Phase::Label, t.elapsed());

        // 7 collect provenance records; model snapshots (collective)
        let t = Instant::now();
        if let Some(w) = prov.as_mut() {
            for &i in &active {
                let s = &mut streams[i];
                let ctx = StepContext {
                    step,
                    events: &s.out,
                    verdicts: &s.verdicts,
                    stream: &s.events,
                    names: &names,
                    opts: &prov_opts,
                };
                let (anomalies, normals) = w.collections_mut();
                let n = s.prov.collect_step(&ctx, anomalies, normals);
                w.steps.push(StepRow {
                    pid: s.spec.program,
                    rid: s.spec.app_rank,
                    io_step: step,
                    executions: s.out.executions.len() as u64,
                    anomalies: n,
                    min_timestamp: s.out.first_ts.unwrap_or(0),
                    max_timestamp: s.out.last_ts.unwrap_or(0),
                });
            }
            for (done_step, verdict, e) in &late_records {
                let Some(s) = streams
                    .iter()
                    .find(|s| s.spec.program == e.program && s.spec.app_rank == e.rank())
                else {
                    continue;
                };
                let (anomalies, _) = w.collections_mut();
                s.prov
                    .record_detached(e, *verdict, *done_step, step, &names, anomalies);
            }
            w.snapshot_models(coll, step, detector.as_ref(), &names);
        }
        timings.add(Phase::Collect, t.elapsed());

        // 8 write (collective), every --flush-steps steps
        let t = Instant::now();
        if let Some(w) = prov.as_mut() {
            let secs = timings.take_step();
            w.perf.push(perf_row(rank, step, &secs));
            if args.flush_steps > 0 && (step + 1) % args.flush_steps == 0 {
                w.stream_rows = streams.iter().map(|s| s.row()).collect();
                let attrs = run_attrs.progress(step + 1);
                if let Err(e) = w.flush(coll, &names, detector.as_ref(), &profiles, &attrs) {
                    failure.get_or_insert(format!("{e:#}"));
                }
            }
        }
        timings.add(Phase::Write, t.elapsed());

        // 10 status: who still has data, who failed, progress numbers
        let t = Instant::now();
        let sent = coll.bytes_sent();
        let mut st = [0u64; status::LEN];
        st[status::EXECUTIONS] = step_labelled;
        st[status::ANOMALIES] = step_anomalies;
        st[status::ACTIVE_STREAMS] = streams.iter().filter(|s| !s.done()).count() as u64;
        st[status::FAILED] = failure.is_some() as u64;
        st[status::ROWS] = rows;
        st[status::STOP] = signals::received().is_some() as u64;
        let g = coll.allreduce_sum(&st);
        timings.add(Phase::Status, t.elapsed());
        traffic[2] += coll.bytes_sent() - sent;
        if g[status::FAILED] > 0 {
            let err = collective_failure(coll, failure.as_deref());
            let ended_at = coll.allreduce_max(&[unix_seconds()])[0];
            if let Some(mut w) = prov.take() {
                w.stream_rows = streams.iter().map(|s| s.row()).collect();
                // Best effort: the file keeps every flushed step and says
                // the run did not complete.
                let _ = w.finish(
                    coll,
                    &names,
                    detector.as_ref(),
                    &profiles,
                    false,
                    &run_attrs.at_end(steps_done, false, ended_at),
                );
            }
            return Err(err);
        }
        // Live statistics of steps that had data (collective; every rank
        // knows from the status whether any stream delivered a step).
        if let (Some(v), true) = (viz.as_mut(), g[status::ROWS] > 0) {
            v.step(coll, step, &live, &profiles, &names);
        }
        if g[status::STOP] > 0 {
            let sig = signals::received().map_or("a signal on another AD rank", signals::name);
            let ended_at = coll.allreduce_max(&[unix_seconds()])[0];
            if let Some(mut w) = prov.take() {
                w.stream_rows = streams.iter().map(|s| s.row()).collect();
                let mut attrs = run_attrs.at_end(step + 1, false, ended_at);
                attrs.push(("stopped_by", AttrValue::Str(sig.to_owned())));
                if let Err(e) = w.finish(coll, &names, detector.as_ref(), &profiles, false, &attrs)
                {
                    eprintln!("chimbuko-mpi: AD rank {rank}: {e:#}");
                }
            }
            bail!(
                "stopped by {sig} after step {step}; the provenance file holds steps 0..={step} and says completed = 0"
            );
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
        for s in streams.iter_mut().filter(|s| s.done()) {
            s.release_step_buffers();
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
    let calls_in_steps = coll.calls_made() - calls_before;
    let mut end_failure: Option<String> = None;
    for (done_step, e) in std::mem::take(&mut pending) {
        let verdict = detector.label(e.function, value(&e));
        if let Some(w) = prov.as_mut() {
            if verdict.label == Label::Anomaly {
                if let Some(s) = streams
                    .iter()
                    .find(|s| s.spec.program == e.program && s.spec.app_rank == e.rank())
                {
                    let (anomalies, _) = w.collections_mut();
                    s.prov
                        .record_detached(&e, verdict, done_step, steps_done, &names, anomalies);
                }
            }
        }
        if let Err(err) = sink.emit(&e, done_step, steps_done, verdict.label, verdict, &names) {
            end_failure.get_or_insert(format!("{err:#}"));
        }
    }
    let mut pruned = 0u64;
    for (done_step, labelled_step, in_situ, e) in std::mem::take(&mut stored) {
        let fin = detector.label(e.function, value(&e));
        if fin.label != Label::Anomaly {
            pruned += 1;
        }
        if let Err(err) = sink.emit(&e, done_step, labelled_step, in_situ.label, fin, &names) {
            end_failure.get_or_insert(format!("{err:#}"));
        }
    }
    let mut open_calls = 0u64;
    for s in &mut streams {
        open_calls += s.events.open_calls() as u64;
        let fin = s.events.finish();
        issues_total.merge(&fin);
    }
    if let Some(w) = sink.labels.take() {
        if let Err(err) = w.finish() {
            end_failure.get_or_insert(format!("{err:#}"));
        }
    }
    if let Some(w) = prov.as_mut() {
        w.snapshot_models(coll, steps_done, detector.as_ref(), &names);
    }
    let ended_at = coll.allreduce_max(&[unix_seconds()])[0];
    if let Some(mut w) = prov.take() {
        let t = Instant::now();
        w.stream_rows = streams.iter().map(|s| s.row()).collect();
        let attrs = run_attrs.at_end(steps_done, true, ended_at);
        if let Err(err) = w.finish(
            coll,
            &names,
            detector.as_ref(),
            &profiles,
            args.final_relabel,
            &attrs,
        ) {
            end_failure.get_or_insert(format!("{err:#}"));
        }
        // The last append and the re-evaluation count as writing.
        timings.add(Phase::Write, t.elapsed());
    }
    let failed = coll.allreduce_sum(&[end_failure.is_some() as u64])[0];
    if failed > 0 {
        return Err(collective_failure(coll, end_failure.as_deref()));
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
    let failed_streams = streams
        .iter()
        .filter(|s| matches!(s.state, streams::StreamState::Failed { .. }))
        .count() as u64;
    let stalled_streams = streams
        .iter()
        .filter(|s| matches!(s.state, streams::StreamState::Stalled { .. }))
        .count() as u64;
    let open_total = coll.allreduce_sum(&[
        open_calls,
        issues_total.total(),
        failed_streams,
        stalled_streams,
    ]);
    let phase_max = timings.reduce_max(coll);
    let peak_rss_kb = coll.allreduce_max(&[crate::tuning::peak_rss_kb()])[0];
    let traffic = coll.allreduce_max(&traffic);
    let calls_per_step = calls_in_steps as f64 / steps_done.max(1) as f64;
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
            streams_failed: open_total[2],
            streams_stalled: open_total[3],
            seconds: start.elapsed().as_secs_f64(),
            model_digest: format!("{digest:016x}"),
            peak_rss_mb: peak_rss_kb as f64 / 1024.0,
            timings: phase_max,
            truth: truth_counts,
            provenance: prov_path.as_ref().map(|p| p.display().to_string()),
            collective_bytes_per_step: report::CollectiveBytes::per_step(&traffic, steps_done),
            collective_calls_per_step: calls_per_step,
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

/// Adds this step's counter samples to the run's profiles (the executions
/// went in during the build, each counted once, when it completed).
fn profile_counters(stats: &mut GlobalStats, streams: &[OwnedStream]) {
    for s in streams {
        for c in s.out.counters.iter().chain(&s.out.node_state) {
            stats.counter(c.counter).push(c.value);
        }
    }
}

/// The effective settings, one per line, with where each came from.
fn print_settings(settings: &[settings::Setting]) {
    if settings.is_empty() {
        return;
    }
    let mut text =
        String::from("run: settings (flag > CHIMBUKO_* environment > --config file > default):\n");
    for s in settings {
        let source = match s.source {
            settings::Source::Flag => "flag",
            settings::Source::Env => "environment",
            settings::Source::File => "config file",
            settings::Source::Default => "default",
        };
        text.push_str(&format!("  {} = {} ({source})\n", s.name, s.value));
    }
    print!("{text}");
}

fn perf_row(rank: usize, step: u64, secs: &[f64; 9]) -> PerfRow {
    PerfRow {
        ad_rank: rank as u32,
        io_step: step,
        read: secs[0],
        agree: secs[1],
        build: secs[2],
        summarize: secs[3],
        reduce: secs[4],
        label: secs[5],
        collect: secs[6],
        write: secs[7],
        status: secs[8],
        rss_mb: crate::tuning::current_rss_kb() as f64 / 1024.0,
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Where the provenance goes: `--out`, none with `--no-provenance`, else a
/// name from the first input's binary and the (agreed) start time.
fn provenance_path(
    _coll: &Collectives,
    args: &RunArgs,
    specs: &[StreamSpec],
    started_at: u64,
) -> Option<PathBuf> {
    if args.no_provenance {
        return None;
    }
    if let Some(p) = &args.out {
        return Some(p.clone());
    }
    let binary = specs
        .first()
        .and_then(|s| s.path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .map(|n| binary_of_stream_name(&n))
        .unwrap_or_else(|| "run".into());
    Some(PathBuf::from(format!(
        "chimbuko-{binary}-{}.h5",
        report::utc_compact(started_at)
    )))
}

/// `tau-metrics-demo-0.bp` → `demo` (TAU's `<prefix>-<binary>-<rank>.bp`).
fn binary_of_stream_name(name: &str) -> String {
    let stem = name.strip_suffix(".bp").unwrap_or(name);
    let mut parts: Vec<&str> = stem.split('-').collect();
    if parts.len() >= 3 && parts.last().is_some_and(|r| r.parse::<u64>().is_ok()) {
        parts.pop();
        // Drop the prefix (`tau-metrics` by default): keep the binary.
        return parts.last().copied().unwrap_or("run").to_owned();
    }
    stem.to_owned()
}

/// Root attributes of the provenance file: the same on every rank.
struct RunAttributes {
    base: Vec<(&'static str, AttrValue)>,
}

impl RunAttributes {
    fn new(coll: &Collectives, args: &RunArgs, specs: &[StreamSpec], started_at: u64) -> Self {
        let ad_ranks = coll.size();
        let streams: Vec<String> = specs.iter().map(|s| s.path.display().to_string()).collect();
        // Rank 0's command line (MPMD launches could give ranks different
        // ones; attributes must be identical on every rank).
        let mine: Vec<String> = std::env::args().collect();
        let command_line = coll
            .allgather_bytes(mine.join(" ").as_bytes())
            .into_iter()
            .next()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let params = serde_json::json!({
            "algorithm": format!("{:?}", args.algorithm).to_lowercase(),
            "sigma": args.sigma,
            "hbos_threshold": args.hbos_threshold,
            "hbos_max_bins": args.hbos_max_bins,
            "modal_threshold": args.modal_threshold,
            "modal_min_share": args.modal_min_share,
            "modal_min_spread": args.modal_min_spread,
            "min_count": args.min_count,
            "use_inclusive": args.use_inclusive,
            "ignore_regex": args.ignore_regex,
            "ignore_file": args.ignore_file,
            "threshold_file": args.threshold_file,
            "window": args.window,
            "normal_samples": args.normal_samples,
            "min_anomaly_us": args.min_anomaly_us,
            "flush_steps": args.flush_steps,
            "final_relabel": args.final_relabel,
            "max_stored_anomalies": args.max_stored_anomalies,
            "engine": args.engine.to_string(),
        });
        RunAttributes {
            base: vec![
                (
                    "schema_version",
                    AttrValue::U64(crate::output::SCHEMA_VERSION),
                ),
                (
                    "program",
                    AttrValue::Str(format!("chimbuko-mpi {}", env!("CARGO_PKG_VERSION"))),
                ),
                (
                    "algorithm",
                    AttrValue::Str(format!("{:?}", args.algorithm).to_lowercase()),
                ),
                ("algorithm_params", AttrValue::Str(params.to_string())),
                ("ad_ranks", AttrValue::U64(ad_ranks as u64)),
                (
                    "input_streams",
                    AttrValue::Str(serde_json::to_string(&streams).unwrap_or_default()),
                ),
                ("command_line", AttrValue::Str(command_line)),
                (
                    "start_time",
                    AttrValue::Str(report::utc_iso8601(started_at)),
                ),
                ("final_relabel", AttrValue::U64(args.final_relabel as u64)),
                (
                    "configuration",
                    AttrValue::Str(serde_json::to_string(&args.settings).unwrap_or_default()),
                ),
            ],
        }
    }

    fn at_start(&self) -> Vec<(&'static str, AttrValue)> {
        let mut v = self.base.clone();
        v.push(("completed", AttrValue::U64(0)));
        v.push(("steps_written", AttrValue::U64(0)));
        v
    }

    fn progress(&self, steps: u64) -> Vec<(&'static str, AttrValue)> {
        vec![("steps_written", AttrValue::U64(steps))]
    }

    /// `ended_at` must be the same on every rank (agreed by a reduction).
    fn at_end(&self, steps: u64, completed: bool, ended_at: u64) -> Vec<(&'static str, AttrValue)> {
        vec![
            ("steps_written", AttrValue::U64(steps)),
            ("end_time", AttrValue::Str(report::utc_iso8601(ended_at))),
            ("completed", AttrValue::U64(completed as u64)),
        ]
    }
}

fn is_ignored(ignored: &[bool], f: u32) -> bool {
    ignored.get(f as usize).copied().unwrap_or(false)
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
