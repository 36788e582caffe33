//! The allocator: glibc's malloc on Linux, whose arenas keep what is freed for the next
//! allocation. After a render or a conversion that is tens of MiB per worker thread,
//! resident but free (seen in the soak: a worker's RSS 75 MiB above the heap it used).
//! Here: how much it holds, for the metrics, and giving back what it keeps free once a
//! big piece of work ends. Elsewhere (another allocator or system) both do nothing.

/// Bytes in use (arena and mmapped chunks) and bytes free inside the arenas.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn heap() -> Option<(u64, u64)> {
    // SAFETY: mallinfo2 only reads the allocator's counters (under the arenas' locks).
    let info = unsafe { libc::mallinfo2() };
    Some(((info.uordblks + info.hblkhd) as u64, info.fordblks as u64))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn heap() -> Option<(u64, u64)> {
    None
}

/// Returns the free memory of every arena to the system (`malloc_trim`: the top of each
/// heap released, the free pages inside them advised away). Milliseconds at most; called
/// when a render, a part or a conversion ends, not on every allocation.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}
