//! Local directory adapter of the blob port (the embedded default).
//!
//! Layout under the root directory:
//! - `KEY` — the blob's bytes, as a plain file (keys are validated relative paths);
//! - `KEY~meta` — a JSON sidecar with the content type;
//! - `~tmp/` — writes in progress.
//!
//! `~` never appears in a valid key, so neither sidecars nor the temp directory can clash
//! with a blob. A write goes to a temp file that is synced, then renamed over the key, so
//! a crash never leaves a half-written blob under a real key. A write that fails or is
//! dropped half-way (a cancelled render's upload, a client gone mid-upload) removes its
//! temp files; a crash leaves them, and they are removed when the store is next opened a
//! day later or more. The sidecar is renamed into place just after the blob; a crash
//! between the two renames leaves the new bytes with the previous content type.
//!
//! Unlike S3, a directory cannot hold both a blob `a` and a blob `a/b`: the second write
//! fails with an I/O error, so key schemes must not nest a key under another key.

use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt, BufReader};

use super::{BlobBackend, BlobError, BlobMeta, BlobRead, ByteRange, ByteStream};

const META_SUFFIX: &str = "~meta";
const TMP_DIR: &str = "~tmp";
const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";
/// Age past which a temp file is a crashed process's, not a write in progress: no write
/// takes this long (uploads and renders have time limits of hours at most).
const ORPHAN_AGE: Duration = Duration::from_secs(24 * 3600);
/// Copy buffer of writes: large enough that a big upload is not thousands of tiny writes.
const COPY_BUFFER: usize = 256 * 1024;

