//! Process-wide tuning applied at start-up.

/// What the allocator settings favour (see [`tune_allocator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocatorProfile {
    /// Fastest reading of one stream (mmap threshold 256 MiB; `dump`,
    /// `synth`).
    Throughput,
    /// Small resident size at the same end-to-end rate (mmap threshold
    /// 16 MiB; `run`).
    Resident,
}

/// Keeps large buffers in the heap instead of mapping and unmapping them.
///
/// ADIOS2 allocates and frees buffers of the step's size every step (tens
/// of MiB). With glibc's defaults each one is a fresh `mmap`, so every step
/// pays page faults and zeroing for memory it just released. Raising the
/// mmap and trim thresholds lets the allocator reuse those pages; the
/// memory kept is bounded by the largest step. Values the user set in
/// `MALLOC_MMAP_THRESHOLD_` / `MALLOC_TRIM_THRESHOLD_` are kept.
///
/// Two settings, because speed and resident size pull apart:
/// - [`AllocatorProfile::Throughput`] (256 MiB, `dump` and `synth`): one
///   stream read as fast as possible;
/// - [`AllocatorProfile::Resident`] (16 MiB, `run`): buffers up to a few MiB
///   are reused, step-sized ones are mapped and unmapped, so the peak
///   resident size stays near what is live; `run` reads its streams on
///   threads beside the analysis, so this costs it no speed.
///
/// `run` also caps glibc at two malloc arenas (the main thread's and one
/// for the stream readers and MPI's threads): otherwise glibc opens another
/// arena whenever a thread finds its own locked, which depends on timing,
/// and with the high trim threshold such an arena keeps what was freed in
/// it, so peak memory would vary from run to run. `MALLOC_ARENA_MAX` set
/// by the user wins. `scripts/bench.sh --only memory` measures the result
/// (`docs/benchmarks.md`, "Memory").
pub fn tune_allocator(profile: AllocatorProfile) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mmap_threshold: libc::c_int = match profile {
            AllocatorProfile::Throughput => 256 << 20,
            AllocatorProfile::Resident => 16 << 20,
        };
        const TRIM_THRESHOLD: libc::c_int = 512 << 20;
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            // SAFETY: mallopt only changes allocator parameters; called before
            // any other thread exists.
            unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, mmap_threshold) };
        }
        if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none() {
            // SAFETY: as above.
            unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) };
        }
        if profile == AllocatorProfile::Resident && std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            // SAFETY: as above.
            unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
        }
    }
}

/// Peak resident set size of this process in KiB (0 if unknown).
pub fn peak_rss_kb() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) == 0 {
            u.ru_maxrss.max(0) as u64
        } else {
            0
        }
    }
}

/// Current resident set size of this process in KiB (0 if unknown).
pub fn current_rss_kb() -> u64 {
    // /proc/self/statm: size resident shared ... (in pages).
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    pages * page / 1024
}
