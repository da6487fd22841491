//! SIGTERM / SIGINT: a job reaching its time limit, a user's Ctrl-C, or
//! mpirun stopping the job because another rank died.
//!
//! The handler only records the signal. The step loop shares it in its
//! status exchange, so every AD rank stops at the end of the same step,
//! writes what it has (the file is marked as not completed) and exits. A
//! watchdog thread makes the exit prompt whatever happens: if the ranks
//! cannot finish together within the grace period — a peer is dead and
//! a collective never returns — the process exits on its own. The
//! provenance file then holds every step flushed before.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// The signal received so far, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Name of a signal for messages (`SIGTERM`, `SIGINT`, else `a signal`).
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "a signal",
    }
}

/// Set once the run's outcome has been reported (see [`ending`]).
static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The run has ended and said why: a SIGTERM from now on is mpirun ending
/// the job because another rank has exited, not news for the user, and the
/// watchdog stays quiet about it.
pub fn ending() {
    ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
}

fn quiet() -> bool {
    ENDING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Installs the handlers and starts the watchdog (`rank` for messages).
pub fn install(rank: usize, grace: Duration) {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction with a handler that only does an
        // atomic store is a valid, async-signal-safe disposition.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = record as *const () as usize;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    std::thread::Builder::new()
        .name("signal-watchdog".into())
        .spawn(move || watchdog(rank, grace))
        .ok();
}

fn watchdog(rank: usize, grace: Duration) {
    let sig = loop {
        if let Some(s) = received() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let msg = format!(
        "chimbuko-mpi: AD rank {rank}: received {} (job time limit, Ctrl-C, or mpirun ending the job because another process died): stopping after this step; the provenance file keeps every flushed step\n",
        name(sig)
    );
    if !quiet() {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
    }
    std::thread::sleep(grace);
    if quiet() {
        // SAFETY: _exit ends the process at once; nothing is left to unwind.
        unsafe { libc::_exit(128 + sig) };
    }
    let msg = format!(
        "chimbuko-mpi: AD rank {rank}: could not finish within {:.0} s of {} (another AD rank is probably gone); exiting now; the provenance file keeps every step flushed before\n",
        grace.as_secs_f64(),
        name(sig)
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
    // SAFETY: _exit ends the process at once; nothing is left to unwind.
    unsafe { libc::_exit(128 + sig) };
}
