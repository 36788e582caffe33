//! What happens to synthesised speech before it is a sound layer's source: decoded and
//! resampled to 48 kHz mono, the pieces of a long text joined (silence at their edges
//! cut to a short pause, so the joins sound like sentence ends and not like gaps),
//! loudness-normalised, then fitted to the layer's slot (padded with silence, or cut
//! with a fade-out).

use std::io::Write;
use std::path::Path;

use ffmpeg_next as ffmpeg;

use crate::media::audio::SoundDecoder;
use crate::media::av;
use crate::media::limits::Deadline;
use crate::media::MediaError;

/// Sample rate of prepared speech (the renderer's own rate).
pub(crate) const RATE: u32 = 48_000;
/// Silence at each edge of a piece when pieces are joined (a sentence each): their
/// pauses are twice this.
const EDGE_SILENCE: f64 = 0.15;
/// Below this level (−50 dBFS) a sample counts as silence.
const SILENCE: f32 = 0.003_16;
/// Target level of the normalised speech: −18 dBFS RMS over its voiced 50 ms blocks
/// (about −18 LUFS for speech).
const TARGET_RMS: f32 = 0.125_9;
/// Highest peak after normalisation: −1 dBFS.
const MAX_PEAK: f32 = 0.891;
/// Length of the fade-out when speech is cut at the end of its slot.
pub(crate) const CUT_FADE: f64 = 0.25;

/// Decodes an audio file to 48 kHz mono f32 (stereo is averaged).
pub(crate) fn decode(path: &Path, deadline: &Deadline) -> Result<Vec<f32>, MediaError> {
    let mut input = av::open_input(path, deadline)?;
    let index = input
        .streams()
        .best(ffmpeg::media::Type::Audio)
        .ok_or_else(|| MediaError::Corrupt("the synthesised speech has no sound".into()))?
        .index();
    let mut decoder = SoundDecoder::open(&input, index, Some(RATE), None)?;
    let mut mono = Vec::new();
    let mut append = |pcm: Vec<Vec<f32>>| {
        let channels = pcm.len().max(1) as f32;
        let frames = pcm.first().map_or(0, Vec::len);
        mono.extend((0..frames).map(|i| pcm.iter().map(|c| c[i]).sum::<f32>() / channels));
    };
    loop {
        deadline.check()?;
        let packet = match av::read_packet(&mut input) {
            Ok(packet) => packet,
            Err(ffmpeg::Error::Eof) => break,
            Err(e) => return Err(av::input_error(deadline, "reading the speech")(e)),
        };
        if packet.stream() == index {
            append(decoder.decode(Some(&packet))?);
        }
    }
    append(decoder.decode(None)?);
    Ok(mono)
}

/// The samples [first, end) of `samples` between its first and last sound (above
/// [`SILENCE`]); `None` when it is silent.
fn voiced(samples: &[f32]) -> Option<(usize, usize)> {
    let first = samples.iter().position(|s| s.abs() > SILENCE)?;
    let last = samples.iter().rposition(|s| s.abs() > SILENCE).unwrap_or(first);
    Some((first, last + 1))
}

/// Joins the pieces of one text, each with [`EDGE_SILENCE`] at its edges (trimmed or
/// padded), and says where the voice of each piece is in the result (samples [first,
/// end); `None` for a silent piece, which is left out).
pub(crate) fn join(pieces: &[Vec<f32>]) -> (Vec<f32>, Vec<Option<(usize, usize)>>) {
    let keep = (EDGE_SILENCE * f64::from(RATE)) as usize;
    let mut joined = Vec::new();
    let mut spans = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let Some((first, end)) = voiced(piece) else {
            spans.push(None);
            continue;
        };
        let (from, to) = (first.saturating_sub(keep), (end + keep).min(piece.len()));
        joined.resize(joined.len() + keep - (first - from), 0.0);
        spans.push(Some((joined.len() + first - from, joined.len() + end - from)));
        joined.extend_from_slice(&piece[from..to]);
        joined.resize(joined.len() + keep - (to - end), 0.0);
    }
    (joined, spans)
}

/// Scales `samples` to [`TARGET_RMS`] over its voiced 50 ms blocks, the peak at most
/// [`MAX_PEAK`]; the gain stays within ±24 dB. Silence stays silent.
pub(crate) fn normalise(samples: &mut [f32]) {
    let block = (RATE / 20) as usize;
    let (mut energy, mut count) = (0.0f64, 0usize);
    for chunk in samples.chunks(block) {
        let mean = chunk.iter().map(|s| f64::from(*s) * f64::from(*s)).sum::<f64>() / chunk.len() as f64;
        if mean.sqrt() > f64::from(SILENCE) * 3.0 {
            energy += mean * chunk.len() as f64;
            count += chunk.len();
        }
    }
    if count == 0 {
        return;
    }
    let rms = (energy / count as f64).sqrt() as f32;
    let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let gain = (TARGET_RMS / rms).min(MAX_PEAK / peak).clamp(1.0 / 16.0, 16.0);
    samples.iter_mut().for_each(|s| *s *= gain);
}