pub(crate) struct FsBlobs {
    root: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct Sidecar {
    content_type: String,
}

impl FsBlobs {
    /// Opens (creating it when missing) the directory `dir` as a blob store.
    pub(crate) async fn new(dir: &Path) -> Result<FsBlobs, BlobError> {
        let tmp = dir.join(TMP_DIR);
        tokio::fs::create_dir_all(&tmp).await?;
        let removed = tokio::task::spawn_blocking(move || remove_older(&tmp, SystemTime::now() - ORPHAN_AGE))
            .await
            .map_err(|e| BlobError::Backend(format!("temp sweep task: {e}")))?;
        if removed > 0 {
            tracing::info!(removed, "temp files of writes cut short by a crash removed from the blob store");
        }
        Ok(FsBlobs { root: dir.to_path_buf() })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    fn meta_path(&self, key: &str) -> PathBuf {
        self.root.join(format!("{key}{META_SUFFIX}"))
    }

    /// The keys of blob files under the root.
    fn keys(&self, files: &[PathBuf]) -> Vec<String> {
        files
            .iter()
            .filter_map(|f| f.strip_prefix(&self.root).ok())
            .map(|relative| relative.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/"))
            .collect()
    }

    fn temp_path(&self, what: &str) -> PathBuf {
        self.root.join(TMP_DIR).join(format!("{}~{what}", uuid::Uuid::new_v4()))
    }

    async fn content_type(&self, key: &str) -> Result<String, BlobError> {
        match tokio::fs::read(self.meta_path(key)).await {
            Ok(bytes) => Ok(serde_json::from_slice::<Sidecar>(&bytes)
                .map(|s| s.content_type)
                .unwrap_or_else(|_| DEFAULT_CONTENT_TYPE.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DEFAULT_CONTENT_TYPE.to_string()),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the blob's file, mapping a missing file (or a directory) to `NotFound`.
    async fn open(&self, key: &str) -> Result<(tokio::fs::File, u64), BlobError> {
        let file = tokio::fs::File::open(self.path(key)).await.map_err(|e| not_found_or(key, e))?;
        let meta = file.metadata().await?;
        if !meta.is_file() {
            return Err(BlobError::NotFound(key.to_string()));
        }
        Ok((file, meta.len()))
    }

    /// Writes the body and the sidecar to their temp files; returns the blob's size.
    async fn write_temp(
        &self,
        blob_tmp: &Path,
        meta_tmp: &Path,
        body: ByteStream,
        content_type: &str,
    ) -> Result<u64, BlobError> {
        let mut file = tokio::fs::File::create(blob_tmp).await?;
        let mut reader = BufReader::with_capacity(COPY_BUFFER, body);
        let size = tokio::io::copy_buf(&mut reader, &mut file).await?;
        file.flush().await?;
        file.sync_all().await?;
        let sidecar = serde_json::to_vec(&Sidecar { content_type: content_type.to_string() })
            .map_err(|e| BlobError::Backend(format!("encoding the sidecar: {e}")))?;
        tokio::fs::write(meta_tmp, sidecar).await?;
        Ok(size)
    }

    /// Moves the temp files under `key`: the blob, then its sidecar (each rename is atomic).
    async fn publish(&self, key: &str, blob_tmp: &Path, meta_tmp: &Path) -> Result<(), BlobError> {
        let target = self.path(key);
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::rename(blob_tmp, &target).await?;
        tokio::fs::rename(meta_tmp, self.meta_path(key)).await?;
        Ok(())
    }
}

#[async_trait]
impl BlobBackend for FsBlobs {
    async fn put(&self, key: &str, body: ByteStream, content_type: &str) -> Result<u64, BlobError> {
        let temp = TempFiles([self.temp_path("blob"), self.temp_path("meta")]);
        let [blob_tmp, meta_tmp] = &temp.0;
        let size = self.write_temp(blob_tmp, meta_tmp, body, content_type).await?;
        self.publish(key, blob_tmp, meta_tmp).await?;
        Ok(size)
    }

    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        let (mut file, size) = self.open(key).await?;
        let content_type = self.content_type(key).await?;
        let meta = BlobMeta { size, content_type };
        let Some(range) = range else {
            let end = size.saturating_sub(1);
            return Ok(BlobRead { body: Box::pin(file), meta, start: 0, end });
        };
        let end = match range.end {
            _ if range.start >= size => return Err(BlobError::RangeNotSatisfiable { size }),
            Some(end) if end < range.start => return Err(BlobError::RangeNotSatisfiable { size }),
            Some(end) => end.min(size - 1),
            None => size - 1,
        };
        file.seek(SeekFrom::Start(range.start)).await?;
        let body = file.take(end - range.start + 1);
        Ok(BlobRead { body: Box::pin(body), meta, start: range.start, end })
    }

    async fn head(&self, key: &str) -> Result<BlobMeta, BlobError> {
        let meta = tokio::fs::metadata(self.path(key)).await.map_err(|e| not_found_or(key, e))?;
        if !meta.is_file() {
            return Err(BlobError::NotFound(key.to_string()));
        }
        Ok(BlobMeta { size: meta.len(), content_type: self.content_type(key).await? })
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        for path in [self.path(key), self.meta_path(key)] {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // A directory under the key: not a blob, so there is nothing to delete.
                Err(_) if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError> {
        let dir = self.path(prefix.trim_end_matches('/'));
        tokio::task::spawn_blocking(move || remove_tree(&dir))
            .await
            .map_err(|e| BlobError::Backend(format!("delete_prefix task: {e}")))?
    }

    async fn delete_older(&self, prefix: &str, before: SystemTime) -> Result<u64, BlobError> {
        let dir = self.path(prefix.trim_end_matches('/'));
        let files = tokio::task::spawn_blocking(move || {
            let files = blob_files(&dir)?;
            // A file gone meanwhile (deleted by another process) is not counted.
            let old = |f: &PathBuf| std::fs::metadata(f).and_then(|m| m.modified()).is_ok_and(|t| t < before);
            Ok::<_, BlobError>(files.into_iter().filter(old).collect::<Vec<_>>())
        })
        .await
        .map_err(|e| BlobError::Backend(format!("delete_older task: {e}")))??;
        for key in self.keys(&files) {
            self.delete(&key).await?;
        }
        Ok(files.len() as u64)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        let dir = self.path(prefix.trim_end_matches('/'));
        let files = tokio::task::spawn_blocking(move || blob_files(&dir))
            .await
            .map_err(|e| BlobError::Backend(format!("list task: {e}")))??;
        let mut keys = self.keys(&files);
        keys.sort();
        Ok(keys)
    }

    async fn presign_get(&self, _key: &str, _ttl: Duration) -> Result<Option<String>, BlobError> {
        Ok(None)
    }

    async fn ready(&self) -> Result<(), BlobError> {
        let probe = TempFiles([self.temp_path("ready")]);
        tokio::fs::write(&probe.0[0], b"ok").await?;
        Ok(())
    }
}

/// The temp files of a write, removed when it ends however it ends: failed, dropped
/// half-way, or published (then they were renamed away and there is nothing to remove).
struct TempFiles<const N: usize>([PathBuf; N]);

impl<const N: usize> Drop for TempFiles<N> {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Removes the files directly in `dir` last modified before `before`; how many.
fn remove_older(dir: &Path, before: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let old = |e: &std::fs::DirEntry| e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < before);
    entries.flatten().filter(old).filter(|e| std::fs::remove_file(e.path()).is_ok()).count()
}

fn not_found_or(key: &str, e: std::io::Error) -> BlobError {
    match e.kind() {
        // `NotADirectory`: a path segment of the key is a blob, so the key cannot exist.
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => BlobError::NotFound(key.to_string()),
        _ => BlobError::Io(e),
    }
}

/// Removes the directory `dir` and everything below it; returns how many blobs it held.
fn remove_tree(dir: &Path) -> Result<u64, BlobError> {
    let count = blob_files(dir)?.len() as u64;
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(count),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => Ok(count),
        Err(e) => Err(e.into()),
    }
}

/// The blobs' files below the directory `dir` (none when it is missing or a file); sidecars
/// are not blobs.
fn blob_files(dir: &Path) -> Result<Vec<PathBuf>, BlobError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Ok(Vec::new()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e.into()),
    }
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() && !entry.file_name().to_string_lossy().contains('~') {
                files.push(entry.path());
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use tokio::io::AsyncWriteExt;

    use super::{remove_older, FsBlobs, TMP_DIR};
    use crate::blob::{BlobBackend, BlobError};

    fn temp_files(blobs: &FsBlobs) -> usize {
        std::fs::read_dir(blobs.root.join(TMP_DIR)).expect("temp dir").count()
    }

    #[tokio::test]
    async fn a_write_dropped_half_way_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blobs = FsBlobs::new(dir.path()).await.expect("fs blobs");
        // A body whose end never comes, as from a client that stopped sending.
        let (mut sender, body) = tokio::io::duplex(64);
        sender.write_all(b"the first bytes").await.expect("write");
        let mut put = Box::pin(blobs.put("dropped/blob", Box::pin(body), "text/plain"));
        while temp_files(&blobs) == 0 {
            // Polled until the write is under way (its temp file made); the body never ends.
            assert!(tokio::time::timeout(Duration::from_millis(10), &mut put).await.is_err());
        }
        drop(put);
        assert_eq!(temp_files(&blobs), 0);
        assert!(matches!(blobs.head("dropped/blob").await, Err(BlobError::NotFound(_))));
    }

    #[test]
    fn only_temp_files_older_than_the_bound_are_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["old", "new"] {
            std::fs::write(dir.path().join(name), b"x").expect("write");
        }
        let day_ago = SystemTime::now() - Duration::from_secs(24 * 3600 + 60);
        std::fs::File::options().write(true).open(dir.path().join("old")).unwrap().set_modified(day_ago).unwrap();
        assert_eq!(remove_older(dir.path(), SystemTime::now() - super::ORPHAN_AGE), 1);
        assert!(!dir.path().join("old").exists() && dir.path().join("new").exists());
    }
}
