//! The audio mix: every sound layer, every unmuted video layer's sound and the soundtrack,
//! each placed at its exact sample offset (`round(t × 48000)`) with its volume, fades and
//! a 2 ms ramp at any edge without a fade (no click where a clip's sound is cut), lowered
//! while speech plays where it ducks, summed and soft-clipped. Produced in step with the
//! video, so memory stays flat whatever the length; the total is exactly
//! [`Plan::samples`](super::plan::Plan) samples.

use std::path::PathBuf;

use reelfarm_domain::job::SoundLevel;
use reelfarm_domain::template::Duck;

use super::master::{Master, Meter};
use super::plan::SAMPLE_RATE;
use super::sound::SoundReader;
use super::RenderError;
use crate::media::audio_enc::Planar;
use crate::media::limits::Deadline;
use crate::media::Limits;

/// Ramp at edges that have no fade, in samples (2 ms).
const DECLICK: u64 = SAMPLE_RATE as u64 / 500;

/// One sound placed on the timeline.
pub(crate) struct Track {
    /// Whose sound it is (layer id or `soundtrack`), for errors.
    pub(crate) who: String,
    reader: SoundReader,
    gain: f32,
    /// Samples [start, end) of the output.
    start: u64,
    end: u64,
    fade_in: u64,
    fade_out: u64,
    /// Next output sample this track delivers.
    next: u64,
    done: bool,
    /// Speech, which ducked tracks give way to.
    voice: bool,
    duck: Option<Ducking>,
}

/// A track's ducking in samples.
#[derive(Clone, Copy)]
struct Ducking {
    db: f32,
    attack: u64,
    release: u64,
}

impl Ducking {
    /// How far down (0 to 1 of `db`) at output sample `i`, with `speech` the samples
    /// [start, end) where speech plays: all the way during speech, ramping down over the
    /// attack before it and back up over the release after it.
    fn depth(&self, speech: &[(u64, u64)], i: u64) -> f32 {
        let ramp = |distance: u64, length: u64| 1.0 - (distance as f32 + 0.5) / length as f32;
        let mut depth: f32 = 0.0;
        for &(start, end) in speech {
            let d = if i >= start && i < end {
                1.0
            } else if i < start && start - i <= self.attack {
                ramp(start - i, self.attack + 1)
            } else if i >= end && i - end < self.release {
                ramp(i - end, self.release)
            } else {
                0.0
            };
            depth = depth.max(d);
        }
        depth
    }

    /// The gain at output sample `i`.
    fn gain(&self, speech: &[(u64, u64)], i: u64) -> f32 {
        let depth = self.depth(speech, i);
        if depth <= 0.0 {
            1.0
        } else {
            10f32.powf(-self.db * depth / 20.0)
        }
    }
}

/// What a track plays and where.
pub(crate) struct TrackSpec<'a> {
    pub(crate) who: &'a str,
    pub(crate) path: PathBuf,
    pub(crate) trim: f64,
    pub(crate) looping: bool,
    /// A video layer's sound: its passes are its picture's.
    pub(crate) with_picture: bool,
    pub(crate) volume: f64,
    /// Output samples [start, end).
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Seconds.
    pub(crate) fade_in: f64,
    pub(crate) fade_out: f64,
    /// Speech, which ducked tracks give way to.
    pub(crate) voice: bool,
    pub(crate) duck: Option<Duck>,
}

impl Track {
    /// Opens the track's source; `None` when it has no sound (a silent video).
    pub(crate) fn open(spec: &TrackSpec, deadline: &Deadline, limits: &Limits) -> Result<Option<Track>, RenderError> {
        let Some(reader) = SoundReader::open(&spec.path, spec.trim, spec.looping, spec.with_picture, deadline, limits)
            .map_err(RenderError::source(spec.who))?
        else {
            return Ok(None);
        };
        // A source that ends before the layer does fades out at its own end.
        let end = match reader.remaining {
            Some(seconds) if !spec.looping => {
                spec.end.min(spec.start + (seconds * f64::from(SAMPLE_RATE)).round() as u64)
            }
            _ => spec.end,
        };
        let to_samples = |s: f64| (s.max(0.0) * f64::from(SAMPLE_RATE)).round() as u64;
        Ok(Some(Track {
            who: spec.who.to_owned(),
            reader,
            gain: spec.volume.max(0.0) as f32,
            start: spec.start,
            end: end.max(spec.start),
            fade_in: to_samples(spec.fade_in).max(DECLICK),
            fade_out: to_samples(spec.fade_out).max(DECLICK),
            next: spec.start,
            done: spec.volume <= 0.0,
            voice: spec.voice,
            duck: spec.duck.map(|d| Ducking {
                db: d.db as f32,
                attack: to_samples(d.attack),
                release: to_samples(d.release).max(1),
            }),
        }))
    }

    /// Gain at output sample `i`.
    fn envelope(&self, i: u64) -> f32 {
        let mut g = self.gain;
        let from_start = i - self.start;
        if from_start < self.fade_in {
            g *= (from_start as f32 + 0.5) / self.fade_in as f32;
        }
        let to_end = self.end - i;
        if to_end <= self.fade_out {
            g *= (to_end as f32 - 0.5).max(0.0) / self.fade_out as f32;
        }
        g
    }
}

