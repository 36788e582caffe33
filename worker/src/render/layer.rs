//! Visual layers made ready to draw: the box in output pixels and what fills it — a
//! picture rendered once (text, shape, fitted image; rotated once when the rotation never
//! changes), a Ken Burns source, or a video decoder.

use std::path::Path;

use reelfarm_domain::template::rich::RichText;
use reelfarm_domain::template::{Animation, Content, Layer, ShapeKind, ShapeLayer, TextLayer};

use super::anim;
use super::captions::CaptionsBody;
use super::geom::{round_even, Affine, IRect, RectF};
use super::image::{fitted, fitting, ken_burns_source, Fitting, Still};
use super::lottie::LottieBody;
use super::moving::MovingBody;
use super::picture::Picture;
use super::plan::{LayerSpan, Plan};
use super::resample::{warp, Placed};
use super::source::Resolver;
use super::text::{render_text, TextStyle};
use super::video::{FrameScaler, VideoReader};
use super::RenderError;
use crate::media::limits::Deadline;
use crate::media::lottie::Lottie;
use crate::media::{Limits, MediaError};

/// Largest box side we draw, in output pixels.
const MAX_BOX_SIDE: u32 = 16_384;

/// A visual layer ready to draw.
pub(crate) struct Visual {
    pub(crate) id: String,
    pub(crate) span: LayerSpan,
    pub(crate) animations: Vec<Animation>,
    /// The layer's own opacity.
    pub(crate) opacity: f64,
    /// Degrees clockwise about the box centre.
    pub(crate) rotation: f64,
    /// The box in output pixels; its origin is even.
    pub(crate) bx: i64,
    pub(crate) by: i64,
    pub(crate) bw: u32,
    pub(crate) bh: u32,
    pub(crate) body: Body,
    /// Per-frame transforms are drawn here.
    pub(crate) scratch: Placed,
}

/// What fills the box.
pub(crate) enum Body {
    /// A picture at box-local (`x`, `y`); `turned` is it rotated by the layer's fixed
    /// rotation and placed on the canvas, when the rotation is not 0.
    Fixed {
        pic: Picture,
        x: i64,
        y: i64,
        turned: Option<Placed>,
    },
    /// Windows of `pic` (fractions of it) land on `land` (box-local).
    KenBurns {
        pic: Picture,
        land: RectF,
    },
    Video(Box<VideoBody>),
    /// Captions: a look per page (and per highlighted word), rasterised as it shows.
    Captions(Box<CaptionsBody>),
    /// A Lottie animation, drawn when its frame changes.
    Lottie(Box<LottieBody>),
    /// An animated GIF or WebP picture, its frames fitted into the box.
    Moving(Box<MovingBody>),
    /// Nothing left to draw (a finished layer's memory is released).
    Done,
}

/// A playing video layer.
pub(crate) struct VideoBody {
    pub(crate) reader: VideoReader,
    pub(crate) scaler: FrameScaler,
    /// The current source frame as YUV: at its landing size on the fast path, at its
    /// displayed size otherwise.
    pub(crate) pic: Picture,
    pub(crate) serial: Option<u64>,
    /// Shown part of the upright source and where it lands in the box.
    pub(crate) fitting: Fitting,
    /// Drawn by scaling frames straight to the box (no rotation, scale or Ken Burns).
    pub(crate) direct: bool,
}

impl Visual {
    /// The layer's box and rotation as placed on the canvas at rest.
    pub(crate) fn rest(&self) -> Affine {
        let (cx, cy) = (self.bx as f64 + f64::from(self.bw) / 2.0, self.by as f64 + f64::from(self.bh) / 2.0);
        Affine::translate(cx, cy)
            .after(&Affine::rotate(self.rotation))
            .after(&Affine::translate(-f64::from(self.bw) / 2.0, -f64::from(self.bh) / 2.0))
    }

    /// The canvas area the box covers at rest (clip of slides).
    pub(crate) fn rest_bounds(&self) -> IRect {
        self.rest().bounds_of(f64::from(self.bw), f64::from(self.bh)).bounds().even_origin()
    }

    /// Frees what the layer holds once it is over.
    pub(crate) fn retire(&mut self) {
        self.body = Body::Done;
        self.scratch = Placed::default();
    }
}

