//! What one AD rank carries from step to step, and how a run is set up.
//!
//! [`Pipeline`] holds the run's state ([`RunState`], in named parts:
//! streams, names, the global model, held executions, incidents, totals)
//! apart from its outputs ([`Outputs`]), so that a stage can show the state
//! to the outputs while it calls them. The stages themselves are functions
//! in `stage/`, one file each, handed the parts they read or evolve; the
//! end of the run is in `finish.rs`.

use std::sync::Arc;
use std::time::Instant;

use super::attributes::{provenance_path, root_attributes, unix_seconds};
use super::held::HeldExecutions;
use super::inputs;
use super::options::{RunOptions, Setting};
use super::rules::{FunctionFilter, FunctionRules};
use super::streams::OwnedStream;
use super::timings::{Stage, Timings};
use crate::collectives::Collectives;
use crate::detect::size_classes::sized;
use crate::detect::{Detector, Label, Prediction, Verdict};
use crate::events::names::GlobalNames;
use crate::events::{EventIssues, Execution};
use crate::output::collect::ProvenanceOptions;
use crate::output::consumer::{Outputs, RunContext};
use crate::output::labels_csv::LabelWriter;
use crate::output::provenance_output::{ProvenanceOutput, ProvenanceSettings};
use crate::output::summary_output::SummaryOutput;
use crate::output::truth::TruthSet;
use crate::output::viz::{LiveStatistics, VizStream};
use crate::provenance::stats::RunProfiles;
use crate::sys::signals;
use crate::trace::source::SourceOpener;

/// The run on one AD rank: its state and its outputs.
pub(super) struct Pipeline<'a> {
    /// Everything but the outputs.
    pub state: RunState<'a>,
    /// What consumes the labels (provenance, live statistics, label CSVs,
    /// the run's summary).
    pub outputs: Outputs,
}

/// The state one AD rank carries from step to step, in parts named after
/// what they are; each part says which stage evolves it, and a stage
/// (`stage/`) is handed only the parts it reads or evolves.
pub(super) struct RunState<'a> {
    /// What the run was set up with (no stage changes it).
    pub run: RunSetup<'a>,
    /// This rank's streams: read delivers their steps, build replays them,
    /// label judges their executions, link and trim follow them.
    pub streams: Vec<OwnedStream>,
    /// The agreed function and counter tables (evolved by agree).
    pub names: GlobalNames,
    /// The global model and what feeds it (agree, build, reduce).
    pub model: ModelState,
    /// Runtime and counter profiles since the start (evolved by build).
    pub profiling: Profiling,
    /// Executions whose label is not final yet (evolved by label).
    pub held: HeldExecutions,
    /// The incidents as they form (evolved by link).
    pub links: Linking,
    /// Sums over all ranks of the steps so far (evolved by status, and
    /// by reduce for the active functions).
    pub totals: RunTotals,
    /// Problems found in the streams' events so far (evolved by build).
    pub issues: EventIssues,
    /// Time and collective bytes per stage (every stage, through
    /// [`Pipeline::timed`]).
    pub timings: Timings,
    /// The first error of this rank in the current step; every rank stops
    /// at the status exchange when any has one.
    pub failure: Option<String>,
}

/// What the run was set up with: read by the stages, changed by none.
pub(super) struct RunSetup<'a> {
    /// The AD ranks' communicator.
    pub coll: &'a Collectives,
    /// The rank's worker threads (`run::threads`).
    pub pool: Arc<rayon::ThreadPool>,
    /// What the run was asked to do.
    pub opts: &'a RunOptions,
    /// All streams of the run, on all ranks.
    pub all_streams: usize,
    /// When the run started.
    pub start: Instant,
    /// The provenance file, if one is written.
    pub provenance: Option<std::path::PathBuf>,
    /// Collective calls before the first step.
    pub calls_before: u64,
    /// Whether streams read their next step while this one is analysed
    /// (`--prefetch`, or by the worker threads).
    pub prefetch: bool,
}

/// The global model and what decides how executions feed it: agree adds
/// the new functions, build feeds this step's executions into the partial
/// model, reduce makes the global model (the same on every rank).
pub(super) struct ModelState {
    /// The global model, and this step's partial one.
    pub detector: Box<dyn Detector>,
    /// Ignored functions and per-function thresholds.
    pub filter: FunctionFilter,
    /// This rank's functions with an execution in the current step (the
    /// model reduction covers those of all ranks only).
    pub touched: super::active::TouchedFunctions,
    /// The reduced wires of a step's rounds (receive buffers reused from
    /// step to step).
    pub reduced: Vec<crate::detect::Wire>,
    /// By global function: judged by a performance model's prediction
    /// (asked once per new function, so that the build asks no virtual
    /// call per execution).
    pub modelled: Vec<bool>,
}

