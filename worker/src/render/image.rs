//! Still pictures for image layers (and video layers given a still): decoded once through
//! the media engine (JPEG, PNG, GIF's first frame, WebP, HEIC with EXIF orientation or
//! HEIF transforms applied; SVG rasterised by resvg at the size it is shown), fitted into
//! the layer's box and converted to YUV once.

use std::path::Path;
use std::sync::{Arc, Mutex};

use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions, Resizer};
use image::DynamicImage;
use reelfarm_backends::weighed::WeighedLru;
use reelfarm_domain::template::Fit;

use super::geom::RectF;
use super::picture::Picture;
use super::snapshot_cache::{file_key, FileKey};
use crate::media::sniff::{self, Sniffed};
use crate::media::{raster, svg, Limits, MediaError};

/// The largest side we rasterise an SVG at.
const MAX_SVG_SIDE: f64 = 8192.0;

/// A decoded still, before fitting (rasters in their decoded pixel format: a 12 MP JPEG
/// stays 36 MB of RGB, never a 48 MB RGBA copy).
pub(crate) enum Still {
    Raster(DynamicImage),
    Svg(Box<resvg::usvg::Tree>),
}

/// Decoded stills kept between snapshots (see [`super::snapshot_cache`]), by file, up to
/// `limit` bytes of pixels, least recently used out.
pub(crate) struct StillCache {
    kept: Mutex<WeighedLru<FileKey, Arc<Still>>>,
}

impl StillCache {
    pub fn new(limit: usize) -> StillCache {
        StillCache { kept: Mutex::new(WeighedLru::named("still", limit)) }
    }

    /// [`Still::open`] of `path`, decoded once while it stays in the cache.
    pub(crate) fn open(&self, path: &Path, limits: &Limits) -> Result<Option<Arc<Still>>, MediaError> {
        let key = file_key(path)?;
        if let Some(still) = self.kept.lock().expect("still cache lock").get(&key) {
            return Ok(Some(still.clone()));
        }
        let Some(still) = Still::open(path, limits)?.map(Arc::new) else { return Ok(None) };
        self.kept.lock().expect("still cache lock").put(key, still.clone(), still.bytes());
        Ok(Some(still))
    }

    /// Bytes of pixels kept.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.kept.lock().expect("still cache lock").bytes()
    }
}

impl Still {
    /// Memory it holds, about (an SVG is counted by its source's typical size).
    fn bytes(&self) -> usize {
        match self {
            Still::Raster(img) => img.as_bytes().len(),
            Still::Svg(_) => 64 * 1024,
        }
    }

    /// Opens `path` when it is a still picture; `None` for anything else (video, audio).
    pub(crate) fn open(path: &Path, limits: &Limits) -> Result<Option<Still>, MediaError> {
        Ok(match sniff::sniff(path)? {
            Sniffed::Other => None,
            Sniffed::Svg => Some(Still::Svg(Box::new(svg::parse(path)?))),
            format => Some(Still::Raster(normalise(raster::decode_upright(path, format, limits)?))),
        })
    }

    /// Intrinsic size in pixels (upright).
    pub(crate) fn size(&self) -> (f64, f64) {
        match self {
            Still::Raster(img) => (f64::from(img.width()), f64::from(img.height())),
            Still::Svg(tree) => {
                let (w, h) = svg::intrinsic_size(tree);
                (f64::from(w), f64::from(h))
            }
        }
    }

