//! What previews keep between the snapshots of an editing session, which draws frames of
//! one template from the same files again and again: decoded stills, the probes of the
//! sources, and video readers left where their last frame was — scrubbing forward goes
//! on decoding instead of seeking, and the frame asked again after an edit is not decoded
//! at all. Files are known by path, length and modification time, so a changed file is
//! read again. Renders keep nothing.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::image::{Still, StillCache};
use super::video::VideoReader;
use crate::media::{self, Limits, MediaError, Probe};

/// A file as it is now: path, length, modification time.
pub(crate) type FileKey = (PathBuf, u64, SystemTime);

/// A video reader's file, trim point (bits of the seconds) and looping.
pub(crate) type VideoKey = (FileKey, u64, bool);

/// Probes kept (a few hundred bytes each).
const PROBES: NonZeroUsize = NonZeroUsize::new(512).unwrap();

/// Video readers kept: each holds a decoder with its reference frames (tens of MB at
/// 1080p), enough for the video layers of a few templates being edited at once.
pub const KEPT_VIDEOS: usize = 6;

pub(crate) fn file_key(path: &Path) -> std::io::Result<FileKey> {
    let meta = std::fs::metadata(path)?;
    Ok((path.to_path_buf(), meta.len(), meta.modified()?))
}

/// What snapshots keep for the next ones; shared by the threads drawing them.
pub struct SnapshotCache {
    stills: StillCache,
    probes: Mutex<lru::LruCache<FileKey, Probe>>,
    /// Most recently kept first.
    videos: Mutex<VecDeque<VideoReader>>,
}

impl SnapshotCache {
    /// Keeps up to `still_bytes` of decoded pictures.
    pub fn new(still_bytes: usize) -> SnapshotCache {
        SnapshotCache {
            stills: StillCache::new(still_bytes),
            probes: Mutex::new(lru::LruCache::new(PROBES)),
            videos: Mutex::new(VecDeque::new()),
        }
    }

    pub(crate) fn still(&self, path: &Path, limits: &Limits) -> Result<Option<Arc<Still>>, MediaError> {
        self.stills.open(path, limits)
    }

    /// [`media::probe`] of `path`, probed once while it stays in the cache.
    pub(crate) fn probe(&self, path: &Path, limits: &Limits) -> Result<Probe, MediaError> {
        let key = file_key(path)?;
        if let Some(probe) = self.probes.lock().expect("probe cache lock").get(&key) {
            return Ok(probe.clone());
        }
        let probe = media::probe(path, limits)?;
        self.probes.lock().expect("probe cache lock").put(key, probe.clone());
        Ok(probe)
    }

    /// A kept reader of `key`, the most recently kept first; it is the caller's until
    /// given back.
    pub(crate) fn take_video(&self, key: &VideoKey) -> Option<VideoReader> {
        let mut videos = self.videos.lock().expect("video cache lock");
        let at = videos.iter().position(|r| &r.key == key)?;
        videos.remove(at)
    }

    /// Keeps `reader` for the next snapshot; the least recently kept one beyond
    /// [`KEPT_VIDEOS`] is closed.
    pub(crate) fn keep_video(&self, reader: VideoReader) {
        let mut videos = self.videos.lock().expect("video cache lock");
        videos.push_front(reader);
        videos.truncate(KEPT_VIDEOS);
    }

    /// Video readers kept.
    #[cfg(test)]
    pub(crate) fn videos(&self) -> usize {
        self.videos.lock().expect("video cache lock").len()
    }
}
