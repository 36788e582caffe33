//! The embedded adapter: a SQLite file in the data dir, in WAL mode.

use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Executor};

use super::Result;

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
                conn.execute(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 15000;",
                )
                .await?;
                Ok(())
            })
        })
        .idle_timeout(Duration::from_secs(600))
        .connect(&url)
        .await?;
    Ok(pool)
}
