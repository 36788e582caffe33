//! The allocator: glibc's malloc on Linux, whose arenas keep what is freed for the next
//! allocation. After a render or a conversion that is tens of MiB per worker thread,
//! resident but free (seen in the soak: a worker's RSS 75 MiB above the heap it used).
//! Here: its settings, how much it holds (for the metrics), and giving back what it keeps
//! free once a big piece of work ends and every few seconds. Elsewhere (another
//! allocator or system) all of it does nothing.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

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
/// - Transparent huge pages are off for the process. x264 marks its large buffers for them
///   (`MADV_HUGEPAGE`, 27 times in a 720p render), and with huge pages on, the kernel's
///   khugepaged filled ranges of glibc's heap back into whole 2 MiB pages while the
///   process sat idle: the memory `give_back_free_memory` had returned came back (+14 MiB
///   in 30 s at rest in the soak, level with them off), and a 1080p render peaked 13 MiB
///   higher for the same speed (docs/performance.md).
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters, and PR_SET_THP_DISABLE one flag
    // of the process's memory; both are called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        }
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
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
/// when a render, a part or a conversion ends and every few seconds
/// ([`give_back_periodically`]), not on every allocation.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How often [`give_back_periodically`] gives back what the allocator keeps free.
const GIVE_BACK_EVERY: Duration = Duration::from_secs(10);

/// Gives back what the allocator keeps free every [`GIVE_BACK_EVERY`] until `stop`. A
/// render, a part or a conversion does so when it ends; what ends without a unit (an api
/// request that streamed a file, a preview frame, a delivery) left its memory free but
/// resident until the next unit ended: an embedded process that had rendered its last
/// video kept 40 MiB more than after warm-up, at rest. A give-back with nothing to return costs one walk of
/// the free lists.
pub async fn give_back_periodically(stop: CancellationToken) {
    let mut every = tokio::time::interval(GIVE_BACK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = stop.cancelled() => return,
        }
        // It holds each arena's lock while it walks it: not on a runtime thread.
        let _ = tokio::task::spawn_blocking(give_back_free_memory).await;
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    #[test]
    fn configure_turns_transparent_huge_pages_off() {
        super::configure();
        // SAFETY: PR_GET_THP_DISABLE only reads the process's flag.
        assert_eq!(unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) }, 1);
    }
}
