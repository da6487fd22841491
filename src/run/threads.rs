//! The AD rank's worker threads: one rayon pool per rank, sized by
//! `--threads` or by the CPUs the job script bound the rank to.
//!
//! The pool runs the parts of a step that are independent per stream or
//! per function (building call stacks, judging executions, deriving the
//! changed functions' models). MPI is only ever called from the main
//! thread, between those parts, so the rank asks MPI for
//! `MPI_THREAD_FUNNELED` (`collectives::Collectives::init`). Every
//! parallel part writes its results into slots of its own stream or
//! function and the main thread combines them in a fixed order, so the
//! results are the same for any number of threads.

/// The worker pool of an AD rank: `requested` threads, or one per CPU of
/// the affinity mask; with whether its threads are bound to CPUs (`bind`,
/// or by default when there are as many threads as CPUs in the mask, more
/// than one).
///
/// Binding matters more than it seems: a step wakes the workers several
/// times (build, reduce, label), and the kernel places a woken thread on
/// the core of the thread that woke it when it looks cache-hot, which can
/// leave a busy core shared while another is idle for milliseconds.
pub fn worker_pool(
    requested: Option<usize>,
    bind: Option<bool>,
) -> anyhow::Result<(rayon::ThreadPool, bool)> {
    let cpus = crate::sys::affinity::affinity_cpus();
    let threads = requested.unwrap_or(cpus).max(1);
    let bind = bind.unwrap_or(threads > 1 && threads == cpus);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("chimbuko-worker-{i}"))
        .start_handler(move |i| {
            if bind {
                crate::sys::affinity::bind_this_thread_to_nth_cpu(i);
            }
        })
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start {threads} worker threads: {e}"))?;
    Ok((pool, bind))
}
