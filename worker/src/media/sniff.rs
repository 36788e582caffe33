//! Recognising the kind of a file from its first bytes (never from its name).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use reelfarm_backends::blob::media_type::looks_like_svg;

use super::lottie::ZIP_MAGIC;
use super::MediaError;

/// What the first bytes say the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    Jpeg,
    Png,
    Gif,
    Webp,
    /// HEIF family (HEIC, AVIF), decoded through libheif.
    Heif,
    Svg,
    /// A Lottie animation: a JSON object, or a ZIP archive (dotLottie).
    Lottie,
    /// Anything else: left to libav's probe and its format allow-list.
    Other,
}

impl Sniffed {
    /// Short format name, as reported in `Probe::format`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Sniffed::Jpeg => "jpeg",
            Sniffed::Png => "png",
            Sniffed::Gif => "gif",
            Sniffed::Webp => "webp",
            Sniffed::Heif => "heif",
            Sniffed::Svg => "svg",
            Sniffed::Lottie => "lottie",
            Sniffed::Other => "unknown",
        }
    }

    /// MIME type of the original.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Sniffed::Jpeg => "image/jpeg",
            Sniffed::Png => "image/png",
            Sniffed::Gif => "image/gif",
            Sniffed::Webp => "image/webp",
            Sniffed::Heif => "image/heic",
            Sniffed::Svg => "image/svg+xml",
            Sniffed::Lottie => "application/json",
            Sniffed::Other => "application/octet-stream",
        }
    }
}

/// Brands of ISO-BMFF files that are HEIF still images rather than video.
const HEIF_BRANDS: &[&[u8; 4]] =
    &[b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1", b"avif", b"avis"];

/// Reads the head of `path` and classifies it.
pub(crate) fn sniff(path: &Path) -> Result<Sniffed, MediaError> {
    let mut head = Vec::with_capacity(4096);
    File::open(path)?.take(4096).read_to_end(&mut head)?;
    if head.is_empty() {
        return Err(MediaError::Corrupt("the file is empty".into()));
    }
    Ok(classify(&head))
}

/// Classifies a file from its first (up to 4 KiB) bytes.
pub(crate) fn classify(head: &[u8]) -> Sniffed {
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Sniffed::Jpeg
    } else if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Sniffed::Png
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Sniffed::Gif
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Sniffed::Webp
    } else if head.len() >= 12 && &head[4..8] == b"ftyp" && HEIF_BRANDS.iter().any(|b| &head[8..12] == *b) {
        Sniffed::Heif
    } else if looks_like_svg(head) {
        Sniffed::Svg
    } else if head.starts_with(ZIP_MAGIC)
        || String::from_utf8_lossy(head).trim_start_matches('\u{feff}').trim_start().starts_with('{')
    {
        Sniffed::Lottie
    } else {
        Sniffed::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_decide_the_kind() {
        assert_eq!(classify(b"\xFF\xD8\xFF\xE0rest"), Sniffed::Jpeg);
        assert_eq!(classify(b"\x89PNG\r\n\x1a\n...."), Sniffed::Png);
        assert_eq!(classify(b"GIF89a..."), Sniffed::Gif);
        assert_eq!(classify(b"RIFF\0\0\0\0WEBPVP8 "), Sniffed::Webp);
        assert_eq!(classify(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic"), Sniffed::Heif);
        assert_eq!(classify(b"\0\0\0\x18ftypisom\0\0\0\0isomiso2"), Sniffed::Other);
        assert_eq!(classify(b"\xef\xbb\xbf<?xml version='1.0'?>\n<svg xmlns=''/>"), Sniffed::Svg);
        assert_eq!(classify(b"<html><svg></svg></html>"), Sniffed::Other);
        assert_eq!(classify(b"\xef\xbb\xbf\n {\"v\":\"5.7.4\",\"fr\":30}"), Sniffed::Lottie);
        assert_eq!(classify(b"PK\x03\x04\x14\0\0\0"), Sniffed::Lottie);
        assert_eq!(classify(b"[1, 2]"), Sniffed::Other);
        assert_eq!(classify(b"#EXTM3U\n#EXTINF:1,\nhttp://x/y.ts\n"), Sniffed::Other);
    }
}
