//! The CPUs a process is bound to: what sizes an AD rank's worker pool
//! (`run::threads`) when `--threads` is not given, and where its workers
//! are bound.

/// The CPUs of the calling thread's affinity mask, in increasing order;
/// `None` if the mask cannot be read.
fn mask_cpus() -> Option<Vec<usize>> {
    // SAFETY: `set` is a plain bit mask that sched_getaffinity fills (pid
    // 0: the calling thread); CPU_ISSET only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect(),
        )
    }
}

/// The CPUs this process may run on (its affinity mask, as `taskset`,
/// Slurm's `--cpus-per-task` or mpirun's `--map-by ...:PE=N` set it); the
/// machine's parallelism (or 1) if the mask cannot be read.
pub fn affinity_cpus() -> usize {
    match mask_cpus() {
        Some(cpus) if !cpus.is_empty() => cpus.len(),
        _ => std::thread::available_parallelism().map_or(1, usize::from),
    }
}

/// Binds the calling thread to the `k`-th CPU (counted modulo their
/// number) of the process's affinity mask. Best effort: the thread stays
/// unbound when the mask cannot be read or set.
pub fn bind_this_thread_to_nth_cpu(k: usize) {
    let Some(cpus) = mask_cpus() else {
        return;
    };
    let Some(&cpu) = cpus.get(k % cpus.len().max(1)) else {
        return;
    };
    // SAFETY: `one` is a plain bit mask that CPU_SET writes and
    // sched_setaffinity reads; pid 0 is the calling thread.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_thread_runs_on_the_nth_cpu_of_the_mask_only() {
        let mask = mask_cpus().expect("the mask is readable");
        assert_eq!(affinity_cpus(), mask.len());
        for k in [0, 1, mask.len(), mask.len() + 1] {
            let got = std::thread::spawn(move || {
                bind_this_thread_to_nth_cpu(k);
                mask_cpus()
            })
            .join()
            .unwrap();
            assert_eq!(got, Some(vec![mask[k % mask.len()]]), "k = {k}");
        }
        // The thread that did not bind keeps the whole mask.
        assert_eq!(mask_cpus(), Some(mask));
    }
}
