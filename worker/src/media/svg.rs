//! SVG: kept as the vector original, rasterised with resvg into the rendition ladder.
//!
//! Only `data:` URLs are resolved inside the document; `<image href="/etc/…">` or any
//! other external reference is ignored, so an upload cannot make the worker read files.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use image::{DynamicImage, RgbaImage};
use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{self, fontdb, ImageHrefResolver, Options, Tree};

use super::still::{self, LADDER};
use super::{Converted, Job, MediaError, MediaKind, Probe, Role};

/// SVG documents above this size are refused (they are read into memory whole).
const MAX_SVG_BYTES: u64 = 64 << 20;

/// Probes an SVG: its intrinsic size (from `width`/`height` or the `viewBox`).
pub(crate) fn probe(path: &Path) -> Result<Probe, MediaError> {
    let tree = parse(path)?;
    let (width, height) = intrinsic_size(&tree);
    Ok(Probe {
        kind: MediaKind::Svg,
        format: "svg".into(),
        content_type: "image/svg+xml",
        width: Some(width),
        height: Some(height),
        duration: None,
        has_alpha: true,
        has_audio: false,
        video_codec: None,
        audio_codec: None,
        frame_rate: None,
        bitrate: None,
    })
}

/// Renders every rung of the ladder straight from the vector (sharper than scaling one
/// raster down), PNG when the drawing has transparent pixels, JPEG otherwise.
pub(crate) fn convert(job: &Job) -> Result<Converted, MediaError> {
    let tree = parse(job.input)?;
    let (width, height) = intrinsic_size(&tree);
    let mut original = job.original("image/svg+xml", "svg")?;
    original.width = Some(width);
    original.height = Some(height);
    let mut renditions = vec![original];
    let mut alpha = None;
    for (i, long) in LADDER.iter().copied().enumerate() {
        job.deadline.check()?;
        let (w, h) = still::fit(width, height, long);
        job.limits.check_pixels(w, h)?;
        let picture = render(&tree, w, h)?;
        let has_alpha = *alpha.get_or_insert_with(|| still::has_transparency(&picture));
        let picture = if has_alpha { picture } else { DynamicImage::ImageRgb8(picture.to_rgb8()) };
        renditions.push(still::save(
            &picture,
            has_alpha,
            job.out_dir,
            &long.to_string(),
            Role::Image { long_side: long },
        )?);
        (job.progress)((i + 1) as f32 / (LADDER.len() + 1) as f32);
    }
    let smallest = renditions.last().ok_or_else(|| MediaError::Internal("no rendition".into()))?;
    let thumb = still::copy_as_thumb(smallest, job.out_dir)?;
    let thumb_path = thumb.file.clone();
    renditions.push(thumb);
    Ok(Converted {
        kind: MediaKind::Svg,
        format: "svg".into(),
        renditions,
        thumb: thumb_path,
        alpha: alpha.unwrap_or(false),
        duration: None,
        width: Some(width),
        height: Some(height),
    })
}

pub(crate) fn parse(path: &Path) -> Result<Tree, MediaError> {
    if std::fs::metadata(path)?.len() > MAX_SVG_BYTES {
        return Err(MediaError::Unsupported("SVG files above 64 MiB are not accepted".into()));
    }
    let data = std::fs::read(path)?;
    Tree::from_data(&data, &options()).map_err(|e| MediaError::Corrupt(format!("cannot read the SVG ({e})")))
}

/// Parsing options: system fonts (loaded once per process), no external resources.
fn options() -> Options<'static> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = fontdb::Database::new();
        db.load_system_fonts();
        Arc::new(db)
    });
    Options {
        resources_dir: None,
        fontdb: fonts.clone(),
        image_href_resolver: ImageHrefResolver {
            resolve_data: ImageHrefResolver::default_data_resolver(),
            resolve_string: Box::new(|_href: &str, _opts: &usvg::Options| None),
        },
        ..Options::default()
    }
}

/// Intrinsic size in whole pixels (at least 1×1).
pub(crate) fn intrinsic_size(tree: &Tree) -> (u32, u32) {
    let size = tree.size();
    ((size.width().ceil() as u32).max(1), (size.height().ceil() as u32).max(1))
}

/// Rasterises the drawing to `width` × `height` straight (non-premultiplied) RGBA.
pub(crate) fn render(tree: &Tree, width: u32, height: u32) -> Result<DynamicImage, MediaError> {
    let mut pixmap =
        Pixmap::new(width, height).ok_or_else(|| MediaError::Internal("cannot allocate the canvas".into()))?;
    let size = tree.size();
    let transform = Transform::from_scale(width as f32 / size.width(), height as f32 / size.height());
    resvg::render(tree, transform, &mut pixmap.as_mut());
    let mut rgba = super::buffer(width as usize * height as usize * 4, "the drawing")?;
    for p in pixmap.pixels() {
        let c = p.demultiply();
        rgba.extend_from_slice(&[c.red(), c.green(), c.blue(), c.alpha()]);
    }
    let img =
        RgbaImage::from_raw(width, height, rgba).ok_or_else(|| MediaError::Internal("canvas size mismatch".into()))?;
    Ok(DynamicImage::ImageRgba8(img))
}
