//! A trace source read on a thread of its own.
//!
//! Every call into one stream's source — open, each step, close (for TAU,
//! every ADIOS2 call) — happens on
//! that stream's thread; the analysis asks for the next step and waits with
//! a time-out of its choosing. That gives two things the lockstep analysis
//! needs:
//! - a stream that hangs *inside* ADIOS2 (a truncated file that ADIOS2
//!   waits to see grow, a stuck file system) is given up on after the
//!   time-out and the other streams go on; the thread is left behind and
//!   ends when its call returns;
//! - the streams of one AD rank are read in parallel (SST streams are
//!   opened and closed one at a time: see `adios::ENGINE_CALLS`).
//!
//! Dropping a reader between calls waits for its thread to close the
//! stream, so that closes end before the run's results are written and MPI
//! ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::source::{NextStep, SourceOpener, StreamSpec, TraceError};
use super::step::TraceStep;

/// What the stream's thread answers.
enum Reply {
    Opened(Result<(), TraceError>),
    Step(Result<NextStep, TraceError>),
}

/// The outcome of waiting for the stream.
#[derive(Debug)]
pub enum Waited {
    /// The stream is open (answer to the open).
    Opened,
    /// The step asked for.
    Step(Box<TraceStep>),
    /// The writer closed the stream.
    EndOfStream,
    /// Opening or reading failed.
    Failed(TraceError),
    /// Nothing within the time-out; ask again or give up.
    TimedOut,
    /// `interrupted()` became true while waiting.
    Interrupted,
}

/// Handle of a stream read on its own thread.
pub struct ThreadedReader {
    stream: String,
    /// `Some(recycled buffers)` asks for the next step; dropping the
    /// sender ends the thread after its current call.
    requests: Option<Sender<Option<TraceStep>>>,
    replies: Receiver<Reply>,
    /// Set when the analysis gives up on the stream.
    abandoned: Arc<AtomicBool>,
    /// A request (or the open) is outstanding.
    pending: bool,
    /// Disconnects when the thread has returned, its stream closed.
    finished: Receiver<()>,
}

/// How long dropping a reader waits for its thread to close the stream.
/// Closing takes milliseconds; the bound only keeps a close that hangs in
/// ADIOS2 from holding up the run.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

impl ThreadedReader {
    /// Starts the thread, which opens the stream; [`ThreadedReader::wait`]
    /// returns [`Waited::Opened`] (or the error) when it is open.
    pub fn open(spec: &StreamSpec, opener: Arc<dyn SourceOpener>) -> ThreadedReader {
        let (req_tx, req_rx) = mpsc::channel::<Option<TraceStep>>();
        let (rep_tx, rep_rx) = mpsc::channel::<Reply>();
        let abandoned = Arc::new(AtomicBool::new(false));
        let stream = spec.path.display().to_string();
        let flag = abandoned.clone();
        let spec = spec.clone();
        let (finished_tx, finished_rx) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name(format!("read {stream}"))
            .spawn(move || {
                serve(&spec, opener.as_ref(), req_rx, rep_tx, flag);
                // The source was dropped (the stream closed) inside `serve`.
                drop(finished_tx);
            });
        if let Err(e) = spawned {
            // Cannot happen short of resource exhaustion; reported as a
            // failed open through the same channel shape.
            let (tx, rx) = mpsc::channel();
            let _ = tx.send(Reply::Opened(Err(TraceError::Format {
                stream: stream.clone(),
                offset: 0,
                message: format!("cannot start a reader thread: {e}"),
            })));
            return ThreadedReader {
                stream,
                requests: None,
                replies: rx,
                abandoned,
                pending: true,
                finished: finished_rx,
            };
        }
        ThreadedReader {
            stream,
            requests: Some(req_tx),
            replies: rep_rx,
            abandoned,
            pending: true,
            finished: finished_rx,
        }
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// Asks for the next step (does not wait), handing back the previous
    /// step's row buffers for reuse. No-op while a request is outstanding.
    pub fn request(&mut self, recycled: Option<TraceStep>) {
        if self.pending {
            return;
        }
        if let Some(tx) = &self.requests {
            if tx.send(recycled).is_ok() {
                self.pending = true;
            }
        }
    }

    /// Waits up to `timeout` for the outstanding open or step, checking
    /// `interrupted` every 100 ms.
    pub fn wait(&mut self, timeout: Duration, interrupted: &dyn Fn() -> bool) -> Waited {
        if !self.pending {
            return Waited::TimedOut;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if interrupted() {
                return Waited::Interrupted;
            }
            // At or past the deadline this still takes a reply that is
            // already there (a zero timeout): a step that came in while
            // another stream was waited for is not a stall.
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .replies
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(reply) => {
                    self.pending = false;
                    return match reply {
                        Reply::Opened(Ok(())) => Waited::Opened,
                        Reply::Opened(Err(e)) | Reply::Step(Err(e)) => Waited::Failed(e),
                        Reply::Step(Ok(NextStep::Step(st))) => Waited::Step(st),
                        Reply::Step(Ok(NextStep::EndOfStream)) => Waited::EndOfStream,
                        // The thread only answers with a step or the end.
                        Reply::Step(Ok(NextStep::NotReady)) => Waited::TimedOut,
                    };
                }
                Err(RecvTimeoutError::Timeout) if left.is_zero() => return Waited::TimedOut,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    self.pending = false;
                    return Waited::EndOfStream;
                }
            }
        }
    }

    /// Gives up on the stream: the thread stops at its next chance (or when
    /// a blocked ADIOS2 call returns) and closes it; nobody waits for that.
    pub fn abandon(mut self) {
        self.stop();
    }

    /// Tells the thread to stop and close the stream.
    fn stop(&mut self) {
        self.abandoned.store(true, Ordering::SeqCst);
        self.requests = None;
    }
}

/// Dropping a reader whose thread is between calls (the stream ended,
/// failed, or the run stopped) waits for the thread to close the stream:
/// closes then finish before the run writes its results and MPI ends, not
/// during them. A thread inside a call (an outstanding step, a stalled
/// stream) is not waited for.
impl Drop for ThreadedReader {
    fn drop(&mut self) {
        let waited_for = !self.pending && !self.abandoned.load(Ordering::SeqCst);
        self.stop();
        if waited_for {
            // `Disconnected` when the thread is done; a time-out leaves it.
            let _ = self.finished.recv_timeout(CLOSE_WAIT);
        }
    }
}

/// The stream's thread: open, then one step per request.
fn serve(
    spec: &StreamSpec,
    opener: &dyn SourceOpener,
    requests: Receiver<Option<TraceStep>>,
    replies: Sender<Reply>,
    abandoned: Arc<AtomicBool>,
) {
    let poll = Duration::from_millis(100);
    let mut reader = match opener.open(spec) {
        Ok(r) => {
            let _ = replies.send(Reply::Opened(Ok(())));
            r
        }
        Err(e) => {
            let _ = replies.send(Reply::Opened(Err(e)));
            return;
        }
    };
    while let Ok(recycled) = requests.recv() {
        if let Some(st) = recycled {
            reader.recycle(st);
        }
        let answer = loop {
            if abandoned.load(Ordering::SeqCst) {
                return;
            }
            match reader.next_step(poll) {
                Ok(NextStep::NotReady) => continue,
                other => break other,
            }
        };
        let finished = !matches!(answer, Ok(NextStep::Step(_)));
        if replies.send(Reply::Step(answer)).is_err() || finished {
            return;
        }
    }
}
