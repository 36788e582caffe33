//! Template sources as the command line finds them: `file` sources next to the template
//! file, `url` sources downloaded (the operator chose these addresses, so no outbound
//! filter applies here; jobs from the API go through the worker's guarded client).

use std::path::Path;

pub use reelfarm_app::templates::local_file;

use anyhow::{bail, Context};
use tokio::io::AsyncWriteExt;

/// Largest source a download accepts.
const MAX_DOWNLOAD: u64 = 4 << 30;

/// Streams `url` into `target`, at most [`MAX_DOWNLOAD`] bytes.
pub async fn download(client: &reqwest::Client, url: &str, target: &Path) -> anyhow::Result<()> {
    let mut response = client.get(url).send().await.with_context(|| format!("downloading {url}"))?;
    if !response.status().is_success() {
        bail!("downloading {url}: HTTP {}", response.status());
    }
    let mut file = tokio::fs::File::create(target).await.with_context(|| format!("creating {}", target.display()))?;
    let mut written: u64 = 0;
    while let Some(chunk) = response.chunk().await.with_context(|| format!("downloading {url}"))? {
        written += chunk.len() as u64;
        if written > MAX_DOWNLOAD {
            bail!("downloading {url}: larger than {} GiB", MAX_DOWNLOAD >> 30);
        }
        file.write_all(&chunk).await?;
    }
    file.flush().await?;
    Ok(())
}
