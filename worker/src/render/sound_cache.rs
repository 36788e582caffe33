//! Encoded sound, kept per process and, through a [`SoundStore`], per fleet. A template's
//! sound rarely depends on the job's values (a soundtrack, a jingle under the titles), so
//! the renders of one template would decode, mix and AAC-encode the same samples again and
//! again: about a quarter of a short render's CPU. The key is a SHA-256 over everything
//! the mix and the encoder depend on: every track's source bytes, its placement, trim,
//! loop, volume and fades, the total length, the sample rate, the encoder and the version
//! of libavcodec. On a hit the render writes the kept packets (byte for byte what the
//! encoder made); a miss of the process's cache asks the store (the worker's blob store,
//! see `SoundStore`), and a miss there too encodes as usual and keeps the packets — in the
//! process and in the store — once the render finished.

use std::io::Read;
use std::sync::{Arc, LazyLock, Mutex};

use ffmpeg_next::{packet, Packet};
use reelfarm_backends::config::Caches;
use reelfarm_backends::weighed::WeighedLru;
use reelfarm_domain::job::SoundLevel;
use sha2::{Digest, Sha256};

use super::audio::TrackSpec;
use super::plan::SAMPLE_RATE;
use super::SoundStore;

/// First bytes of a stored sound (format version 2: with its sound level).
const MAGIC: &[u8; 8] = b"rfsound2";
/// Bytes of the stored sound level.
const LEVEL_BYTES: usize = 16;
/// Bytes of a stored packet's header: pts, dts, duration, flags, size.
const PACKET_HEADER: usize = 8 * 3 + 4 + 4;

/// Sources bigger than this together are not hashed (a long video's sound): reading them
/// would cost more than encoding saves.
const MAX_SOURCE_BYTES: u64 = 256 * 1024 * 1024;

/// The identity of a render's sound.
pub(crate) type Key = [u8; 32];

/// The packets of one render's sound, in the encoder's time base (1/48000), and what the
/// mix measured.
pub(crate) struct Kept {
    pub(crate) packets: Vec<Packet>,
    pub(crate) level: Option<SoundLevel>,
    bytes: usize,
}

impl Kept {
    pub(crate) fn new(packets: Vec<Packet>, level: Option<SoundLevel>) -> Kept {
        // The payload plus, roughly, the packet structure and buffer header around it.
        let bytes = packets.iter().map(|p| p.size() + 128).sum();
        Kept { packets, level, bytes }
    }

    /// The packets as stored: [`MAGIC`], the loudness and true peak (`f64`, NaN for
    /// silence), then each packet's pts, dts and duration (`i64`, `i64::MIN` for none),
    /// flags and size (`u32`) and bytes, little-endian.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + LEVEL_BYTES + self.bytes);
        out.extend_from_slice(MAGIC);
        let level = self.level.map_or([f64::NAN; 2], |l| [l.loudness, l.true_peak]);
        for x in level {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for p in &self.packets {
            for n in [p.pts(), p.dts(), Some(p.duration())] {
                out.extend_from_slice(&n.unwrap_or(i64::MIN).to_le_bytes());
            }
            out.extend_from_slice(&(p.flags().bits() as u32).to_le_bytes());
            let data = p.data().unwrap_or_default();
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(data);
        }
        out
    }

    /// The packets of [`Kept::to_bytes`]; `None` for anything else.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Kept> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let float = |at: usize| f64::from_le_bytes(rest[at..at + 8].try_into().expect("8 bytes"));
        let (loudness, true_peak) = (rest.len() >= LEVEL_BYTES).then(|| (float(0), float(8)))?;
        let level = (!loudness.is_nan()).then_some(SoundLevel { loudness, true_peak });
        let mut rest = &rest[LEVEL_BYTES..];
        let mut packets = Vec::new();
        while !rest.is_empty() {
            let header = rest.get(..PACKET_HEADER)?;
            let int = |at: usize| i64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
            let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
            let time = |n: i64| (n != i64::MIN).then_some(n);
            let size = word(28) as usize;
            let mut p = Packet::copy(rest.get(PACKET_HEADER..PACKET_HEADER + size)?);
            p.set_pts(time(int(0)));
            p.set_dts(time(int(8)));
            p.set_duration(int(16));
            p.set_flags(packet::Flags::from_bits_truncate(word(24) as i32));
            packets.push(p);
            rest = &rest[PACKET_HEADER + size..];
        }
        Some(Kept::new(packets, level))
    }
}

