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
/// the affinity mask.
pub fn worker_pool(requested: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    let threads = requested
        .unwrap_or_else(crate::sys::affinity::affinity_cpus)
        .max(1);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("chimbuko-worker-{i}"))
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start {threads} worker threads: {e}"))
}