/// Runtime and counter profiles of this rank since the start (for the
/// provenance file and the live statistics), evolved by build.
#[derive(Default)]
pub(super) struct Profiling {
    /// The profiles.
    pub profiles: RunProfiles,
    /// Whether some output needs them (else they stay empty).
    pub on: bool,
}

/// The incidents as they form, evolved by link; ranked at the end.
pub(super) struct Linking {
    /// The incidents so far (the same on every rank).
    pub tracker: crate::incidents::tau::Tracker,
    /// By global function: what kind of call it is.
    pub call_classes: Vec<crate::incidents::tau::CallClass>,
    /// The incidents of the run, ranked, once the run has ended.
    pub list: Option<crate::incidents::IncidentList>,
}

/// Sums over all ranks of the steps so far.
#[derive(Default)]
pub(super) struct RunTotals {
    /// Trace rows read.
    pub rows: u64,
    /// Executions labelled.
    pub executions: u64,
    /// Anomalies labelled in situ.
    pub anomalies: u64,
    /// Steps that delivered data.
    pub steps_done: u64,
    /// Functions in the steps' active sets (executed on some rank), summed
    /// over the steps.
    pub active_functions: u64,
}

impl<'a> RunState<'a> {
    /// The state before the first step: no names, no model data, nothing
    /// counted; the settings from `setup.opts`.
    fn new(
        setup: RunSetup<'a>,
        streams: Vec<OwnedStream>,
        filter: FunctionFilter,
        detector: Box<dyn Detector>,
    ) -> Self {
        let opts = setup.opts;
        let max_stored = if opts.final_relabel {
            opts.max_stored_anomalies
        } else {
            0
        };
        let link_settings = crate::incidents::tau::LinkSettings {
            tolerance_us: opts.incident_tolerance_us,
            inclusive: opts.use_inclusive,
        };
        RunState {
            run: setup,
            streams,
            names: GlobalNames::default(),
            model: ModelState {
                detector,
                filter,
                touched: Default::default(),
                reduced: Vec::new(),
                modelled: Vec::new(),
            },
            profiling: Profiling::default(),
            held: HeldExecutions::new(opts.max_pending, max_stored),
            links: Linking {
                tracker: crate::incidents::tau::Tracker::new(link_settings, opts.incident_floor),
                call_classes: Vec::new(),
                list: None,
            },
            totals: RunTotals::default(),
            issues: EventIssues::default(),
            timings: Timings::default(),
            failure: None,
        }
    }
}

impl RunState<'_> {
    /// What the outputs see of the run in their collective hooks.
    pub fn context(&self) -> RunContext<'_> {
        RunContext {
            coll: self.run.coll,
            names: &self.names,
            detector: self.model.detector.as_ref(),
            profiles: &self.profiling.profiles,
            streams: &self.streams,
            incidents_in_step: self.links.tracker.found_last_step(),
            incidents: self.links.list.as_ref(),
        }
    }

    /// Keeps the first error of the step.
    pub fn fail(&mut self, message: Option<String>) {
        if let Some(m) = message {
            self.failure.get_or_insert(m);
        }
    }
}

impl ModelState {
    /// The verdict on `e` against the global model, judging the ratio of
    /// its `prediction` (model detector) or else its inclusive or exclusive
    /// runtime (ignored functions are always normal).
    #[inline]
    pub fn judge(&self, use_inclusive: bool, e: &Execution, p: Option<Prediction>) -> Verdict {
        if self.filter.is_ignored(e.function) {
            return Verdict {
                label: Label::Normal,
                score: 0.0,
            };
        }
        let value = match p {
            Some(p) => p.ratio_ppm,
            None => e.judged_runtime(use_inclusive),
        };
        self.detector.label(sized(e.function, e.size_class), value)
    }
}

