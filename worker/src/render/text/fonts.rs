//! The bundled fonts, embedded in the binary, and the per-thread font system over them.
//!
//! One database is built per process from the embedded bytes (no copies: fontdb borrows
//! the `'static` slices). Each rendering thread gets its own `FontSystem` (shaping caches)
//! and `SwashCache` (rasterised glyphs), so threads never wait on each other.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use cosmic_text::fontdb::{Database, Source};
use cosmic_text::{FontSystem, SwashCache};
use reelfarm_backends::config::Caches;

macro_rules! faces {
    ($($file:literal),* $(,)?) => {
        &[$(include_bytes!(concat!("../../../../fonts/", $file))),*]
    };
}

/// Every bundled face: regular, bold, italic and bold-italic of each family in
/// `reelfarm_domain::template::fonts::FAMILIES`.
const FACES: &[&[u8]] = faces!(
    "LiberationSans-Regular.ttf",
    "LiberationSans-Bold.ttf",
    "LiberationSans-Italic.ttf",
    "LiberationSans-BoldItalic.ttf",
    "LiberationSerif-Regular.ttf",
    "LiberationSerif-Bold.ttf",
    "LiberationSerif-Italic.ttf",
    "LiberationSerif-BoldItalic.ttf",
    "LiberationMono-Regular.ttf",
    "LiberationMono-Bold.ttf",
    "LiberationMono-Italic.ttf",
    "LiberationMono-BoldItalic.ttf",
);

/// Bytes of rasterised glyphs each thread keeps before its cache is emptied
/// (`glyph_cache`).
static GLYPH_CACHE_BYTES: LazyLock<AtomicUsize> = LazyLock::new(|| AtomicUsize::new(Caches::default().glyph_cache));

/// What a kept glyph weighs beside its pixels (key, placement, the map's slot).
const GLYPH_ENTRY_BYTES: usize = 96;

/// Has each thread keep up to `bytes` of rasterised glyphs.
pub(crate) fn set_glyph_limit(bytes: usize) {
    GLYPH_CACHE_BYTES.store(bytes, Ordering::Relaxed);
}

pub(super) fn database() -> &'static Database {
    static DATABASE: OnceLock<Database> = OnceLock::new();
    DATABASE.get_or_init(|| {
        let mut db = Database::new();
        for face in FACES {
            let bytes: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(*face);
            db.load_font_source(Source::Binary(bytes));
        }
        db.set_sans_serif_family("Liberation Sans");
        db.set_serif_family("Liberation Serif");
        db.set_monospace_family("Liberation Mono");
        db
    })
}

/// Whether `family` is one of the embedded families.
pub(super) fn has_family(family: &str) -> bool {
    database().faces().any(|face| face.families.iter().any(|(name, _)| name == family))
}

/// A thread's font system and glyph cache, and how many glyphs the cache held when its
/// bytes were last counted.
struct Fonts {
    system: FontSystem,
    glyphs: SwashCache,
    counted: usize,
}

thread_local! {
    static FONTS: RefCell<Option<Fonts>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's font system and glyph cache.
pub(super) fn with_fonts<R>(f: impl FnOnce(&mut FontSystem, &mut SwashCache) -> R) -> R {
    FONTS.with(|cell| {
        let mut slot = cell.borrow_mut();
        let fonts = slot.get_or_insert_with(|| Fonts {
            system: FontSystem::new_with_locale_and_db("en-US".to_owned(), database().clone()),
            glyphs: SwashCache::new(),
            counted: 0,
        });
        // Counted again only when glyphs were added since (text seen before adds none).
        if fonts.glyphs.image_cache.len() != fonts.counted {
            let glyphs = &mut fonts.glyphs.image_cache;
            let bytes: usize = glyphs.values().flatten().map(|g| g.data.len() + GLYPH_ENTRY_BYTES).sum();
            if bytes > GLYPH_CACHE_BYTES.load(Ordering::Relaxed) {
                glyphs.clear();
            }
            fonts.counted = glyphs.len();
        }
        f(&mut fonts.system, &mut fonts.glyphs)
    })
}

#[cfg(test)]
mod tests {
    use reelfarm_domain::template::fonts::FAMILIES;

    use super::*;

    #[test]
    fn every_advertised_family_has_its_four_faces() {
        for family in FAMILIES {
            let faces: Vec<_> =
                database().faces().filter(|f| f.families.iter().any(|(name, _)| name == family)).collect();
            assert_eq!(faces.len(), 4, "{family}");
            assert_eq!(faces.iter().filter(|f| f.weight.0 >= 700).count(), 2, "{family}");
            assert_eq!(faces.iter().filter(|f| f.style == cosmic_text::fontdb::Style::Italic).count(), 2, "{family}");
        }
        assert_eq!(database().len(), FAMILIES.len() * 4, "no face outside FAMILIES");
    }
}
