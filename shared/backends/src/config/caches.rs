//! `[caches]`: the bytes each in-memory cache of a process may hold. Every cache a process
//! keeps between requests or jobs is bounded by one of these; what is kept for one job
//! only (a render's frames) is bounded by the render's memory estimate instead.

use super::keys::{key, Defaulted};
use super::sources::{parse, parse_bytes, Raw};
use super::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caches {
    /// Parsed template documents and recent visibility checks of an api process, half each.
    pub template_cache: usize,
    /// Decoded pictures a worker keeps between preview frames.
    pub still_cache: usize,
    /// Video decoders a worker keeps open between preview frames, weighed by their frames.
    pub video_cache: usize,
    /// Encoded sound mixes a worker keeps for the next render of the same sound.
    pub sound_cache: usize,
    /// Rasterised glyphs each thread that draws text keeps.
    pub glyph_cache: usize,
}

impl Caches {
    pub(super) fn read(raw: &Raw) -> Result<Caches, ConfigError> {
        let bytes =
            |key: Defaulted| parse(raw, key, |s| parse_bytes(s).map(|n| usize::try_from(n).unwrap_or(usize::MAX)));
        Ok(Caches {
            template_cache: bytes(key::template_cache)?,
            still_cache: bytes(key::still_cache)?,
            video_cache: bytes(key::video_cache)?,
            sound_cache: bytes(key::sound_cache)?,
            glyph_cache: bytes(key::glyph_cache)?,
        })
    }
}

impl Default for Caches {
    /// Every key's default (what `reelfarm render` and the tests run with).
    fn default() -> Caches {
        Caches::read(&Raw::default()).expect("the caches' defaults are sizes")
    }
}
