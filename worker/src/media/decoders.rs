//! The libav decoders we let run: only those of the video and audio codecs we accept.
//! Everything else libavcodec was built with (hundreds of rarely used, rarely fuzzed
//! decoders) is unreachable from an upload or a render source: a stream whose codec is off
//! the list is refused before its decoder opens, and libav's own `codec_whitelist` holds
//! the same list for the decoders `avformat_find_stream_info` opens while probing.
//! Images do not go through libavcodec (the `image` crate, libheif and resvg read them).

use std::ffi::{c_void, CStr, CString};
use std::sync::OnceLock;

use ffmpeg::codec::{self, Id};
use ffmpeg::ffi;
use ffmpeg::format::stream::Stream;
use ffmpeg_next as ffmpeg;

use super::MediaError;

/// Codecs whose decoders may run.
pub(crate) const ALLOWED: &[Id] = &[
    // Video.
    Id::H264,
    Id::HEVC,
    Id::VP8,
    Id::VP9,
    Id::AV1,
    Id::MPEG4,
    Id::MPEG1VIDEO,
    Id::MPEG2VIDEO,
    Id::MSMPEG4V1,
    Id::MSMPEG4V2,
    Id::MSMPEG4V3,
    Id::WMV1,
    Id::WMV2,
    Id::WMV3,
    Id::VC1,
    Id::FLV1,
    Id::H263,
    Id::H263P,
    Id::MJPEG,
    Id::PRORES,
    Id::DNXHD,
    Id::THEORA,
    Id::PNG,
    // Audio.
    Id::AAC,
    Id::AAC_LATM,
    Id::MP1,
    Id::MP2,
    Id::MP3,
    Id::FLAC,
    Id::VORBIS,
    Id::OPUS,
    Id::WMAV1,
    Id::WMAV2,
    Id::WMAPRO,
    Id::WMALOSSLESS,
    Id::ALAC,
    Id::AC3,
    Id::EAC3,
    Id::PCM_S8,
    Id::PCM_U8,
    Id::PCM_S16LE,
    Id::PCM_S16BE,
    Id::PCM_S24LE,
    Id::PCM_S24BE,
    Id::PCM_S32LE,
    Id::PCM_S32BE,
    Id::PCM_F32LE,
    Id::PCM_F32BE,
    Id::PCM_F64LE,
    Id::PCM_F64BE,
    Id::PCM_ALAW,
    Id::PCM_MULAW,
];

/// Whether the decoders of `id` may run.
pub(crate) fn allowed(id: Id) -> bool {
    ALLOWED.contains(&id)
}

/// The names of every decoder libav has for an allowed codec, comma-separated: the value
/// of libav's `codec_whitelist` option.
pub(crate) fn whitelist() -> &'static str {
    static NAMES: OnceLock<String> = OnceLock::new();
    NAMES.get_or_init(|| allowed_decoders().map(|(_, name)| name).collect::<Vec<_>>().join(","))
}

/// Every decoder this libav has for an allowed codec: its codec and its name.
pub(crate) fn allowed_decoders() -> impl Iterator<Item = (Id, String)> {
    let mut opaque = std::ptr::null_mut();
    std::iter::from_fn(move || {
        // SAFETY: av_codec_iterate walks libav's static codec table with `opaque`.
        let codec = unsafe { ffi::av_codec_iterate(&mut opaque) };
        // SAFETY: non-null entries of the table are static codecs with a static name.
        (!codec.is_null()).then(|| unsafe {
            (Id::from((*codec).id), ffi::av_codec_is_decoder(codec) != 0, CStr::from_ptr((*codec).name))
        })
    })
    .filter(|(id, is_decoder, _)| *is_decoder && allowed(*id))
    .map(|(id, _, name)| (id, name.to_string_lossy().into_owned()))
}

/// A decoder context for `stream`, refused unless its codec is allowed. `what` names the
/// stream in errors ("video", "audio"). The context keeps the allow-list itself (libav
/// refuses to open any other decoder on it) and, for pictures, refuses frames above
/// `max_pixels`: a stream that grows its frames past what it declared fails there.
pub(crate) fn context(stream: &Stream, what: &str, max_pixels: u64) -> Result<codec::context::Context, MediaError> {
    let id = stream.parameters().id();
    if !allowed(id) {
        return Err(MediaError::Unsupported(format!("the {what} codec '{}' is not accepted", id.name())));
    }
    let mut context = codec::context::Context::from_parameters(stream.parameters())
        .map_err(|e| MediaError::Corrupt(format!("unusable {what} stream ({e})")))?;
    let key = CString::new("codec_whitelist").map_err(|e| MediaError::Internal(e.to_string()))?;
    let value = CString::new(whitelist()).map_err(|e| MediaError::Internal(e.to_string()))?;
    // SAFETY: an unopened AVCodecContext is an AVClass-enabled object; the strings are
    // NUL-terminated and copied by av_opt_set; max_pixels is a plain field.
    unsafe {
        let ctx = context.as_mut_ptr();
        if ffi::av_opt_set(ctx.cast::<c_void>(), key.as_ptr(), value.as_ptr(), 0) < 0 {
            return Err(MediaError::Internal("cannot restrict the decoders".into()));
        }
        (*ctx).max_pixels = i64::try_from(max_pixels).unwrap_or(i64::MAX);
    }
    Ok(context)
}
