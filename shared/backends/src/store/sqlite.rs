//! The embedded adapter: a SQLite file in the data dir, in WAL mode.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Executor};

use super::Result;

/// The page cache of each connection, KiB (SQLite's default is 2 MiB, which grows with the
/// database up to 8 MiB over 4 connections). Readers' caches are emptied whenever another
/// connection has written, which a busy farm does several times a second, so a big cache
/// buys little.
const PAGE_CACHE_KIB: u32 = 512;

/// What SQLite may hold in all, page caches, schemas and prepared statements together,
/// bytes: past it SQLite recycles cached pages instead of allocating new ones (its soft
/// heap limit, process-wide).
const HEAP_LIMIT: usize = 16 << 20;

/// Whether this process opened a SQLite database, so that its metrics show SQLite's memory.
static OPENED: AtomicBool = AtomicBool::new(false);

/// Publishes what SQLite holds against its limit as `reelfarm_cache_bytes{cache="sqlite"}`,
/// in a process that opened a database.
pub(crate) fn publish_memory() {
    if OPENED.load(Ordering::Relaxed) {
        // SAFETY: sqlite3_memory_used only reads SQLite's own counter.
        let used = unsafe { libsqlite3_sys::sqlite3_memory_used() };
        crate::metrics::cache_bytes("sqlite", used.max(0) as usize, HEAP_LIMIT);
    }
}

/// Opens (creating if needed) the database file of `url`.
pub(super) async fn connect(url: &str, options: AnyPoolOptions) -> Result<AnyPool> {
    let path = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    let in_memory = path.starts_with(":memory:") || path.contains("mode=memory");
    if !in_memory {
        let file = path.split('?').next().unwrap_or(path);
        if let Some(dir) = std::path::Path::new(file).parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| sqlx::Error::Configuration(e.into()))?;
        }
    }
    let url = if in_memory || url.contains("mode=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    };
    let pool = options
        // SQLite has one writer; a few connections let reads proceed beside it. An
        // in-memory database exists per connection, so it gets exactly one.
        .max_connections(if in_memory { 1 } else { 4 })
        .after_connect(|conn, _| {
            Box::pin(async move {
                let pragmas = format!(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
                     PRAGMA busy_timeout = 15000; PRAGMA cache_size = -{PAGE_CACHE_KIB}; \
                     PRAGMA soft_heap_limit = {HEAP_LIMIT};"
                );
                conn.execute(pragmas.as_str()).await?;
                Ok(())
            })
        })
        .idle_timeout(Duration::from_secs(600))
        .connect(&url)
        .await?;
    OPENED.store(true, Ordering::Relaxed);
    Ok(pool)
}