impl<'a> Pipeline<'a> {
    /// Sets the run up on this rank: agrees on the streams, opens this
    /// rank's block of them, builds the detector and the outputs. Errors
    /// here are the same on every rank (or collective), so all fail
    /// together before any step.
    pub fn set_up(
        coll: &'a Collectives,
        opts: &'a RunOptions,
        sources: Arc<dyn SourceOpener>,
    ) -> anyhow::Result<Self> {
        let (rank, size) = (coll.rank(), coll.size());
        signals::install(rank, opts.stop_grace);
        let start = Instant::now();
        let started_at = coll.allreduce_max(&[unix_seconds()])[0];
        let all_specs = inputs::agree_on_streams(coll, opts, sources.as_ref())
            .map_err(crate::util::same_on_every_rank::SameOnEveryRank::wrap)?;
        let filter = FunctionFilter::new(FunctionRules::load(opts)?);
        let mut detector = opts.detector.build()?;
        detector.set_ranks(rank, size);
        let tags = run_tags(opts, all_specs.len(), size)?;
        refuse_impossible_flags(opts)?;
        // An MPI without MPI_THREAD_FUNNELED gets no threads beside it.
        let threads = if coll.threads_allowed() {
            opts.threads
        } else {
            Some(1)
        };
        let (pool, bound) = super::threads::worker_pool(threads, opts.bind_workers)?;
        let pool = Arc::new(pool);
        detector.set_pool(Arc::clone(&pool));
        let threads = pool.current_num_threads();
        let prefetch = opts
            .prefetch
            .unwrap_or(threads >= super::options::PREFETCH_FROM_THREADS);
        if rank == 0 && !opts.quiet {
            announce(coll, opts, all_specs.len(), (threads, bound, prefetch));
        }
        let mut streams: Vec<OwnedStream> = inputs::block_of(&all_specs, rank, size)
            .into_iter()
            .map(OwnedStream::new)
            .collect();
        let mut outputs = Outputs::default();
        if let Some(dir) = &opts.labels_out {
            outputs.push(Box::new(LabelWriter::create(dir, rank)?));
        }
        let truth = TruthSet::load(&opts.truth, &all_specs)?;

        // Their threads start reading the first step at once, while this
        // thread creates the provenance file.
        let failure = open_streams(&mut streams, &sources, opts);

        let provenance = provenance_path(opts, &all_specs, started_at);
        if let Some(path) = &provenance {
            let mine: Vec<(u32, u64)> = streams
                .iter()
                .map(|s| (s.spec.program, s.spec.app_rank))
                .collect();
            let attrs = root_attributes(coll, opts, &all_specs, started_at);
            let mut settings = provenance_settings(opts, tags);
            settings.models = detector
                .predictor()
                .map(|p| p.model_documents())
                .unwrap_or_default();
            let out = ProvenanceOutput::create(path, coll, &mine, settings, &attrs)?;
            outputs.push(Box::new(out));
            if rank == 0 && !opts.quiet {
                eprintln!("run: provenance file {}", path.display());
            }
        }
        let live = push_live_and_summary(&mut outputs, rank, opts, truth)?;
        let setup = RunSetup {
            coll,
            pool,
            opts,
            all_streams: all_specs.len(),
            start,
            provenance,
            calls_before: coll.calls_made(),
            prefetch,
        };
        let mut state = RunState::new(setup, streams, filter, detector);
        state.profiling.on = state.run.provenance.is_some() || live;
        state.failure = failure;
        Ok(Pipeline { state, outputs })
    }

    /// Runs one stage of the step, timed and with its collective bytes
    /// counted.
    pub fn timed<R>(&mut self, stage: Stage, f: impl FnOnce(&mut Self) -> R) -> R {
        let coll = self.state.run.coll;
        let t = Instant::now();
        let (sent, received) = (coll.bytes_sent(), coll.bytes_received());
        let r = f(self);
        let bytes = coll.bytes_sent() - sent;
        let received = coll.bytes_received() - received;
        self.state.timings.add(stage, t.elapsed(), bytes, received);
        r
    }
}

/// The run's tags: the automatic `app_ranks` (streams of the run) and
/// `ad_ranks`, then `--tag`s (a `--tag` of an automatic key replaces it; a
/// key given twice is an error, the same on every rank).
fn run_tags(
    opts: &RunOptions,
    streams: usize,
    ad_ranks: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut tags = vec![
        ("app_ranks".to_owned(), streams.to_string()),
        ("ad_ranks".to_owned(), ad_ranks.to_string()),
    ];
    let mut given = std::collections::BTreeSet::new();
    for (k, v) in &opts.tags {
        if !given.insert(k.as_str()) {
            anyhow::bail!("--tag {k}=... is given twice");
        }
        tags.retain(|(key, _)| key != k);
        tags.push((k.clone(), v.clone()));
    }
    Ok(tags)
}

