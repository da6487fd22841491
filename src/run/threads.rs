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

/// The CPUs this process may run on (its affinity mask, as `taskset`,
/// Slurm's `--cpus-per-task` or mpirun's `--map-by ...:PE=N` set it); 1
/// if the mask cannot be read.
pub fn affinity_cpus() -> usize {
    // SAFETY: `set` is a plain bit mask that sched_getaffinity fills;
    // CPU_COUNT only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as usize;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The worker pool of an AD rank: `requested` threads, or one per CPU of
/// the affinity mask.
pub fn worker_pool(requested: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    let threads = requested.unwrap_or_else(affinity_cpus).max(1);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("chimbuko-worker-{i}"))
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start {threads} worker threads: {e}"))
}
