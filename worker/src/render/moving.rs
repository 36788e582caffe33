//! Animated GIF and WebP pictures in image and video layers: each frame is
//! fitted into the box once, when the layer is prepared, and shown at the times the file
//! gives. An image layer loops the animation, as a web page does; a video layer plays it
//! like a video: from `trim_start`, looping or held on its last frame.

use std::path::Path;

use image::DynamicImage;
use reelfarm_domain::template::Fit;

use super::image::{fitted, Still};
use super::picture::Picture;
use crate::media::animated;
use crate::media::budget::Reservation;
use crate::media::limits::Deadline;
use crate::media::sniff::sniff;
use crate::media::{Limits, MediaError};

/// Most bytes the fitted frames of one layer may hold.
const MAX_BYTES: usize = 512 << 20;
/// The fitted frames are reserved from the process's media memory in steps of this many
/// bytes as they are decoded (the render's own reservation does not know their count).
const RESERVE_STEP: u64 = 16 << 20;

/// A playing animated picture.
pub(crate) struct MovingBody {
    /// Each frame fitted into the box, its offset in the box, and when it ends (seconds
    /// from the start of the animation).
    frames: Vec<(Picture, i64, i64, f64)>,
    trim: f64,
    looping: bool,
    /// The media memory its frames hold, given back with them.
    _memory: Vec<Reservation>,
}

impl MovingBody {
    /// The frames of the animated picture at `path` fitted into a `bw`×`bh` box, played
    /// from `trim` seconds; `None` when it is no animated GIF or WebP.
    pub(crate) fn open(
        path: &Path,
        fit: Fit,
        (bw, bh): (u32, u32),
        (trim, looping): (f64, bool),
        limits: &Limits,
        deadline: &Deadline,
    ) -> Result<Option<MovingBody>, MediaError> {
        let mut frames = Vec::new();
        let (mut end, mut bytes) = (0.0, 0);
        let mut memory = Vec::new();
        let played = animated::each_frame(path, sniff(path)?, limits, deadline, &mut |image, seconds| {
            let (pic, x, y) = fitted(&Still::Raster(DynamicImage::ImageRgba8(image)), fit, bw, bh)?;
            bytes += pic.y.len() + pic.u.len() + pic.v.len() + pic.a.len() + pic.ca.len();
            if bytes > MAX_BYTES {
                return Err(MediaError::Unsupported(format!(
                    "the animation's frames fitted into a box of {bw}×{bh} pixels hold more than {} MiB; use a video",
                    MAX_BYTES >> 20
                )));
            }
            while bytes as u64 > memory.len() as u64 * RESERVE_STEP {
                memory.push(limits.memory.reserve(RESERVE_STEP, deadline)?);
            }
            end += seconds;
            frames.push((pic, x, y, end));
            Ok(())
        })?;
        Ok(played.map(|_| MovingBody { frames, trim, looping, _memory: memory }))
    }

    /// The frame shown `seconds` into the layer, with its offset in the box.
    pub(crate) fn at(&self, seconds: f64) -> (&Picture, i64, i64) {
        let total = self.frames.last().map_or(0.0, |f| f.3);
        let t = (self.trim + seconds).max(0.0);
        let t = if self.looping && total > 0.0 { t % total } else { t };
        let i = self.frames.partition_point(|f| f.3 <= t + 1e-9).min(self.frames.len() - 1);
        let (pic, x, y, _) = &self.frames[i];
        (pic, *x, *y)
    }
}
