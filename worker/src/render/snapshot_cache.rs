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

use reelfarm_backends::metrics;
use reelfarm_domain::cost;

use super::image::{Still, StillCache};
use super::video::VideoReader;
use crate::media::{self, Limits, MediaError, Probe};

/// A file as it is now: path, length, modification time.
pub(crate) type FileKey = (PathBuf, u64, SystemTime);

/// A video reader's file, trim point (bits of the seconds) and looping.
pub(crate) type VideoKey = (FileKey, u64, bool);

/// Probes kept (a few hundred bytes each).
const PROBES: NonZeroUsize = NonZeroUsize::new(512).unwrap();

/// What a kept reader weighs: its decoder's frames, as a render's estimate counts them.
fn weight(reader: &VideoReader) -> u64 {
    cost::decoder_bytes(reader.width, reader.height)
}

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
    /// What the kept readers may weigh together ([`cost::decoder_bytes`] each).
    video_bytes: u64,
}

impl SnapshotCache {
    /// Keeps up to `still_bytes` of decoded pictures and `video_bytes` of video readers.
    pub fn new(still_bytes: usize, video_bytes: usize) -> SnapshotCache {
        SnapshotCache {
            stills: StillCache::new(still_bytes),
            probes: Mutex::new(lru::LruCache::new(PROBES)),
            videos: Mutex::new(VecDeque::new()),
            video_bytes: video_bytes as u64,
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
        let taken = videos.remove(at);
        self.publish(&videos);
        taken
    }

    /// Keeps `reader` for the next snapshot; the least recently kept ones beyond the
    /// readers' bytes are closed (`reader` too when it alone weighs more than a quarter).
    pub(crate) fn keep_video(&self, reader: VideoReader) {
        if weight(&reader) > self.video_bytes / 4 {
            return;
        }
        let mut videos = self.videos.lock().expect("video cache lock");
        videos.push_front(reader);
        let mut total = 0;
        let fit = videos
            .iter()
            .take_while(|r| {
                total += weight(r);
                total <= self.video_bytes
            })
            .count();
        videos.truncate(fit);
        self.publish(&videos);
    }

    /// `reelfarm_cache_bytes{cache="video"}`: what the kept readers weigh.
    fn publish(&self, videos: &VecDeque<VideoReader>) {
        let held = videos.iter().map(weight).sum::<u64>();
        metrics::cache_bytes("video", held as usize, self.video_bytes as usize);
    }

    /// Video readers kept.
    #[cfg(test)]
    pub(crate) fn videos(&self) -> usize {
        self.videos.lock().expect("video cache lock").len()
    }
}