/// `samples` fitted to `slot` seconds: padded with silence when shorter, cut with a
/// [`CUT_FADE`] fade-out when longer. Returns whether it was cut.
pub(crate) fn fit(samples: &mut Vec<f32>, slot: f64) -> bool {
    let length = (slot * f64::from(RATE)).round().max(1.0) as usize;
    if samples.len() <= length {
        samples.resize(length, 0.0);
        return false;
    }
    samples.truncate(length);
    let fade = ((CUT_FADE.min(slot / 4.0)) * f64::from(RATE)) as usize;
    let start = length - fade;
    for (i, s) in samples[start..].iter_mut().enumerate() {
        *s *= 1.0 - (i + 1) as f32 / fade.max(1) as f32;
    }
    true
}

/// Writes 48 kHz mono 16-bit PCM WAV.
pub(crate) fn write_wav(path: &Path, samples: &[f32]) -> std::io::Result<()> {
    let data = (samples.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + samples.len() * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&(RATE * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    for s in samples {
        out.extend_from_slice(&((s.clamp(-1.0, 1.0) * 32767.0).round() as i16).to_le_bytes());
    }
    std::fs::File::create(path)?.write_all(&out)
}

/// Wraps raw 16-bit little-endian mono PCM (Polly's `pcm` output) in a WAV header.
pub(crate) fn pcm_to_wav(pcm: &[u8], rate: u32) -> Vec<u8> {
    let data = (pcm.len() & !1) as u32;
    let mut out = Vec::with_capacity(44 + pcm.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    out.extend_from_slice(&pcm[..data as usize]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(seconds: f64, level: f32) -> Vec<f32> {
        let n = (seconds * f64::from(RATE)) as usize;
        (0..n).map(|i| level * (i as f32 * 440.0 * std::f32::consts::TAU / RATE as f32).sin()).collect()
    }

    #[test]
    fn pieces_are_joined_with_short_pauses_only() {
        let mut a = vec![0.0; RATE as usize];
        a.extend(tone(0.5, 0.5));
        a.extend(vec![0.0; RATE as usize]);
        let (joined, spans) = join(&[a.clone(), vec![0.0; 100], a]);
        let seconds = joined.len() as f64 / f64::from(RATE);
        assert!((seconds - (1.0 + 4.0 * EDGE_SILENCE)).abs() < 0.01, "{seconds}");
        // Each voice starts after the pause kept before it and lasts its 0.5 s.
        let keep = (EDGE_SILENCE * f64::from(RATE)) as usize;
        let (v0, v1) = voiced(&tone(0.5, 0.5)).unwrap();
        let piece = v1 - v0 + 2 * keep;
        assert_eq!(spans, vec![Some((keep, keep + v1 - v0)), None, Some((piece + keep, piece + keep + v1 - v0))]);
        // A piece voiced from its first sample gets its pause all the same.
        let (padded, spans) = join(&[tone(0.5, 0.5)]);
        assert_eq!(spans, vec![Some((keep, keep + v1 - v0))]);
        assert_eq!(padded.len(), 2 * keep + v1 - v0);
    }

    #[test]
    fn speech_is_normalised_and_fitted_to_its_slot() {
        let mut quiet = tone(1.0, 0.05);
        normalise(&mut quiet);
        let rms = (quiet.iter().map(|s| s * s).sum::<f32>() / quiet.len() as f32).sqrt();
        assert!((rms - TARGET_RMS).abs() < 0.01, "{rms}");
        let mut short = tone(1.0, 0.5);
        assert!(!fit(&mut short, 2.0));
        assert_eq!(short.len(), 2 * RATE as usize);
        let mut long = tone(3.0, 0.5);
        assert!(fit(&mut long, 2.0));
        assert_eq!(long.len(), 2 * RATE as usize);
        assert!(long.last().unwrap().abs() < 0.01, "faded out");
    }

    #[test]
    fn written_speech_decodes_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wav");
        write_wav(&path, &tone(0.5, 0.5)).unwrap();
        let back = decode(&path, &Deadline::after(std::time::Duration::from_secs(10))).unwrap();
        assert!((back.len() as i64 - i64::from(RATE) / 2).abs() < 100, "{}", back.len());
        let wav = pcm_to_wav(&[0u8; 3200], 16_000);
        std::fs::write(&path, wav).unwrap();
        let back = decode(&path, &Deadline::after(std::time::Duration::from_secs(10))).unwrap();
        assert!((back.len() as i64 - 4800).abs() < 100, "{}", back.len());
    }
}