    /// The part `region` (source pixels) scaled to `w` × `h` pixels, as a picture.
    fn render(&self, region: RectF, w: u32, h: u32) -> Result<Picture, MediaError> {
        let (w, h) = (w.max(1), h.max(1));
        match self {
            Still::Raster(img) => {
                let (iw, ih) = (f64::from(img.width()), f64::from(img.height()));
                let x = region.x.clamp(0.0, iw - 1.0);
                let y = region.y.clamp(0.0, ih - 1.0);
                let crop = RectF::new(x, y, region.w.clamp(1.0, iw - x), region.h.clamp(1.0, ih - y));
                picture(&resize(img, crop, w, h)?)
            }
            Still::Svg(tree) => {
                // Render the whole drawing at the scale that maps `region` onto w × h, then
                // cut the region out: sharp at any size.
                let (sw, sh) = self.size();
                let (kx, ky) = (f64::from(w) / region.w.max(1e-9), f64::from(h) / region.h.max(1e-9));
                let (fw, fh) = ((sw * kx).round().clamp(1.0, MAX_SVG_SIDE), (sh * ky).round().clamp(1.0, MAX_SVG_SIDE));
                let full = svg::render(tree, fw as u32, fh as u32)?;
                let crop = RectF::new(region.x * kx, region.y * ky, f64::from(w), f64::from(h));
                let (fw, fh) = (f64::from(full.width()), f64::from(full.height()));
                let crop = RectF::new(crop.x.clamp(0.0, fw - 1.0), crop.y.clamp(0.0, fh - 1.0), crop.w, crop.h);
                let crop = RectF { w: crop.w.min(fw - crop.x), h: crop.h.min(fh - crop.y), ..crop };
                picture(&resize(&full, crop, w, h)?)
            }
        }
    }
}

/// 8-bit RGB, or RGBA when the picture has an alpha channel.
fn normalise(img: DynamicImage) -> DynamicImage {
    match img {
        DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgba8(_) => img,
        other if other.color().has_alpha() => DynamicImage::ImageRgba8(other.to_rgba8()),
        other => DynamicImage::ImageRgb8(other.to_rgb8()),
    }
}

/// `crop` of `img` resized to `w` × `h` (SIMD Catmull-Rom, alpha premultiplied while
/// filtering), same pixel format.
fn resize(img: &DynamicImage, crop: RectF, w: u32, h: u32) -> Result<DynamicImage, MediaError> {
    let mut dst = DynamicImage::new(w, h, img.color());
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::CatmullRom))
        .crop(crop.x, crop.y, crop.w, crop.h);
    Resizer::new().resize(img, &mut dst, &options).map_err(|e| MediaError::Internal(format!("resizing: {e}")))?;
    Ok(dst)
}

fn picture(img: &DynamicImage) -> Result<Picture, MediaError> {
    match img {
        DynamicImage::ImageRgb8(rgb) => Picture::from_rgb(rgb.width(), rgb.height(), rgb.as_raw(), 3),
        DynamicImage::ImageRgba8(rgba) => Picture::from_rgb(rgba.width(), rgba.height(), rgba.as_raw(), 4),
        other => Err(MediaError::Internal(format!("unexpected pixel format {:?}", other.color()))),
    }
}

/// How a source of `sw` × `sh` pixels sits in a `bw` × `bh` box: the part of the source
/// shown (`src`, source pixels) and where it lands in the box (`dst`, whole pixels,
/// even offsets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fitting {
    pub(crate) src: RectF,
    pub(crate) dst: RectF,
}

pub(crate) fn fitting(fit: Fit, sw: f64, sh: f64, bw: f64, bh: f64) -> Fitting {
    let (sw, sh) = (sw.max(1.0), sh.max(1.0));
    match fit {
        Fit::Fill => Fitting { src: RectF::new(0.0, 0.0, sw, sh), dst: RectF::new(0.0, 0.0, bw, bh) },
        Fit::Cover => {
            let k = (bw / sw).max(bh / sh);
            let (w, h) = ((bw / k).min(sw), (bh / k).min(sh));
            Fitting { src: RectF::new((sw - w) / 2.0, (sh - h) / 2.0, w, h), dst: RectF::new(0.0, 0.0, bw, bh) }
        }
        Fit::Contain => {
            let k = (bw / sw).min(bh / sh);
            let (w, h) = ((sw * k).round().clamp(1.0, bw.max(1.0)), (sh * k).round().clamp(1.0, bh.max(1.0)));
            let even = |x: f64| ((x / 2.0).floor() * 2.0).max(0.0);
            Fitting {
                src: RectF::new(0.0, 0.0, sw, sh),
                dst: RectF::new(even((bw - w) / 2.0), even((bh - h) / 2.0), w, h),
            }
        }
    }
}

