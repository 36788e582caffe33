//! Visual layers made ready to draw: the box in output pixels and what fills it — a
//! picture rendered once (text, shape, fitted image; rotated once when the rotation never
//! changes), a Ken Burns source, or a video decoder.

use std::path::{Path, PathBuf};

use reelfarm_domain::template::rich::RichText;
use reelfarm_domain::template::{Animation, Content, Fit, Layer, Rect, ShapeKind, ShapeLayer, TextLayer};

use super::anim;
use super::captions::CaptionsBody;
use super::geom::{round_even, Affine, IRect, RectF};
use super::image::{fitted, fitting, ken_burns_source, Fitting, Still};
use super::lottie::LottieBody;
use super::moving::MovingBody;
use super::picture::Picture;
use super::plan::{LayerSpan, Plan};
use super::resample::{warp, Placed};
use super::source::{Resolver, Stills};
use super::text::{render_text, TextStyle};
use super::video::{FrameScaler, VideoReader};
use super::RenderError;
use crate::media::budget;
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
    /// The serial of the frame last scaled straight into a canvas (which the encoder
    /// took), when frames covering the canvas are scaled there instead of into `pic`.
    pub(crate) scaled_in_canvas: Option<u64>,
    /// Whether a frame showed twice, scaled into a canvas before: frames are scaled into
    /// `pic` from then on, so that a repeat is a copy and not a second scaling.
    pub(crate) repeats: bool,
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

/// The layer `layer` of clip `clip` placed in output pixels, its body not made yet;
/// `None` for sound layers and layers that show on no frame.
fn placed(plan: &Plan, clip: usize, layer: &Layer) -> Result<Option<Visual>, RenderError> {
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
    Ok(Some(Visual {
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
    }))
}

/// The picture an image layer shows, made from its file alone: decoded, fitted and
/// converted, which is most of the work of preparing a render and needs nothing else of
/// it (so [`super::run::Frames`] has it done on a second thread).
pub(crate) struct ImageWork {
    id: String,
    path: PathBuf,
    fit: Fit,
    size: (u32, u32),
    ken_burns: Option<(Rect, Rect)>,
}

/// What an [`ImageWork`] makes: the bodies of image layers, which can cross threads.
pub(crate) enum Pictured {
    Fixed(Picture, i64, i64),
    KenBurns(Picture, RectF),
    Moving(Box<MovingBody>),
}

impl ImageWork {
    /// The work of the image layer `layer` of clip `clip`; `None` for other layers and
    /// for one that [`prepare`] fails before it comes to its picture.
    pub(crate) fn of(plan: &Plan, clip: usize, layer: &Layer, resolver: &Resolver) -> Option<ImageWork> {
        let Content::Image(image) = &layer.content else { return None };
        let visual = placed(plan, clip, layer).ok()??;
        Some(ImageWork {
            id: layer.id.clone(),
            path: resolver.path(&layer.id, &image.source).ok()?,
            fit: image.fit,
            size: (visual.bw, visual.bh),
            ken_burns: anim::ken_burns(&layer.animations),
        })
    }

    /// Makes the picture: an animated one's frames, or the still's (at a Ken Burns pan's
    /// resolution under one).
    pub(crate) fn run(&self, stills: Stills, limits: &Limits, deadline: &Deadline) -> Result<Pictured, RenderError> {
        let id = self.id.as_str();
        // An animated picture loops, as on a web page.
        let played = (0.0, true);
        if let Some(body) =
            moving(id, &self.path, self.fit, self.size, played, self.ken_burns.is_some(), limits, deadline)?
        {
            return Ok(Pictured::Moving(body));
        }
        let still = stills.still(&self.path, limits).map_err(RenderError::source(id))?.ok_or_else(|| {
            let error = MediaError::Unsupported("not an image".into());
            RenderError::Source { layer: id.to_owned(), error }
        })?;
        still_body(id, &still, self.fit, self.size, self.ken_burns)
    }
}

impl From<Pictured> for Body {
    fn from(pictured: Pictured) -> Body {
        match pictured {
            Pictured::Fixed(pic, x, y) => Body::Fixed { pic, x, y, turned: None },
            Pictured::KenBurns(pic, land) => Body::KenBurns { pic, land },
            Pictured::Moving(moving) => Body::Moving(moving),
        }
    }
}

