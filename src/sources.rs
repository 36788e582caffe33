//! Template sources as the command line finds them: `file` sources next to the template
//! file, `url` sources downloaded (the operator chose these addresses, so no outbound
//! filter applies here; jobs from the API go through the worker's guarded client).

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};
use tokio::io::AsyncWriteExt;

/// Largest source a download accepts.
const MAX_DOWNLOAD: u64 = 4 << 30;

/// A `file` source resolved against `dir`: a relative path with no `..` (and no
/// backslash) naming a regular file.
pub fn local_file(dir: &Path, file: &str) -> Result<PathBuf, String> {
    let relative = Path::new(file);
    let inside = relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside || file.contains('\\') {
        return Err(format!(
            "{file:?} must be a relative path inside the template's directory (not absolute, no `..`)"
        ));
    }
    let path = dir.join(relative);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(format!("{} is not a file", path.display())),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sources_stay_inside_the_template_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("media")).unwrap();
        std::fs::write(dir.path().join("media/a.png"), b"x").unwrap();
        assert_eq!(local_file(dir.path(), "media/a.png").unwrap(), dir.path().join("media/a.png"));
        for bad in ["/etc/passwd", "../a.png", "media/../../x", "..\\a.png"] {
            let err = local_file(dir.path(), bad).unwrap_err();
            assert!(err.contains("relative path") && err.contains("no `..`"), "{bad}: {err}");
        }
        assert!(local_file(dir.path(), "media").unwrap_err().contains("is not a file"));
        assert!(local_file(dir.path(), "media/b.png").unwrap_err().contains("cannot read"));
    }
}
