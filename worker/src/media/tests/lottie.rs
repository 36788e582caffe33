//! Lottie uploads: JSON and dotLottie files become `lottie` assets with their
//! size, duration and a thumbnail of their middle frame; files that are no usable
//! animation, and archives that are broken or too large, are refused saying why.

use std::io::Write;

use image::{Rgba, RgbaImage};
use serde_json::{json, Value};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::*;
use crate::media::{MediaError, MediaKind};

/// A 100×100 animation at 10 fps, 1 s: a red square filling its left half for the
/// first five frames, then its right half (transparent elsewhere).
pub(crate) fn halves() -> Value {
    let half = |x: u32, from: u32, to: u32| {
        json!({
            "ddd": 0, "ind": from + 1, "ty": 4, "nm": format!("half {x}"), "sr": 1, "ao": 0,
            "ip": from, "op": to, "st": 0, "bm": 0, "ks": still_transform([x, 50]),
            "shapes": [{ "ty": "gr", "nm": "g", "it": [
                { "ty": "rc", "nm": "r", "d": 1, "s": { "a": 0, "k": [50, 100] }, "p": { "a": 0, "k": [0, 0] }, "r": { "a": 0, "k": 0 } },
                { "ty": "fl", "nm": "f", "c": { "a": 0, "k": [1, 0, 0, 1] }, "o": { "a": 0, "k": 100 }, "r": 1 },
                { "ty": "tr", "p": { "a": 0, "k": [0, 0] }, "a": { "a": 0, "k": [0, 0] }, "s": { "a": 0, "k": [100, 100] },
                  "r": { "a": 0, "k": 0 }, "o": { "a": 0, "k": 100 } }
            ]}]
        })
    };
    json!({ "v": "5.7.4", "fr": 10, "ip": 0, "op": 10, "w": 100, "h": 100, "nm": "halves", "ddd": 0, "assets": [],
            "layers": [half(25, 0, 5), half(75, 5, 10)] })
}

/// A layer transform that stays at `[x, y]`.
fn still_transform([x, y]: [u32; 2]) -> Value {
    json!({ "o": { "a": 0, "k": 100 }, "r": { "a": 0, "k": 0 }, "p": { "a": 0, "k": [x, y, 0] },
            "a": { "a": 0, "k": [0, 0, 0] }, "s": { "a": 0, "k": [100, 100, 100] } })
}

/// A 100×100 animation of 10 frames showing the picture `images/green.png` (as the
/// Lottie tools export one into a dotLottie archive).
fn with_image() -> Value {
    json!({ "v": "5.7.4", "fr": 10, "ip": 0, "op": 10, "w": 100, "h": 100, "nm": "picture", "ddd": 0,
            "assets": [{ "id": "img_0", "w": 100, "h": 100, "u": "/images/", "p": "green.png", "e": 0 }],
            "layers": [{ "ddd": 0, "ind": 1, "ty": 2, "nm": "photo", "refId": "img_0", "sr": 1, "ao": 0,
                         "ip": 0, "op": 10, "st": 0, "bm": 0, "ks": still_transform([0, 0]) }] })
}

fn green_png() -> Vec<u8> {
    let mut png = std::io::Cursor::new(Vec::new());
    RgbaImage::from_pixel(100, 100, Rgba([0, 200, 0, 255])).write_to(&mut png, image::ImageFormat::Png).unwrap();
    png.into_inner()
}

