//! The waveform thumbnail of a sound: peak amplitudes drawn as an 800×200 PNG.

use std::path::Path;

use image::{DynamicImage, Rgba, RgbaImage};

use super::audio_enc::Planar;
use super::still;
use super::{MediaError, Rendition, Role};

/// Size of the waveform picture.
pub(crate) const WIDTH: u32 = 800;
/// Height of the waveform picture.
pub(crate) const HEIGHT: u32 = 200;

/// Colour of the bars (the background is transparent).
const BAR: Rgba<u8> = Rgba([0x25, 0x63, 0xeb, 0xff]);

/// Peak amplitudes collected per 10 ms while the sound is decoded.
pub(crate) struct Peaks {
    bucket: usize,
    filled: usize,
    current: f32,
    peaks: Vec<f32>,
}

impl Peaks {
    /// Collects peaks of a sound sampled at `rate` Hz.
    pub(crate) fn new(rate: u32) -> Self {
        Peaks { bucket: (rate as usize / 100).max(1), filled: 0, current: 0.0, peaks: Vec::new() }
    }

    /// Adds decoded samples (every channel counts).
    pub(crate) fn push(&mut self, pcm: &Planar) {
        let len = pcm.first().map_or(0, Vec::len);
        for i in 0..len {
            let peak = pcm.iter().filter_map(|c| c.get(i)).fold(0.0f32, |m, s| m.max(s.abs()));
            if peak.is_finite() {
                self.current = self.current.max(peak);
            }
            self.filled += 1;
            if self.filled == self.bucket {
                self.peaks.push(self.current);
                self.filled = 0;
                self.current = 0.0;
            }
        }
    }

    /// Draws the waveform (normalised to the loudest peak) and writes `dir/waveform.png`.
    pub(crate) fn write(mut self, dir: &Path) -> Result<Rendition, MediaError> {
        if self.filled > 0 {
            self.peaks.push(self.current);
        }
        let img = draw(&self.peaks);
        still::save(&DynamicImage::ImageRgba8(img), true, dir, "waveform", Role::Thumb)
    }
}

/// One bar per column, mirrored around the middle line.
fn draw(peaks: &[f32]) -> RgbaImage {
    let mut img = RgbaImage::new(WIDTH, HEIGHT);
    let loudest = peaks.iter().copied().fold(0.0f32, f32::max);
    let gain = if loudest > 1e-4 { 1.0 / loudest } else { 0.0 };
    let mid = HEIGHT / 2;
    for x in 0..WIDTH {
        let column = if peaks.is_empty() {
            0.0
        } else {
            let from = x as usize * peaks.len() / WIDTH as usize;
            let to = ((x as usize + 1) * peaks.len() / WIDTH as usize).max(from + 1).min(peaks.len());
            peaks[from.min(peaks.len() - 1)..to].iter().copied().fold(0.0f32, f32::max)
        };
        let half = ((column * gain).min(1.0) * (mid - 1) as f32).round() as u32;
        for y in mid.saturating_sub(half)..=(mid + half).min(HEIGHT - 1) {
            img.put_pixel(x, y, BAR);
        }
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loud_columns_are_taller_than_quiet_ones() {
        let mut peaks = Peaks::new(100);
        let quiet = vec![vec![0.1f32; 400]];
        let loud = vec![vec![0.9f32; 400]];
        peaks.push(&quiet);
        peaks.push(&loud);
        let img = draw(&peaks.peaks);
        let height = |x: u32| (0..HEIGHT).filter(|y| img.get_pixel(x, *y).0[3] > 0).count();
        assert!(height(700) > 5 * height(100));
        assert_eq!((img.width(), img.height()), (WIDTH, HEIGHT));
    }
}
