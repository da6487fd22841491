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

/// Binds the calling thread to the `k`-th CPU (counted modulo their
/// number) of the process's affinity mask. Best effort: the thread stays
/// unbound when the mask cannot be read or set.
pub fn bind_this_thread_to_nth_cpu(k: usize) {
    // SAFETY: `set` is a plain bit mask read by sched_getaffinity; the
    // CPU_* macros only read or write it; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect();
        let Some(&cpu) = cpus.get(k % cpus.len().max(1)) else {
            return;
        };
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        libc::sched_setaffinity(0, size, &one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPUs of the calling thread's affinity mask.
    fn my_cpus() -> Vec<usize> {
        // SAFETY: as in `bind_this_thread_to_nth_cpu`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    #[test]
    fn a_bound_thread_runs_on_the_nth_cpu_of_the_mask_only() {
        let mask = my_cpus();
        for k in [0, 1, mask.len(), mask.len() + 1] {
            let got = std::thread::spawn(move || {
                bind_this_thread_to_nth_cpu(k);
                my_cpus()
            })
            .join()
            .unwrap();
            assert_eq!(got, vec![mask[k % mask.len()]], "k = {k}");
        }
        // The thread that did not bind keeps the whole mask.
        assert_eq!(my_cpus(), mask);
    }
}
