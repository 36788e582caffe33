//! Encoded sound, kept per process. A template's sound rarely depends on the job's values
//! (a soundtrack, a jingle under the titles), so the renders of one template would decode,
//! mix and AAC-encode the same samples again and again: about a quarter of a short
//! render's CPU. The key is a SHA-256 over everything the mix and the encoder depend on:
//! every track's source bytes, its placement, trim, loop, volume and fades, the total
//! length, the sample rate and the encoder. On a hit the render writes the kept packets
//! (byte for byte what the encoder made); a miss encodes as usual and keeps the packets
//! once the render finished.

use std::io::Read;
use std::sync::{Arc, LazyLock, Mutex};

use ffmpeg_next::Packet;
use lru::LruCache;
use sha2::{Digest, Sha256};

use super::audio::TrackSpec;
use super::plan::SAMPLE_RATE;

/// What the kept packets may take in memory, together (about 50 minutes of sound at
/// 160 kbit/s).
const BUDGET_BYTES: usize = 64 * 1024 * 1024;
/// Sources bigger than this together are not hashed (a long video's sound): reading them
/// would cost more than encoding saves.
const MAX_SOURCE_BYTES: u64 = 256 * 1024 * 1024;

/// The identity of a render's sound.
pub(crate) type Key = [u8; 32];

/// The packets of one render's sound, in the encoder's time base (1/48000).
pub(crate) struct Kept {
    pub(crate) packets: Vec<Packet>,
    bytes: usize,
}

impl Kept {
    pub(crate) fn new(packets: Vec<Packet>) -> Kept {
        // The payload plus, roughly, the packet structure and buffer header around it.
        let bytes = packets.iter().map(|p| p.size() + 128).sum();
        Kept { packets, bytes }
    }
}

struct Cache {
    entries: LruCache<Key, Arc<Kept>>,
    bytes: usize,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(Cache { entries: LruCache::unbounded(), bytes: 0 }));

/// The key of a mix of `tracks` lasting `samples` samples, encoded by `encoder`; `None`
/// when the sources are too big to hash or cannot be read (the render then encodes and
/// reports a bad source itself).
pub(crate) fn key(tracks: &[TrackSpec], samples: u64, encoder: &str) -> Option<Key> {
    let mut total = 0u64;
    for track in tracks {
        total += std::fs::metadata(&track.path).ok()?.len();
    }
    if total > MAX_SOURCE_BYTES {
        return None;
    }
    let mut hash = Sha256::new();
    hash.update(encoder.as_bytes());
    hash.update([0]);
    for n in [u64::from(SAMPLE_RATE), samples, tracks.len() as u64] {
        hash.update(n.to_le_bytes());
    }
    let mut buffer = vec![0u8; 256 * 1024];
    for track in tracks {
        for n in [track.start, track.end, u64::from(track.looping)] {
            hash.update(n.to_le_bytes());
        }
        for x in [track.trim, track.volume, track.fade_in, track.fade_out] {
            hash.update(x.to_bits().to_le_bytes());
        }
        let mut file = std::fs::File::open(&track.path).ok()?;
        let mut length = 0u64;
        loop {
            let n = file.read(&mut buffer).ok()?;
            if n == 0 {
                break;
            }
            hash.update(&buffer[..n]);
            length += n as u64;
        }
        // The length ends each file's bytes, so no two lists of files hash alike.
        hash.update(length.to_le_bytes());
    }
    Some(hash.finalize().into())
}

/// The kept sound of `key`, if any.
pub(crate) fn get(key: &Key) -> Option<Arc<Kept>> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.entries.get(key).cloned()
}

/// Forgets every kept sound (benchmarks measuring a first render).
pub(crate) fn clear() {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.entries.clear();
    cache.bytes = 0;
}

/// Keeps `kept` under `key`, dropping the least recently used entries beyond the budget.
pub(crate) fn put(key: Key, kept: Kept) {
    if kept.bytes > BUDGET_BYTES / 4 {
        return;
    }
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = kept.bytes;
    if let Some(old) = cache.entries.put(key, Arc::new(kept)) {
        cache.bytes -= old.bytes;
    }
    cache.bytes += bytes;
    while cache.bytes > BUDGET_BYTES {
        match cache.entries.pop_lru() {
            Some((_, old)) => cache.bytes -= old.bytes,
            None => break,
        }
    }
}