/// The still fitted into a `bw` × `bh` box: the picture of the shown part at its landing
/// size, and its offset in the box.
pub(crate) fn fitted(still: &Still, fit: Fit, bw: u32, bh: u32) -> Result<(Picture, i64, i64), MediaError> {
    let (sw, sh) = still.size();
    let f = fitting(fit, sw, sh, f64::from(bw), f64::from(bh));
    let (w, h) = (f.dst.w.round().max(1.0) as u32, f.dst.h.round().max(1.0) as u32);
    Ok((still.render(f.src, w, h)?, f.dst.x as i64, f.dst.y as i64))
}

/// The shown part of the still at a resolution for Ken Burns windows: fine enough that
/// the smallest window (`min_window`, a fraction of each side) is not magnified, at most
/// twice the landing size and never above the source's own. Returns the picture and the
/// fitting (whose `src` the windows are fractions of).
pub(crate) fn ken_burns_source(
    still: &Still,
    fit: Fit,
    bw: u32,
    bh: u32,
    min_window: (f64, f64),
) -> Result<(Picture, Fitting), MediaError> {
    let (sw, sh) = still.size();
    let f = fitting(fit, sw, sh, f64::from(bw), f64::from(bh));
    let side = |land: f64, window: f64, own: f64, svg: bool| {
        let wanted = (land / window.max(0.05)).min(land * 2.0);
        let limit = if svg { MAX_SVG_SIDE } else { own.max(land.min(own)) };
        wanted.min(limit).round().max(1.0) as u32
    };
    let svg = matches!(still, Still::Svg(_));
    let w = side(f.dst.w, min_window.0, f.src.w, svg);
    let h = side(f.dst.h, min_window.1, f.src.h, svg);
    Ok((still.render(f.src, w, h)?, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_crops_the_long_side_and_contain_centres_with_even_offsets() {
        let cover = fitting(Fit::Cover, 200.0, 100.0, 50.0, 50.0);
        assert_eq!(cover.src, RectF::new(50.0, 0.0, 100.0, 100.0));
        assert_eq!(cover.dst, RectF::new(0.0, 0.0, 50.0, 50.0));
        let contain = fitting(Fit::Contain, 200.0, 100.0, 50.0, 50.0);
        assert_eq!(contain.dst, RectF::new(0.0, 12.0, 50.0, 25.0));
    }

    #[test]
    fn the_still_cache_decodes_a_file_once_until_it_changes_and_stays_within_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, w: u32, shade: u8| {
            let path = dir.path().join(name);
            image::RgbImage::from_pixel(w, 10, image::Rgb([shade, 0, 0])).save(&path).unwrap();
            path
        };
        let a = write("a.png", 40, 10);
        let others: Vec<_> = (1..5).map(|i| write(&format!("{i}.png"), 40, 10 + i)).collect();
        let limits = Limits::default();
        let cache = StillCache::new(5_000);
        let first = cache.open(&a, &limits).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &cache.open(&a, &limits).unwrap().unwrap()), "decoded once");
        assert_eq!(cache.bytes(), 1_200);
        // The fifth picture overflows the 5,000 bytes: the least recently used one goes.
        for path in &others {
            cache.open(path, &limits).unwrap().unwrap();
        }
        assert_eq!(cache.bytes(), 4_800);
        assert!(!Arc::ptr_eq(&first, &cache.open(&a, &limits).unwrap().unwrap()), "decoded again");
        // A file written again is decoded again, even under the same name.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let again = write("a.png", 50, 30);
        let Still::Raster(img) = &*cache.open(&again, &limits).unwrap().unwrap() else { panic!("a raster") };
        assert_eq!(img.width(), 50);
        // A picture larger than the whole cache is not kept; other files are no stills.
        let small = StillCache::new(100);
        assert!(small.open(&a, &limits).unwrap().is_some());
        assert_eq!(small.bytes(), 0);
        std::fs::write(dir.path().join("c.txt"), "not a picture").unwrap();
        assert!(cache.open(&dir.path().join("c.txt"), &limits).unwrap().is_none());
    }
}
