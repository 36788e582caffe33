//! The allocator: glibc's malloc on Linux, whose arenas keep what is freed for the next
//! allocation. After a render or a conversion that is tens of MiB per worker thread,
//! resident but free (seen in the soak: a worker's RSS 75 MiB above the heap it used).
//! Here: its settings, how much it holds (for the metrics), and giving back what it keeps
//! free once a big piece of work ends. Elsewhere (another allocator or system) all three
//! do nothing.

/// Sets the allocator up for a process of long-lived threads that each work on big
/// buffers now and then; called first thing in `main`, before any thread starts.
///
/// - glibc raises its mmap threshold each time a big block is freed, after which the 8 MiB
///   upload parts come from its heap arenas and stay resident there, fragmented: a 4 GiB
///   upload then grew the api by 40 MiB. A fixed threshold serves every block of 1 MiB or
///   more by `mmap` and unmaps it when freed, so streaming holds constant memory.
/// - glibc gives each thread that meets a locked arena a new one, up to 8 per core: a
///   worker's decoder, encoder and runtime threads then each keep their own arena's free
///   memory, which grew a worker by 5 MiB an hour in the soak; two held it flat
///   (docs/performance.md). An operator's `MALLOC_ARENA_MAX`, which glibc reads itself,
///   is left in force.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; it is called before any thread
    // is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        }
    }
}

/// The heap arenas glibc may create (see `configure`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENAS: i32 = 2;

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
