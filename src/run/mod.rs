//! `chimbuko-mpi run`: the bulk-synchronous analysis.
//!
//! Every AD rank owns a contiguous block of the application's streams, and
//! all ranks walk the steps in lockstep. [`run`] is the whole loop: set up,
//! then for each step the stages of `docs/architecture.md` in order —
//! read, agree, build, reduce, label, collect, write, trim, status — then
//! finish. There is no parameter server: the global model after step *t*
//! is the exact sum of every rank's partial models up to *t*, identical on
//! every rank.
//!
//! Layout: [`options`] (what a run is asked to do), `pipeline` (the state
//! carried from step to step, and the set-up), `stage/` (one file per
//! stage), `finish` (the end of the run); [`inputs`] (which streams),
//! [`streams`] (one stream's state), [`rules`] (ignored functions,
//! thresholds), [`held`] (labels not final yet), [`timings`] (cost per
//! stage), [`attributes`] (what the provenance file says of the run).

mod active;
pub mod attributes;
mod finish;
pub mod held;
pub mod inputs;
pub mod options;
mod pipeline;
pub mod rules;
mod stage;
pub mod streams;
pub mod threads;
pub mod timings;

use std::sync::Arc;

use crate::collectives::Collectives;
use crate::trace::source::SourceOpener;
use crate::trace::tau::TauSources;
use options::RunOptions;
use pipeline::Pipeline;
use stage::Next;

/// Runs the analysis under MPI on TAU streams over ADIOS2 (what
/// `chimbuko-mpi run` does). An error is printed once, by the rank it
/// concerns, and returned as [`AlreadyReported`].
pub fn run_on_mpi(opts: &RunOptions) -> anyhow::Result<()> {
    let coll = Collectives::init()?;
    let sources = Arc::new(TauSources {
        inputs: opts.inputs.clone(),
        report_issues: !opts.quiet,
    });
    let result = run(&coll, opts, sources);
    if let Err(e) = &result {
        crate::sys::signals::ending();
        if let Some(f) = e.downcast_ref::<StreamsFailed>() {
            // The same on every rank: said once, and the verdict carried by
            // rank 0's exit status alone, after every rank has finished its
            // work (the barrier) and left MPI (`coll` is dropped before the
            // status reaches `main`). mpirun kills the other processes as
            // soon as one exits non-zero; with only rank 0 non-zero, and
            // last, nothing is left to cut short.
            let code = f.exit_code();
            if coll.rank() == 0 {
                eprintln!("chimbuko-mpi: {f}");
            }
            coll.barrier();
            if coll.rank() != 0 {
                return Ok(());
            }
            return Err(anyhow::Error::new(ExitStatus(code)));
        }
        // An error every rank found alike (agreed through a collective) is
        // said once, by rank 0, without a rank.
        if let Some(same) = e.downcast_ref::<crate::util::same_on_every_rank::SameOnEveryRank>() {
            if coll.rank() == 0 {
                eprintln!("chimbuko-mpi: error: {same}");
            }
            // Every rank has it: none leaves before rank 0 has said it.
            coll.barrier();
            return Err(anyhow::Error::new(AlreadyReported));
        }
        // One write per rank, so that mpirun does not interleave the lines of
        // different ranks' messages.
        let msg = format!("chimbuko-mpi: AD rank {}: error: {e:#}\n", coll.rank());
        let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
        return Err(anyhow::Error::new(AlreadyReported));
    }
    result
}

/// The analysis, on an initialized communicator, of the streams `sources`
/// opens.
pub fn run(
    coll: &Collectives,
    opts: &RunOptions,
    sources: Arc<dyn SourceOpener>,
) -> anyhow::Result<()> {
    let mut p = Pipeline::set_up(coll, opts, sources)?;
    let mut step = 0u64;
    while opts.max_steps.is_none_or(|m| step < m) {
        if p.step(step)? == Next::Finish {
            break;
        }
        step += 1;
    }
    p.finish()
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

/// Exit status of a run that ended but did not analyse every stream to its
/// end, when `--allow-failed-streams` is not given (documented in the
/// README); a run that could read no stream at all exits 1.
pub const STREAMS_FAILED_EXIT: u8 = 3;

/// The run ended with streams that failed or stalled (the same on every
/// rank: the counts are reduced).
#[derive(Debug)]
pub struct StreamsFailed {
    /// Streams that failed.
    pub failed: u64,
    /// Streams that stalled.
    pub stalled: u64,
    /// Streams of the run.
    pub streams: u64,
    /// No stream delivered a row.
    pub none_read: bool,
    /// Whether there is a provenance file whose `streams` table says more.
    pub with_file: bool,
}

impl StreamsFailed {
    /// The exit status it gives.
    pub fn exit_code(&self) -> u8 {
        if self.none_read {
            1
        } else {
            STREAMS_FAILED_EXIT
        }
    }
}

impl std::fmt::Display for StreamsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whom = format!(
            "{} of {} stream(s) failed and {} stalled",
            self.failed, self.streams, self.stalled
        );
        let more = if self.with_file {
            " (the messages are above and in the `streams` table of the provenance file)"
        } else {
            " (the messages are above)"
        };
        // What became of the rest: said only when there is a rest.
        let others = if self.failed + self.stalled < self.streams {
            "; the others were analysed to their end"
        } else {
            "; every stream stopped before its end (the steps read until then are analysed)"
        };
        if self.none_read {
            write!(f, "error: no stream could be read: {whom}{more}")
        } else {
            write!(
                f,
                "warning: {whom}{more}{others}. Exit status {}; --allow-failed-streams exits 0",
                STREAMS_FAILED_EXIT
            )
        }
    }
}

impl std::error::Error for StreamsFailed {}

/// An outcome already reported to the user that sets the exit status.
#[derive(Debug)]
pub struct ExitStatus(pub u8);

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {} (already reported)", self.0)
    }
}

impl std::error::Error for ExitStatus {}

/// Every rank learns every failing rank's message, then all return the same
/// error (collective), which rank 0 says for all.
fn collective_failure(coll: &Collectives, mine: Option<&str>) -> anyhow::Error {
    let msgs = coll.allgather_bytes(mine.unwrap_or("").as_bytes());
    let text: Vec<String> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(r, m)| format!("AD rank {r}: {}", String::from_utf8_lossy(m)))
        .collect();
    crate::util::same_on_every_rank::SameOnEveryRank::wrap(anyhow::anyhow!(
        "analysis stopped because AD rank(s) failed:\n  {}",
        text.join("\n  ")
    ))
}