/// How the provenance file is written, from the run's options.
fn provenance_settings(opts: &RunOptions, tags: Vec<(String, String)>) -> ProvenanceSettings {
    ProvenanceSettings {
        overwrite: opts.overwrite,
        flush_steps: opts.flush_steps,
        final_relabel: opts.final_relabel,
        max_stored: opts.max_stored_anomalies,
        use_inclusive: opts.use_inclusive,
        records: ProvenanceOptions {
            window: opts.window,
            normal_samples: opts.normal_samples,
            min_anomaly_us: opts.min_anomaly_us,
            end_candidates: opts.final_relabel,
            use_inclusive: opts.use_inclusive,
        },
        model_samples: opts.model_samples,
        tags,
        models: Vec::new(),
    }
}

/// Flags that cannot go together (the same on every rank).
fn refuse_impossible_flags(opts: &RunOptions) -> anyhow::Result<()> {
    if opts.report.is_some() && opts.no_provenance {
        anyhow::bail!("--report draws the provenance file: it cannot be used with --no-provenance");
    }
    if opts.model_samples > 0 && opts.no_provenance {
        anyhow::bail!(
            "--model-samples records into the provenance file: it cannot be used with --no-provenance"
        );
    }
    Ok(())
}

/// Opens this rank's streams, each on its reader thread, and asks each
/// that opened for its first step; returns the first error. Set-up errors
/// are reported through the first status exchange; a stream that exists
/// but cannot be read just fails.
fn open_streams(
    streams: &mut [OwnedStream],
    sources: &Arc<dyn SourceOpener>,
    opts: &RunOptions,
) -> Option<String> {
    let mut failure = None;
    for s in streams.iter_mut() {
        s.start_open(sources);
    }
    for s in streams.iter_mut() {
        if let Err(e) = s.opened(opts) {
            failure.get_or_insert(format!("{e:#}"));
        }
        if !s.done() {
            s.request_step();
        }
    }
    failure
}

/// Adds the live statistics (when asked for) and the run's summary to the
/// outputs; returns whether live statistics are sent.
fn push_live_and_summary(
    outputs: &mut Outputs,
    rank: usize,
    opts: &RunOptions,
    truth: Option<TruthSet>,
) -> anyhow::Result<bool> {
    let live = opts.stats_out.is_some() || opts.viz_url.is_some();
    if live {
        let stream = VizStream::new(
            rank,
            opts.stats_out.as_deref(),
            opts.viz_url.as_deref(),
            opts.stats_every,
        )?;
        outputs.push(Box::new(LiveStatistics::new(stream)));
    }
    let mut summary = SummaryOutput::new(
        truth,
        opts.top,
        opts.model_out.clone(),
        opts.summary_out.clone(),
    )
    .with_summary_functions(opts.summary_functions);
    if opts.stats_out.as_deref() == Some("-") {
        summary = summary.summary_on_stderr();
    }
    outputs.push(Box::new(summary));
    Ok(live)
}

/// Rank 0's opening lines: the settings and what runs where.
fn announce(
    coll: &Collectives,
    opts: &RunOptions,
    streams: usize,
    (threads, bound, prefetch): (usize, bool, bool),
) {
    print_settings(&opts.settings);
    let bound = if bound { " bound to CPUs" } else { "" };
    let ahead = if prefetch {
        ", reading a step ahead"
    } else {
        ""
    };
    eprintln!(
        "run: {streams} stream(s) on {} AD rank(s) × {threads} thread(s){bound}{ahead}, engine {}, algorithm {}",
        coll.size(),
        opts.inputs.engine,
        opts.detector.algorithm
    );
    if coll.world_size() > coll.size() {
        eprintln!(
            "run: MPMD launch: the AD is program MPI_APPNUM {} ({} of {} processes); it communicates only on its own communicator",
            coll.appnum().unwrap_or(0),
            coll.size(),
            coll.world_size()
        );
    }
}

/// The effective settings, one per line, with where each came from.
fn print_settings(settings: &[Setting]) {
    if settings.is_empty() {
        return;
    }
    let mut text =
        String::from("run: settings (flag > CHIMBUKO_* environment > --config file > default):\n");
    for s in settings {
        text.push_str(&format!(
            "  {} = {} ({})\n",
            s.name,
            s.value,
            s.source.describe()
        ));
    }
    // With the other opening lines on stderr: stdout carries only what was
    // asked for (the live statistics with `--stats-out -`).
    eprint!("{text}");
}