/// Prepares the visual layer `layer` of clip `clip`; `None` for sound layers and layers
/// that show on no frame.
pub(crate) fn prepare(
    plan: &Plan,
    clip: usize,
    layer: &Layer,
    resolver: &Resolver,
    deadline: &Deadline,
    limits: &Limits,
) -> Result<Option<Visual>, RenderError> {
    let Some(frame) = layer.content.frame() else {
        return Ok(None);
    };
    let span = plan.layer(clip, layer);
    if span.first >= span.end_frame {
        return Ok(None);
    }
    let id = layer.id.as_str();
    let bw = (frame.width * plan.sx).round().max(1.0);
    let bh = (frame.height * plan.sy).round().max(1.0);
    if bw > f64::from(MAX_BOX_SIDE) || bh > f64::from(MAX_BOX_SIDE) || !bw.is_finite() || !bh.is_finite() {
        return Err(RenderError::layer(
            id,
            format!("its box of {bw}×{bh} pixels is too large (at most {MAX_BOX_SIDE} a side)"),
        ));
    }
    let (bw, bh) = (bw as u32, bh as u32);
    let mut visual = Visual {
        id: id.to_owned(),
        span,
        animations: layer.animations.clone(),
        opacity: frame.opacity.clamp(0.0, 1.0),
        rotation: frame.rotation.rem_euclid(360.0),
        bx: round_even(frame.x * plan.sx),
        by: round_even(frame.y * plan.sy),
        bw,
        bh,
        body: Body::Done,
        scratch: Placed::default(),
    };
    let ken_burns = anim::ken_burns(&layer.animations);
    visual.body = match &layer.content {
        Content::Text(text) => fixed(text_picture(id, text, bw, bh, plan.scale)?),
        Content::Shape(shape) => fixed((shape_picture(id, shape, bw, bh, plan.scale)?, 0, 0)),
        Content::Image(image) => {
            let path = resolver.path(id, &image.source)?;
            // An animated picture loops, as on a web page.
            match moving(id, &path, image.fit, (bw, bh), (0.0, true), ken_burns.is_some(), limits, deadline)? {
                Some(body) => body,
                None => {
                    let still = resolver.still(&path, limits).map_err(RenderError::source(id))?.ok_or_else(|| {
                        let error = MediaError::Unsupported("not an image".into());
                        RenderError::Source { layer: id.to_owned(), error }
                    })?;
                    still_body(id, &still, image.fit, bw, bh, ken_burns)?
                }
            }
        }
        Content::Video(video) => {
            let path = resolver.path(id, &video.source)?;
            let played = (video.trim_start, video.loop_);
            if let Some(body) = moving(id, &path, video.fit, (bw, bh), played, ken_burns.is_some(), limits, deadline)? {
                body
            } else if let Some(still) = resolver.still(&path, limits).map_err(RenderError::source(id))? {
                // A still given to a video layer shows as an image.
                still_body(id, &still, video.fit, bw, bh, ken_burns)?
            } else {
                video_body(
                    id,
                    resolver,
                    &path,
                    video.fit,
                    video.trim_start,
                    video.loop_,
                    &visual,
                    ken_burns.is_some(),
                    deadline,
                    limits,
                )?
            }
        }
        Content::Captions(captions) => Body::Captions(Box::new(CaptionsBody::new(captions, &span, plan, bw, bh))),
        Content::Lottie(lottie) => {
            let animation = Lottie::read(&resolver.path(id, &lottie.source)?).map_err(RenderError::source(id))?;
            let direct = visual.rotation == 0.0 && !anim::scales(&visual.animations);
            let body = LottieBody::new(animation, lottie, (bw, bh), direct).map_err(|e| RenderError::layer(id, e))?;
            Body::Lottie(Box::new(body))
        }
        Content::Sound(_) => return Ok(None),
    };
    let rest = visual.rest();
    if let Body::Fixed { pic, x, y, turned } = &mut visual.body {
        if visual.rotation != 0.0 {
            let m = rest.after(&Affine::translate(*x as f64, *y as f64));
            let mut placed = Placed::default();
            let window = RectF::new(0.0, 0.0, f64::from(pic.width), f64::from(pic.height));
            if warp(pic, window, &m, IRect::of_size(plan.width, plan.height).grow(i64::from(bw.max(bh))), &mut placed) {
                *turned = Some(placed);
            }
        }
    }
    Ok(Some(visual))
}

fn fixed((pic, x, y): (Picture, i64, i64)) -> Body {
    Body::Fixed { pic, x, y, turned: None }
}

fn still_body(
    id: &str,
    still: &Still,
    fit: reelfarm_domain::template::Fit,
    bw: u32,
    bh: u32,
    ken_burns: Option<(reelfarm_domain::template::Rect, reelfarm_domain::template::Rect)>,
) -> Result<Body, RenderError> {
    match ken_burns {
        Some((from, to)) => {
            let min = (from.width.min(to.width), from.height.min(to.height));
            let (pic, f) = ken_burns_source(still, fit, bw, bh, min).map_err(RenderError::source(id))?;
            Ok(Body::KenBurns { pic, land: f.dst })
        }
        None => Ok(fixed(fitted(still, fit, bw, bh).map_err(RenderError::source(id))?)),
    }
}

