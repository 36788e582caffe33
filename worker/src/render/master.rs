//! The master stage of a mix with a loudness target: the whole mix is measured first
//! (ITU-R BS.1770 integrated loudness and true peak, with `ebur128`), then played again
//! through a gain that brings it to the target and a look-ahead limiter that keeps its
//! true peak under the ceiling. Where the limiter had to act, its loss is measured and
//! made up once more, so the result lands on the target.

use std::collections::VecDeque;

use ebur128::{EbuR128, Mode};
use reelfarm_domain::job::SoundLevel;

use super::audio::{Mixer, Track};
use super::plan::SAMPLE_RATE;
use super::RenderError;
use crate::media::audio_enc::Planar;
use crate::media::limits::Deadline;

/// The ceiling the limiter holds, in dBTP: 0.5 dB under the −1 dBTP that platforms ask
/// for, which the AAC or Opus encoding after it may take back.
const CEILING_DBTP: f64 = -1.5;

/// Look-ahead of the limiter, in samples (5 ms): the gain goes down over this before a
/// peak and never jumps.
const LOOK_AHEAD: usize = SAMPLE_RATE as usize / 200;

/// Release of the limiter: the gain comes back up by this fraction of the way each sample
/// (a time constant of about 80 ms).
const RELEASE: f32 = 1.0 / (0.08 * SAMPLE_RATE as f32);

/// Passes that measure what the limiter took and make it up.
const MAKE_UP_PASSES: usize = 3;

/// Samples mixed at a time while measuring.
const BLOCK: u64 = SAMPLE_RATE as u64 / 10;

/// Gain and limiter applied to the summed mix.
pub(crate) struct Master {
    gain: f32,
    limiter: Option<Limiter>,
}

impl Master {
    pub(crate) fn new(gain_db: f64, limit: bool) -> Master {
        Master { gain: db_to_gain(gain_db) as f32, limiter: limit.then(Limiter::new) }
    }

    /// Samples the output lags the input by.
    pub(crate) fn delay(&self) -> usize {
        self.limiter.as_ref().map_or(0, |_| LOOK_AHEAD)
    }

    /// `block` with the gain and limiter applied, `delay()` samples later: the first
    /// samples out are those held from before.
    pub(crate) fn process(&mut self, block: &mut Planar) {
        for channel in block.iter_mut() {
            channel.iter_mut().for_each(|x| *x *= self.gain);
        }
        if let Some(limiter) = &mut self.limiter {
            limiter.process(block);
        }
    }
}

/// Measures the mix of `open()`'s tracks over `total` samples and the master that brings
/// it to `target` LUFS; `None` for a silent mix (nothing to bring anywhere).
pub(crate) fn master_for(
    target: f64,
    total: u64,
    open: &dyn Fn() -> Result<Vec<Track>, RenderError>,
    deadline: &Deadline,
) -> Result<Option<Master>, RenderError> {
    let (loudness, peak) = measure(Mixer::new(open()?, total), total, deadline)?;
    if !loudness.is_finite() {
        return Ok(None);
    }
    let mut gain = target - loudness;
    if peak + gain <= CEILING_DBTP {
        return Ok(Some(Master::new(gain, false)));
    }
    // The limiter takes some loudness off the loudest parts: measured, and made up (three times
    // at most: making up raises the peaks the limiter then holds).
    for _ in 0..MAKE_UP_PASSES {
        let (after, _) = measure(Mixer::new(open()?, total).with_master(Master::new(gain, true)), total, deadline)?;
        let missing = target - after;
        if !missing.is_finite() || missing.abs() <= 0.05 {
            break;
        }
        gain += missing.clamp(-12.0, 12.0);
    }
    Ok(Some(Master::new(gain, true)))
}

/// Integrated loudness (LUFS) and true peak (dBTP) of `mixer`'s output.
fn measure(mut mixer: Mixer, total: u64, deadline: &Deadline) -> Result<(f64, f64), RenderError> {
    let mut meter = Meter::new()?;
    let mut at = 0;
    while at < total {
        at = (at + BLOCK).min(total);
        meter.add(&mixer.mix_until(at, deadline)?)?;
    }
    meter.read()
}

/// Measures stereo sound block by block, by ITU-R BS.1770: integrated loudness and true
/// peak.
pub(crate) struct Meter(EbuR128);

impl Meter {
    pub(crate) fn new() -> Result<Meter, RenderError> {
        Ok(Meter(EbuR128::new(2, SAMPLE_RATE, Mode::I | Mode::TRUE_PEAK).map_err(meter_error)?))
    }

    pub(crate) fn add(&mut self, block: &Planar) -> Result<(), RenderError> {
        self.0.add_frames_planar_f32(&[&block[0], &block[1]]).map_err(meter_error)
    }

    /// Integrated loudness (LUFS, `-inf` for silence) and true peak (dBTP) so far.
    fn read(&self) -> Result<(f64, f64), RenderError> {
        let loudness = self.0.loudness_global().map_err(meter_error)?;
        let peak = (0..2).map(|c| self.0.true_peak(c).unwrap_or(0.0)).fold(0.0, f64::max);
        Ok((loudness, 20.0 * peak.max(1e-9).log10()))
    }

