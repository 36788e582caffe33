//! The captions as a subtitle track (`options.subtitles`): 3GPP timed text
//! (`mov_text`), the track MP4 and MOV players offer to turn on. Its samples are written
//! as they are stored (a 16-bit length and the UTF-8 text), one per span of time in which
//! the same cues show, empty ones in between; no encoder is involved.

use ffmpeg::{codec, ffi, Packet, Rational};
use ffmpeg_next as ffmpeg;
use reelfarm_domain::captions::Cue;

use crate::media::mux::Muxer;
use crate::media::MediaError;

/// Milliseconds: the track's time base.
const TIME_BASE: Rational = Rational(1, 1000);

/// The 3GPP `TextSampleEntry` fields after the box header, as libavcodec's `mov_text`
/// encoder writes them by default: centred at the bottom, no background, white text of
/// the player's serif face.
const SAMPLE_ENTRY: [u8; 48] = [
    0, 0, 0, 0, // display flags
    0x01, 0xFF, // horizontally centred, at the bottom
    0, 0, 0, 0, // background colour (RGBA)
    0, 0, 0, 0, 0, 0, 0, 0, // default text box (top, left, bottom, right)
    0, 0, 0, 0, 0, 1, 0, 0x12, 0xFF, 0xFF, 0xFF, 0xFF, // style: font 1, plain, 18 px, white
    0, 0, 0, 0x12, b'f', b't', b'a', b'b', 0, 1, // font table: one entry…
    0, 1, 5, b'S', b'e', b'r', b'i', b'f', // …font 1, "Serif"
];

/// Adds the subtitle track to `muxer` (before its header); returns its index.
pub(crate) fn add_track(muxer: &mut Muxer) -> Result<usize, MediaError> {
    let mut parameters = codec::Parameters::new();
    // SAFETY: fields of parameters we own; the extradata is allocated with libav's
    // allocator (padded as it requires), which frees it with the parameters.
    unsafe {
        let p = parameters.as_mut_ptr();
        (*p).codec_type = ffi::AVMediaType::AVMEDIA_TYPE_SUBTITLE;
        (*p).codec_id = ffi::AVCodecID::AV_CODEC_ID_MOV_TEXT;
        let extradata = ffi::av_mallocz(SAMPLE_ENTRY.len() + ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize) as *mut u8;
        if extradata.is_null() {
            return Err(MediaError::Internal("cannot allocate the subtitle track's header".into()));
        }
        std::ptr::copy_nonoverlapping(SAMPLE_ENTRY.as_ptr(), extradata, SAMPLE_ENTRY.len());
        (*p).extradata = extradata;
        (*p).extradata_size = SAMPLE_ENTRY.len() as i32;
    }
    muxer.add_stream(parameters, TIME_BASE, None)
}

/// Writes `cues` (seconds on the video's timeline) as the samples of track `index`, up to
/// `end` seconds.
pub(crate) fn write_track(muxer: &mut Muxer, index: usize, cues: &[Cue], end: f64) -> Result<(), MediaError> {
    for (from, to, text) in samples(cues, end) {
        let bytes = text.as_bytes();
        let mut data = Vec::with_capacity(bytes.len() + 2);
        data.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        data.extend_from_slice(bytes);
        let mut packet = Packet::copy(&data);
        packet.set_pts(Some(from));
        packet.set_dts(Some(from));
        packet.set_duration(to - from);
        muxer.write(index, packet)?;
    }
    Ok(())
}

/// The samples of `cues` up to `end` seconds, in milliseconds: every span between two
/// cue edges with the texts of the cues showing in it (one a line; empty between cues),
/// from 0 on.
fn samples(cues: &[Cue], end: f64) -> Vec<(i64, i64, String)> {
    let ms = |t: f64| (t.clamp(0.0, end) * 1000.0).round() as i64;
    let mut edges: Vec<i64> = cues.iter().flat_map(|c| [ms(c.start), ms(c.end)]).chain([0, ms(end)]).collect();
    edges.sort_unstable();
    edges.dedup();
    edges
        .windows(2)
        .map(|span| {
            let showing: Vec<&str> = cues
                .iter()
                .filter(|c| ms(c.start) <= span[0] && span[0] < ms(c.end))
                .map(|c| c.text.as_str())
                .collect();
            (span[0], span[1], fitted(showing.join("\n")))
        })
        .collect()
}

/// `text` cut (at a character) to what a sample's 16-bit length can say.
fn fitted(mut text: String) -> String {
    let mut at = text.len().min(usize::from(u16::MAX));
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cue(start: f64, end: f64, text: &str) -> Cue {
        Cue::new(start, end, text)
    }

    #[test]
    fn spans_between_cue_edges_carry_the_cues_showing() {
        let cues = [cue(1.0, 3.0, "a"), cue(2.0, 4.0, "b"), cue(5.0, 9.0, "c")];
        let got = samples(&cues, 6.0);
        let expected = [
            (0, 1000, ""),
            (1000, 2000, "a"),
            (2000, 3000, "a\nb"),
            (3000, 4000, "b"),
            (4000, 5000, ""),
            (5000, 6000, "c"),
        ];
        assert_eq!(got, expected.map(|(a, b, t)| (a, b, t.to_string())));
    }

    #[test]
    fn a_text_too_long_for_a_sample_is_cut_at_a_character() {
        let long = "é".repeat(40_000);
        let cut = fitted(long);
        assert!(cut.len() <= usize::from(u16::MAX) && cut.chars().all(|c| c == 'é'));
    }
}