/// The body of an animated GIF or WebP picture at `path`; `None` for anything else, and
/// under a Ken Burns pan (which moves over its first frame, as over a still).
#[allow(clippy::too_many_arguments)]
fn moving(
    id: &str,
    path: &Path,
    fit: reelfarm_domain::template::Fit,
    size: (u32, u32),
    played: (f64, bool),
    ken_burns: bool,
    limits: &Limits,
    deadline: &Deadline,
) -> Result<Option<Body>, RenderError> {
    if ken_burns {
        return Ok(None);
    }
    let body = MovingBody::open(path, fit, size, played, limits, deadline).map_err(RenderError::source(id))?;
    Ok(body.map(|b| Body::Moving(Box::new(b))))
}

#[allow(clippy::too_many_arguments)]
fn video_body(
    id: &str,
    resolver: &Resolver,
    path: &Path,
    fit: reelfarm_domain::template::Fit,
    trim: f64,
    looping: bool,
    visual: &Visual,
    ken_burns: bool,
    deadline: &Deadline,
    limits: &Limits,
) -> Result<Body, RenderError> {
    let reader = resolver.video(path, trim, looping, deadline, limits).map_err(RenderError::source(id))?;
    let (w, h) = reader.upright();
    let fitting = fitting(fit, f64::from(w), f64::from(h), f64::from(visual.bw), f64::from(visual.bh));
    let direct = reader.rotation == 0 && visual.rotation == 0.0 && !ken_burns && !anim::scales(&visual.animations);
    Ok(Body::Video(Box::new(VideoBody {
        reader,
        scaler: FrameScaler::default(),
        pic: Picture::default(),
        serial: None,
        fitting,
        direct,
    })))
}

/// The text rasterised in its box, cut to its ink, with the ink's offset in the box.
fn text_picture(id: &str, text: &TextLayer, bw: u32, bh: u32, scale: f64) -> Result<(Picture, i64, i64), RenderError> {
    let rich =
        RichText::parse(&text.text).map_err(|e| RenderError::layer(id, format!("text is not valid markup {e}")))?;
    let rgba =
        render_text(&rich, &TextStyle::of(text), bw, bh, scale).map_err(|e| RenderError::layer(id, e.to_string()))?;
    Ok(ink_cropped(Picture::from_rgba(rgba.width, rgba.height, &rgba.data)?))
}

/// `pic` cut to its ink (what is not fully transparent), with the ink's offset in it.
pub(crate) fn ink_cropped(pic: Picture) -> (Picture, i64, i64) {
    match pic.ink_bounds() {
        Some((x, y, w, h)) if (w, h) != (pic.width, pic.height) => (pic.crop(x, y, w, h), i64::from(x), i64::from(y)),
        Some(_) => (pic, 0, 0),
        None => (Picture::default(), 0, 0),
    }
}

/// A shape filling its box: rectangle, or rounded with anti-aliased corners. Its buffer
/// is allocated fallibly: a render that cannot have it fails alone.
fn shape_picture(id: &str, shape: &ShapeLayer, bw: u32, bh: u32, scale: f64) -> Result<Picture, RenderError> {
    let c = shape.color;
    let radius = match shape.shape {
        ShapeKind::Rectangle => 0.0,
        ShapeKind::RoundedRectangle => (shape.radius * scale).clamp(0.0, f64::from(bw.min(bh)) / 2.0),
    };
    let (hw, hh) = (f64::from(bw) / 2.0, f64::from(bh) / 2.0);
    let mut rgba = Vec::new();
    rgba.try_reserve_exact(bw as usize * bh as usize * 4)
        .map_err(|_| RenderError::layer(id, format!("not enough memory for a {bw}×{bh} picture of the shape")))?;
    for y in 0..bh {
        for x in 0..bw {
            let coverage = if radius <= 0.0 {
                1.0
            } else {
                // Signed distance to the rounded rectangle, from the pixel centre.
                let qx = (f64::from(x) + 0.5 - hw).abs() - (hw - radius);
                let qy = (f64::from(y) + 0.5 - hh).abs() - (hh - radius);
                let outside = (qx.max(0.0).powi(2) + qy.max(0.0).powi(2)).sqrt() + qx.max(qy).min(0.0) - radius;
                (0.5 - outside).clamp(0.0, 1.0)
            };
            rgba.extend_from_slice(&[c.r, c.g, c.b, (f64::from(c.a) * coverage).round() as u8]);
        }
    }
    Ok(Picture::from_rgba(bw, bh, &rgba)?)
}