/// Writes a ZIP archive of `files` (stored, or deflated when `deflate`) as `name`.
fn archive(scratch: &Scratch, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let path = scratch.path(name);
    let mut zip = ZipWriter::new(std::fs::File::create(&path).unwrap());
    for (file, bytes) in files {
        zip.start_file(*file, SimpleFileOptions::default().compression_method(CompressionMethod::Stored)).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    path
}

fn pixel(path: &Path, x: u32, y: u32) -> [u8; 4] {
    image::open(path).expect("a picture").to_rgba8().get_pixel(x, y).0
}

#[test]
fn a_lottie_json_becomes_an_asset_with_a_thumbnail_of_its_middle_frame() {
    let scratch = Scratch::new();
    let input = scratch.path("halves.json");
    std::fs::write(&input, halves().to_string()).unwrap();

    let probe = probed(&input);
    assert_eq!(
        (probe.kind, probe.format.as_str(), probe.content_type),
        (MediaKind::Lottie, "json", "application/json")
    );
    assert_eq!(
        (probe.width, probe.height, probe.duration, probe.frame_rate),
        (Some(100), Some(100), Some(1.0), Some(10.0))
    );

    let converted = scratch.convert(&input);
    assert_eq!((converted.kind, converted.duration, converted.width), (MediaKind::Lottie, Some(1.0), Some(100)));
    assert_eq!(converted.renditions.len(), 2, "the file itself and the thumbnail");
    assert_eq!((converted.renditions[0].role, converted.renditions[0].duration), (Role::Original, Some(1.0)));
    let thumb = thumb(&converted);
    assert_eq!((thumb.format.as_str(), thumb.width, thumb.height), ("png", Some(320), Some(320)));
    assert!(converted.alpha, "half of it is transparent");
    // Frame 5 of 10: the right half red, the left half clear.
    let [r, g, _, a] = pixel(&thumb.file, 240, 160);
    assert!(r > 200 && g < 40 && a == 255, "right half {r} {g} {a}");
    assert_eq!(pixel(&thumb.file, 80, 160)[3], 0, "left half transparent");
}

#[test]
fn a_dotlottie_archive_plays_its_first_animation_with_its_images() {
    let scratch = Scratch::new();
    let manifest = json!({ "version": "1", "animations": [{ "id": "picture" }, { "id": "halves" }] }).to_string();
    let (picture, halves, png) = (with_image().to_string(), halves().to_string(), green_png());
    let input = archive(
        &scratch,
        "both.lottie",
        &[
            ("manifest.json", manifest.as_bytes()),
            ("animations/halves.json", halves.as_bytes()),
            ("animations/picture.json", picture.as_bytes()),
            ("images/green.png", &png),
        ],
    );
    let converted = scratch.convert(&input);
    assert_eq!((converted.kind, converted.format.as_str()), (MediaKind::Lottie, "lottie"));
    assert_eq!(converted.renditions[0].content_type, "application/zip");
    let [r, g, b, a] = pixel(&thumb(&converted).file, 160, 160);
    // (rlottie's image scaling leaves the alpha a little below opaque.)
    assert!(g > 150 && r < 40 && b < 40 && a > 245, "the embedded picture is drawn: {r} {g} {b} {a}");

    // Without a manifest (version 2 layout): the first animation of `a/`.
    let input = archive(&scratch, "v2.lottie", &[("a/halves.json", halves.as_bytes())]);
    assert_eq!(scratch.convert(&input).duration, Some(1.0));
}

#[test]
fn files_that_are_no_usable_animation_are_refused_saying_why() {
    let scratch = Scratch::new();
    let halves = halves().to_string();
    let manifest = json!({ "animations": [{ "id": "gone" }] }).to_string();
    let picture = with_image().to_string();
    let mut bomb = vec![b' '; 9 * 1024 * 1024];
    bomb[0] = b'{';
    let cases: Vec<(PathBuf, &str)> = vec![
        (write(&scratch, "missing.json", br#"{"v": "5.7.4", "w": 10, "h": 10}"#), "the field \"fr\" is missing"),
        (write(&scratch, "cut.json", &halves.as_bytes()[..200]), "not JSON"),
        (write(&scratch, "big.json", &bomb), "at most 8388608 are read"),
        (archive(&scratch, "empty.lottie", &[("readme.txt", b"hello")]), "holds no animation"),
        (archive(&scratch, "gone.lottie", &[("manifest.json", manifest.as_bytes())]), "\"gone\" is not in the archive"),
        (
            archive(&scratch, "no-image.lottie", &[("a/p.json", picture.as_bytes())]),
            "image \"green.png\" is not in the archive",
        ),
        (
            archive(
                &scratch,
                "text-image.lottie",
                &[("a/p.json", picture.as_bytes()), ("images/green.png", b"GIF89a")],
            ),
            "not a PNG or JPEG",
        ),
        (archive(&scratch, "inflated.lottie", &[("a/big.json", &bomb)]), "holds more than 8388608 bytes"),
        (write(&scratch, "broken.lottie", b"PK\x03\x04 this is not an archive"), "not a readable dotLottie"),
    ];
    for (input, said) in cases {
        match convert(&input, &scratch.out(), &Limits::default(), &|_| {}) {
            Err(e @ MediaError::Unsupported(_)) => assert!(e.to_string().contains(said), "{}: {e}", input.display()),
            other => panic!("{}: expected a refusal, got {other:?}", input.display()),
        }
    }
}

fn write(scratch: &Scratch, name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch.path(name);
    std::fs::write(&path, bytes).unwrap();
    path
}
