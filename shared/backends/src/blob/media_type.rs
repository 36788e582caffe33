//! What a stored file may be served as: the one rule behind the local store's
//! `/files/` answers, S3's object headers and presigned GETs.
//!
//! Stored files are served from an origin of ours (the api's, or the bucket's), so one
//! that a browser would run as a page (SVG with `<script>`, HTML, a type like
//! `image/png, text/html` that browsers read as its last member) could act with that
//! origin. Raster images, video and audio are served inline under their exact type;
//! everything else, SVG included, as an attachment (a download, never a page; `<img>`
//! ignores the disposition, so an SVG still shows as an image).

/// The type of a file whose type is unknown or not one we serve as itself.
pub const OCTET_STREAM: &str = "application/octet-stream";
/// SVG: a picture, but one that can hold scripts.
pub const SVG: &str = "image/svg+xml";
/// A JSON object: the upload of a Lottie animation.
pub const JSON: &str = "application/json";
/// A ZIP archive: the upload of a dotLottie animation (`.lottie`).
pub const DOTLOTTIE: &str = "application/zip";

/// Raster images, video and audio: the types served inline. Every type an upload is
/// stored as (see [`upload_type`]) and every rendition the worker writes is here, but SVG.
const INLINE: &[&str] = &[
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "image/heic",
    "image/heif",
    "image/avif",
    "video/mp4",
    "video/x-m4v",
    "video/quicktime",
    "video/webm",
    "video/x-matroska",
    "video/x-msvideo",
    "video/x-ms-wmv",
    "video/x-flv",
    "video/mpeg",
    "video/mp2t",
    "video/3gpp",
    "video/3gpp2",
    "video/ogg",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "audio/wav",
    "audio/ogg",
    "audio/flac",
    "audio/aiff",
    "audio/webm",
    "audio/x-matroska",
    "audio/x-ms-wma",
];

/// How a stored file is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The `Content-Type` to send: a bare `type/subtype`, never a list or parameters.
    pub content_type: String,
    /// Whether to send `Content-Disposition: attachment`.
    pub attachment: bool,
}

impl Served {
    /// The `Content-Disposition` to send, if any.
    pub fn disposition(&self) -> Option<&'static str> {
        self.attachment.then_some("attachment")
    }
}

/// How a file stored with `content_type` is served: inline under its bare type when it is
/// a raster image, video or audio; otherwise as an attachment, under its bare type when
/// that is a well-formed single type and `application/octet-stream` when not.
pub fn served(content_type: &str) -> Served {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if let Some(inline) = INLINE.iter().find(|t| **t == essence) {
        return Served { content_type: (*inline).to_string(), attachment: false };
    }
    let content_type = if well_formed(&essence) { essence } else { OCTET_STREAM.to_string() };
    Served { content_type, attachment: true }
}

/// `type/subtype` of token characters, one of each: no lists, spaces or parameters.
fn well_formed(essence: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'_'))
    };
    matches!(essence.split_once('/'), Some((t, s)) if token(t) && token(s))
}

/// The type an upload is stored as, from its first bytes (the uploader's declared type is
/// never used): one of the media types we convert (spec: images GIF, JPEG, PNG, SVG, WEBP,
/// HEIC; videos MP4, MKV, FLV, WMV, M4V, MPEG, AVI, WEBM, MOV, 3GP; sound FLAC, M4A, MP3,
/// WAV, OGG, WMA, AIFF, OPUS; Lottie as JSON or a dotLottie ZIP archive, both served as
/// attachments), else `application/octet-stream`. The conversion looks at
/// the bytes again, so a type we cannot tell here only changes how the original is served.
pub fn upload_type(head: &[u8]) -> &'static str {
    if let Some(kind) = infer::get(head) {
        let canonical = match kind.mime_type() {
            "image/heif" => Some("image/heic"),
            "audio/m4a" => Some("audio/mp4"),
            "audio/x-wav" => Some("audio/wav"),
            "audio/x-flac" => Some("audio/flac"),
            "audio/x-aiff" => Some("audio/aiff"),
            // Ogg Opus files are Ogg files.
            "audio/opus" => Some("audio/ogg"),
            other => INLINE.iter().copied().find(|t| *t == other),
        };
        if let Some(canonical) = canonical {
            return canonical;
        }
    }
    if looks_like_svg(head) {
        return SVG;
    }
    if head.starts_with(b"PK\x03\x04") {
        return DOTLOTTIE;
    }
    if String::from_utf8_lossy(head).trim_start_matches('\u{feff}').trim_start().starts_with('{') {
        return JSON;
    }
    OCTET_STREAM
}