/// Mixes the tracks block by block.
pub(crate) struct Mixer {
    tracks: Vec<Track>,
    /// Output samples [start, end) where speech plays (a voice track's own span).
    speech: Vec<(u64, u64)>,
    /// The tracks are summed up to here; what is handed out lags by the master's delay.
    position: u64,
    handed_out: u64,
    /// The master's first `delay` samples out (its initial silence) have been dropped.
    primed: bool,
    total: u64,
    scratch: Planar,
    master: Option<Master>,
    /// Measures what is handed out.
    meter: Option<Meter>,
}

impl Mixer {
    pub(crate) fn new(tracks: Vec<Track>, total: u64) -> Mixer {
        let speech = tracks.iter().filter(|t| t.voice && !t.done).map(|t| (t.start, t.end)).collect();
        let scratch = vec![Vec::new(), Vec::new()];
        Mixer { tracks, speech, position: 0, handed_out: 0, primed: false, total, scratch, master: None, meter: None }
    }

    /// The same mix, measured as it is handed out ([`Mixer::level`]).
    pub(crate) fn metered(self) -> Result<Mixer, RenderError> {
        Ok(Mixer { meter: Some(Meter::new()?), ..self })
    }

    /// What the sound handed out so far measures, when the mix is metered and it was not
    /// silence.
    pub(crate) fn level(&self) -> Result<Option<SoundLevel>, RenderError> {
        self.meter.as_ref().map_or(Ok(None), Meter::level)
    }

    /// The same mix through `master` (a loudness target's gain and limiter).
    pub(crate) fn with_master(self, master: Master) -> Mixer {
        Mixer { master: Some(master), ..self }
    }

    /// The next samples up to output sample `until` (clamped to the total), stereo.
    pub(crate) fn mix_until(&mut self, until: u64, deadline: &Deadline) -> Result<Planar, RenderError> {
        let block = soft_clipped(self.mastered_until(until, deadline)?);
        if let Some(meter) = &mut self.meter {
            meter.add(&block)?;
        }
        Ok(block)
    }

    /// [`Mixer::mix_until`] before the soft clip.
    fn mastered_until(&mut self, until: u64, deadline: &Deadline) -> Result<Planar, RenderError> {
        let until = until.min(self.total);
        let Some(master) = &self.master else {
            self.handed_out = until;
            return self.sum_until(until, deadline);
        };
        // The master's output lags: the tracks are summed that much further (silence past
        // their end), and its first samples out, the silence it started with, are dropped.
        let delay = master.delay() as u64;
        let lead = if self.primed { 0 } else { delay };
        self.primed = true;
        let wanted = until.saturating_sub(self.handed_out) + lead;
        let mut block = self.sum_until((until + delay).min(self.total), deadline)?;
        for channel in &mut block {
            channel.resize(wanted as usize, 0.0);
        }
        let master = self.master.as_mut().expect("checked above");
        master.process(&mut block);
        for channel in &mut block {
            channel.drain(..lead as usize);
        }
        self.handed_out = until;
        Ok(block)
    }

    /// The tracks summed from where the last call ended up to `until`.
    fn sum_until(&mut self, until: u64, deadline: &Deadline) -> Result<Planar, RenderError> {
        let from = self.position;
        let n = until.saturating_sub(from) as usize;
        let mut out: Planar = vec![vec![0.0; n], vec![0.0; n]];
        if n == 0 {
            return Ok(out);
        }
        for track in &mut self.tracks {
            if track.done || track.end <= from || track.start >= until {
                continue;
            }
            let a = track.next.max(from);
            let b = until.min(track.end);
            if b <= a {
                continue;
            }
            self.scratch.iter_mut().for_each(Vec::clear);
            let want = (b - a) as usize;
            let got = track.reader.pull(want, &mut self.scratch, deadline).map_err(RenderError::source(&track.who))?;
            for i in 0..got {
                let at = a + i as u64;
                let ducked = track.duck.map_or(1.0, |duck| duck.gain(&self.speech, at));
                let g = track.envelope(at) * ducked;
                let o = (at - from) as usize;
                out[0][o] += self.scratch[0][i] * g;
                out[1][o] += self.scratch[1][i] * g;
            }
            track.next = b;
            if got < want || b >= track.end {
                track.done = true;
            }
        }
        self.tracks.retain(|t| !t.done);
        self.position = until;
        Ok(out)
    }
}

fn soft_clipped(mut block: Planar) -> Planar {
    for channel in &mut block {
        channel.iter_mut().for_each(|x| *x = soft_clip(*x));
    }
    block
}

/// Transparent below 0.9, then a tanh knee that never exceeds 1.
fn soft_clip(x: f32) -> f32 {
    const KNEE: f32 = 0.9;
    let m = x.abs();
    if m <= KNEE {
        x
    } else {
        x.signum() * (KNEE + (1.0 - KNEE) * ((m - KNEE) / (1.0 - KNEE)).tanh())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_clip_is_transparent_then_bounded() {
        assert_eq!(soft_clip(0.5), 0.5);
        assert_eq!(soft_clip(-0.9), -0.9);
        assert!(soft_clip(3.0) <= 1.0 && soft_clip(3.0) > 0.99);
        assert!(soft_clip(-1.2) > -1.0);
    }
}
