//! The few big buffers that every step fills and then walks: making room
//! for a step without copying, and huge-page hints.

/// Makes room for `n` elements in the empty `v` (a step's buffer, cleared
/// for the next step) and advises huge pages for them. A plain `reserve`
/// would `realloc`, which copies the whole old allocation although nothing
/// in it is kept: megabytes for a big step.
pub fn reserve_empty<T>(v: &mut Vec<T>, n: usize) {
    debug_assert!(v.is_empty());
    if v.capacity() < n {
        *v = Vec::with_capacity(n.max(2 * v.capacity()));
        advise_huge_pages(v, n);
    }
}

/// Asks the kernel to back `v`'s buffer with transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`) where it will hold its first `fill`
/// elements. For buffers of several MiB that each step fills and then
/// walks more than once (a big step's executions): with 4 KiB pages such a
/// buffer spans thousands of pages, more than the TLB holds, so every pass
/// misses in it, and its first filling takes a page fault per 4 KiB.
///
/// Only whole 2 MiB pages inside the first `fill` elements are advised: a
/// huge page is resident as soon as one byte of it is touched, so advising
/// capacity beyond what is filled would add to the resident memory.
///
/// A hint only: where the kernel does not offer transparent huge pages,
/// nothing changes.
pub fn advise_huge_pages<T>(v: &Vec<T>, fill: usize) {
    const HUGE: usize = 2 << 20;
    let bytes = fill.min(v.capacity()) * std::mem::size_of::<T>();
    let start = v.as_ptr() as usize;
    let (lo, hi) = (start.next_multiple_of(HUGE), (start + bytes) / HUGE * HUGE);
    if hi <= lo {
        return;
    }
    // SAFETY: [lo, hi) lies inside the vector's own allocation;
    // MADV_HUGEPAGE changes how it is backed, never its contents.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
    }
}