    /// What was measured, unless it was silence.
    pub(crate) fn level(&self) -> Result<Option<SoundLevel>, RenderError> {
        let (loudness, true_peak) = self.read()?;
        Ok(loudness.is_finite().then_some(SoundLevel { loudness, true_peak }))
    }
}

fn meter_error(e: ebur128::Error) -> RenderError {
    RenderError::Internal(format!("measuring the loudness: {e}"))
}

fn db_to_gain(db: f64) -> f64 {
    10f64.powf(db / 20.0)
}

/// A look-ahead peak limiter: the gain each sample needs (ceiling over its peak,
/// estimated between samples too), the least of those over the look-ahead, averaged over
/// it (so it ramps down before a peak and reaches it in time), released slowly.
struct Limiter {
    ceiling: f32,
    /// The input not yet let out, per channel, and the last three samples seen (for the
    /// peak between samples).
    delayed: [VecDeque<f32>; 2],
    history: [[f32; 3]; 2],
    /// (sample number, gain needed) over the look-ahead, increasing gains (a sliding
    /// minimum).
    minimum: VecDeque<(u64, f32)>,
    /// The last `LOOK_AHEAD` minima and their sum (the average).
    minima: VecDeque<f32>,
    sum: f64,
    released: f32,
    seen: u64,
}

impl Limiter {
    fn new() -> Limiter {
        let silence = || VecDeque::from(vec![0.0; LOOK_AHEAD]);
        Limiter {
            ceiling: db_to_gain(CEILING_DBTP) as f32,
            delayed: [silence(), silence()],
            history: [[0.0; 3]; 2],
            minimum: VecDeque::new(),
            minima: VecDeque::from(vec![1.0; LOOK_AHEAD]),
            sum: LOOK_AHEAD as f64,
            released: 1.0,
            seen: 0,
        }
    }

    /// Limits `block` in place, `LOOK_AHEAD` samples later. Each sample's need is known
    /// one sample after it (the peak between it and the one before takes the next), so
    /// the need pushed now is the previous sample's: the minimum over the last
    /// `LOOK_AHEAD` needs then covers the sample let out, and so does every minimum the
    /// average is taken over.
    fn process(&mut self, block: &mut Planar) {
        let n = block.first().map_or(0, Vec::len);
        for i in 0..n {
            let mut peak: f32 = 0.0;
            for ((channel, history), delayed) in block.iter().zip(&mut self.history).zip(&mut self.delayed) {
                let x = channel[i];
                let [a, b, d] = *history;
                peak = peak.max(d.abs()).max(between(a, b, d, x));
                *history = [b, d, x];
                delayed.push_back(x);
            }
            let need = if peak > self.ceiling { self.ceiling / peak } else { 1.0 };
            while self.minimum.back().is_some_and(|&(_, g)| g >= need) {
                self.minimum.pop_back();
            }
            self.minimum.push_back((self.seen, need));
            self.seen += 1;
            while self.minimum.front().is_some_and(|&(at, _)| at + (LOOK_AHEAD as u64) < self.seen) {
                self.minimum.pop_front();
            }
            let least = self.minimum.front().map_or(1.0, |&(_, g)| g);
            self.sum += f64::from(least - self.minima.pop_front().unwrap_or(1.0));
            self.minima.push_back(least);
            let average = (self.sum / LOOK_AHEAD as f64).min(1.0) as f32;
            self.released = average.min(self.released + (1.0 - self.released) * RELEASE);
            for (c, channel) in block.iter_mut().enumerate() {
                channel[i] = self.delayed[c].pop_front().unwrap_or(0.0) * self.released;
            }
        }
    }
}

/// The largest magnitude of the signal between `b` and `d` (with `a` before and `x`
/// after), at a quarter, half and three quarters of the way (Catmull-Rom): a true-peak
/// estimate at four times the sample rate.
fn between(a: f32, b: f32, d: f32, x: f32) -> f32 {
    [0.25f32, 0.5, 0.75]
        .iter()
        .map(|&t| {
            let t2 = t * t;
            let t3 = t2 * t;
            (0.5 * (2.0 * b + (d - a) * t + (2.0 * a - 5.0 * b + 4.0 * d - x) * t2 + (3.0 * b - a - 3.0 * d + x) * t3))
                .abs()
        })
        .fold(0.0, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst far over the ceiling comes out under it, after the look-ahead, with no
    /// jump in the gain.
    #[test]
    fn the_limiter_holds_the_ceiling_without_jumps() {
        let mut limiter = Limiter::new();
        let n = 4 * LOOK_AHEAD;
        let input: Vec<f32> =
            (0..n).map(|i| if (2 * LOOK_AHEAD..3 * LOOK_AHEAD).contains(&i) { 2.0 } else { 0.1 }).collect();
        let mut block = vec![input.clone(), input.clone()];
        limiter.process(&mut block);
        let ceiling = db_to_gain(CEILING_DBTP) as f32;
        for (i, y) in block[0].iter().enumerate().skip(LOOK_AHEAD) {
            assert!(y.abs() <= ceiling * 1.0001, "sample {i}: {y}");
        }
        let gains: Vec<f32> = (LOOK_AHEAD..n).map(|i| block[0][i] / input[i - LOOK_AHEAD]).collect();
        let largest_step = gains.windows(2).map(|w| (w[1] - w[0]).abs()).fold(0.0, f32::max);
        assert!(largest_step < 0.05, "the gain jumps by {largest_step}");
    }
}