/// The usual file extension of a type [`upload_type`] gives (`bin` for any other).
pub fn extension(content_type: &str) -> &'static str {
    match content_type {
        "image/jpeg" => "jpg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" => "heic",
        "image/avif" => "avif",
        SVG => "svg",
        JSON => "json",
        DOTLOTTIE => "lottie",
        "video/mp4" => "mp4",
        "video/x-m4v" => "m4v",
        "video/quicktime" => "mov",
        "video/webm" => "webm",
        "video/x-matroska" => "mkv",
        "video/x-msvideo" => "avi",
        "video/x-ms-wmv" => "wmv",
        "video/x-flv" => "flv",
        "video/mpeg" => "mpeg",
        "audio/mpeg" => "mp3",
        "audio/mp4" => "m4a",
        "audio/aac" => "aac",
        "audio/wav" => "wav",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/aiff" => "aiff",
        _ => "bin",
    }
}

/// An XML document (optionally behind a BOM, declaration, comments or doctype) whose
/// first 4 KiB hold an `<svg` element: the one SVG sniffer of uploads, conversions and
/// fetched job values.
pub fn looks_like_svg(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let starts_like_xml = ["<?xml", "<svg", "<!--", "<!doctype svg"]
        .iter()
        .any(|p| text.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p)));
    starts_like_xml && text.to_ascii_lowercase().contains("<svg")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raster_video_and_audio_are_inline_under_their_bare_type() {
        for (stored, shown) in [
            ("image/png", "image/png"),
            ("IMAGE/JPEG", "image/jpeg"),
            ("video/mp4; codecs=avc1", "video/mp4"),
            ("audio/mpeg", "audio/mpeg"),
        ] {
            assert_eq!(served(stored), Served { content_type: shown.into(), attachment: false }, "{stored}");
        }
    }

    #[test]
    fn everything_else_is_an_attachment_and_lists_become_octet_streams() {
        for (stored, shown) in [
            ("image/svg+xml", SVG),
            ("text/html", "text/html"),
            ("text/plain; charset=utf-8", "text/plain"),
            ("application/json", "application/json"),
            ("image/png, text/html", OCTET_STREAM),
            ("image/png,text/html", OCTET_STREAM),
            ("image/x-unknown", "image/x-unknown"),
            ("", OCTET_STREAM),
            ("nonsense", OCTET_STREAM),
            ("a/b/c", OCTET_STREAM),
        ] {
            let s = served(stored);
            assert_eq!((s.content_type.as_str(), s.disposition()), (shown, Some("attachment")), "{stored}");
        }
    }

    #[test]
    fn uploads_are_typed_from_their_bytes_by_an_allow_list() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(upload_type(png), "image/png");
        assert_eq!(upload_type(b"<?xml version='1.0'?><svg xmlns=''/>"), SVG);
        assert_eq!(upload_type(b"<svg onload=alert(1)><script>alert(2)</script></svg>"), SVG);
        assert_eq!(upload_type(b"hello"), OCTET_STREAM);
        assert_eq!(upload_type(b"<html><script>alert(1)</script></html>"), OCTET_STREAM);
        assert_eq!(upload_type(b"%PDF-1.7\n"), OCTET_STREAM, "not a type we convert");
        assert_eq!(upload_type(b"\n  {\"v\":\"5.7.4\",\"fr\":30}"), JSON, "a Lottie animation");
        assert_eq!(upload_type(b"PK\x03\x04\x14\0\0\0\x08\0"), DOTLOTTIE, "a dotLottie archive");
        assert!(served(JSON).attachment && served(DOTLOTTIE).attachment);
        assert_eq!(upload_type(b"RIFF\x24\0\0\0WAVEfmt "), "audio/wav");
        assert_eq!(upload_type(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic"), "image/heic");
        // A PNG with `<svg` in a text chunk is still a PNG.
        let mut tricky = png.to_vec();
        tricky.extend_from_slice(b"tEXt<svg>");
        assert_eq!(upload_type(&tricky), "image/png");
    }

    #[test]
    fn every_upload_type_but_svg_is_served_inline() {
        let mut mkv = b"\x1A\x45\xDF\xA3\x93\x42\x82\x88matroska".to_vec();
        mkv.resize(512, 0);
        let heads: [&[u8]; 4] = [b"\xFF\xD8\xFF\xE0\0\x10JFIF\0", b"GIF89a", b"ID3\x03\0\0\0\0\0\0", &mkv];
        for head in heads {
            let t = upload_type(head);
            assert_ne!(t, OCTET_STREAM, "{head:?}");
            assert!(!served(t).attachment, "{t}");
        }
        assert!(served(upload_type(b"<svg/>")).attachment);
    }

    #[test]
    fn upload_types_have_their_usual_extension() {
        assert_eq!(extension(upload_type(b"\x89PNG\r\n\x1a\n")), "png");
        assert_eq!(extension(upload_type(b"<svg/>")), "svg");
        assert_eq!(extension(upload_type(b"hello")), "bin");
    }
}
