//! The CPUs a process is bound to: what sizes an AD rank's worker pool
//! (`run::threads`) when `--threads` is not given.

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
