//! The distributed adapter: PostgreSQL, shared by every api, worker and notifier replica.

use sqlx::any::AnyPoolOptions;
use sqlx::AnyPool;

use super::Result;

pub(super) async fn connect(url: &str, options: AnyPoolOptions) -> Result<AnyPool> {
    Ok(options.max_connections(16).min_connections(1).connect(url).await?)
}