/// The name of the sound of `key` for a [`SoundStore`]: the key in hex.
fn stored_name(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// The process's kept sounds, up to `sound_cache` bytes (the default, 64 MiB, is about 50
/// minutes of sound at 160 kbit/s).
static CACHE: LazyLock<Mutex<WeighedLru<Key, Arc<Kept>>>> =
    LazyLock::new(|| Mutex::new(WeighedLru::named("sound", Caches::default().sound_cache)));

/// Keeps up to `bytes` of sound from now on, forgetting what was kept.
pub(crate) fn set_limit(bytes: usize) {
    *CACHE.lock().unwrap_or_else(|e| e.into_inner()) = WeighedLru::named("sound", bytes);
}

/// The mix's own version: a change to how sounds are mixed or kept (loops at the declared
/// end, the sound level kept with the packets) makes the sounds kept before it miss.
const MIX: &str = "mix-3";

/// The key of a mix of `tracks` lasting `samples` samples, encoded by `encoder` and
/// brought to `loudness`; `None` when the sources are too big to hash or cannot be read
/// (the render then encodes and reports a bad source itself).
pub(crate) fn key(tracks: &[TrackSpec], samples: u64, encoder: &str, loudness: Option<f64>) -> Option<Key> {
    let mut total = 0u64;
    for track in tracks {
        total += std::fs::metadata(&track.path).ok()?.len();
    }
    if total > MAX_SOURCE_BYTES {
        return None;
    }
    let mut hash = Sha256::new();
    hash.update(MIX.as_bytes());
    hash.update(loudness.unwrap_or(f64::NAN).to_le_bytes());
    hash.update(encoder.as_bytes());
    hash.update([0]);
    hash.update(ffmpeg_next::codec::version().to_le_bytes());
    for n in [u64::from(SAMPLE_RATE), samples, tracks.len() as u64] {
        hash.update(n.to_le_bytes());
    }
    let mut buffer = vec![0u8; 256 * 1024];
    for track in tracks {
        let duck = track.duck.map_or([0.0; 3], |d| [d.db, d.attack, d.release]);
        for n in
            [track.start, track.end, u64::from(track.looping), u64::from(track.with_picture), u64::from(track.voice)]
        {
            hash.update(n.to_le_bytes());
        }
        for x in [track.trim, track.volume, track.fade_in, track.fade_out].into_iter().chain(duck) {
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

/// The kept sound of `key`, if any: the process's, else the store's (then kept in the
/// process too).
pub(crate) fn get(key: &Key, store: Option<&dyn SoundStore>) -> Option<Arc<Kept>> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(kept) = cache.get(key) {
        return Some(kept.clone());
    }
    drop(cache);
    let stored = store?.get(&stored_name(key))?;
    let Some(kept) = Kept::from_bytes(&stored) else {
        tracing::warn!(name = %stored_name(key), "a stored sound is not readable; encoding it again");
        return None;
    };
    let kept = Arc::new(kept);
    keep(*key, kept.clone());
    Some(kept)
}

/// Forgets every kept sound (benchmarks measuring a first render).
pub(crate) fn clear() {
    CACHE.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Keeps `kept` under `key`, in the store when there is one and in the process.
pub(crate) fn put(key: Key, kept: Kept, store: Option<&dyn SoundStore>) {
    if let Some(store) = store {
        store.put(&stored_name(&key), kept.to_bytes());
    }
    keep(key, Arc::new(kept));
}

/// Keeps `kept` in the process, dropping the least recently used entries beyond the limit.
fn keep(key: Key, kept: Arc<Kept>) {
    let bytes = kept.bytes;
    CACHE.lock().unwrap_or_else(|e| e.into_inner()).put(key, kept, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_packets_read_back_byte_for_byte() {
        let mut first = Packet::copy(b"\x21\x10frame one");
        first.set_pts(Some(0));
        first.set_dts(Some(-1024));
        first.set_duration(1024);
        first.set_flags(packet::Flags::KEY);
        let mut second = Packet::copy(b"");
        second.set_pts(None);
        second.set_duration(0);
        let level = Some(SoundLevel { loudness: -14.02, true_peak: -1.6 });
        let kept = Kept::new(vec![first, second], level);
        let bytes = kept.to_bytes();
        let back = Kept::from_bytes(&bytes).expect("readable");
        assert_eq!(back.to_bytes(), bytes);
        assert_eq!(back.level, level);
        let silent = Kept::new(Vec::new(), None);
        assert_eq!(Kept::from_bytes(&silent.to_bytes()).expect("readable").level, None);
        let p = &back.packets[0];
        assert_eq!(
            (p.pts(), p.dts(), p.duration(), p.is_key(), p.data()),
            (Some(0), Some(-1024), 1024, true, Some(&b"\x21\x10frame one"[..]))
        );
        assert_eq!(back.packets[1].pts(), None);
        // Cut short or foreign: not a sound.
        assert!(Kept::from_bytes(&bytes[..bytes.len() - 1]).is_none());
        assert!(Kept::from_bytes(b"RIFF....WAVE").is_none());
    }
}