/// Prepares the visual layer `layer` of clip `clip`; `None` for sound layers and layers
/// that show on no frame. An image layer's picture comes from `images`, given its work.
pub(crate) fn prepare(
    plan: &Plan,
    clip: usize,
    layer: &Layer,
    resolver: &Resolver,
    deadline: &Deadline,
    limits: &Limits,
    images: &mut dyn FnMut(ImageWork) -> Result<Pictured, RenderError>,
) -> Result<Option<Visual>, RenderError> {
    let Some(mut visual) = placed(plan, clip, layer)? else {
        return Ok(None);
    };
    let (id, bw, bh, span) = (layer.id.as_str(), visual.bw, visual.bh, visual.span);
    let ken_burns = anim::ken_burns(&layer.animations);
    visual.body = match &layer.content {
        Content::Text(text) => fixed(text_picture(id, text, bw, bh, plan.scale)?),
        Content::Shape(shape) => fixed((shape_picture(id, shape, bw, bh, plan.scale)?, 0, 0)),
        Content::Image(image) => {
            let path = resolver.path(id, &image.source)?;
            let work = ImageWork { id: id.to_owned(), path, fit: image.fit, size: (bw, bh), ken_burns };
            images(work)?.into()
        }
        Content::Video(video) => {
            let path = resolver.path(id, &video.source)?;
            let played = (video.trim_start, video.loop_);
            if let Some(body) = moving(id, &path, video.fit, (bw, bh), played, ken_burns.is_some(), limits, deadline)? {
                Body::Moving(body)
            } else if let Some(still) = resolver.still(&path, limits).map_err(RenderError::source(id))? {
                // A still given to a video layer shows as an image.
                still_body(id, &still, video.fit, (bw, bh), ken_burns)?.into()
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
            let path = resolver.path(id, &lottie.source)?;
            // What rlottie builds from the file, held while the layer plays: in a sandbox,
            // what the kernel lets it map.
            let bytes = std::fs::metadata(&path).map_err(|e| RenderError::source(id)(MediaError::Io(e)))?.len();
            let memory = limits
                .memory
                .reserve_for("the Lottie animation", budget::estimate::lottie(bytes), deadline)
                .map_err(RenderError::source(id))?;
            let animation = Lottie::read(&path).map_err(RenderError::source(id))?;
            let direct = visual.rotation == 0.0 && !anim::scales(&visual.animations);
            let body =
                LottieBody::new(animation, lottie, (bw, bh), direct, memory).map_err(|e| RenderError::layer(id, e))?;
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
    fit: Fit,
    (bw, bh): (u32, u32),
    ken_burns: Option<(Rect, Rect)>,
) -> Result<Pictured, RenderError> {
    match ken_burns {
        Some((from, to)) => {
            let min = (from.width.min(to.width), from.height.min(to.height));
            let (pic, f) = ken_burns_source(still, fit, bw, bh, min).map_err(RenderError::source(id))?;
            Ok(Pictured::KenBurns(pic, f.dst))
        }
        None => {
            let (pic, x, y) = fitted(still, fit, bw, bh).map_err(RenderError::source(id))?;
            Ok(Pictured::Fixed(pic, x, y))
        }
    }
}

/// The body of an animated GIF or WebP picture at `path`; `None` for anything else, and
/// under a Ken Burns pan (which moves over its first frame, as over a still).
#[allow(clippy::too_many_arguments)]
fn moving(
    id: &str,
    path: &Path,
    fit: Fit,
    size: (u32, u32),
    played: (f64, bool),
    ken_burns: bool,
    limits: &Limits,
    deadline: &Deadline,
) -> Result<Option<Box<MovingBody>>, RenderError> {
    if ken_burns {
        return Ok(None);
    }
    let body = MovingBody::open(path, fit, size, played, limits, deadline).map_err(RenderError::source(id))?;
    Ok(body.map(Box::new))
}

#[allow(clippy::too_many_arguments)]
fn video_body(
    id: &str,
    resolver: &Resolver,
    path: &Path,
    fit: Fit,
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
        scaled_in_canvas: None,
        repeats: false,
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
