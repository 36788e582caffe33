use image::{GenericImageView, Rgb, RgbImage};

use super::super::{MediaError, MediaKind};
use super::*;

fn sizes(converted: &Converted) -> Vec<(u32, u32, u32)> {
    with_role(converted, |r| matches!(r, Role::Image { .. }))
        .iter()
        .map(|r| match r.role {
            Role::Image { long_side } => (long_side, r.width.unwrap_or(0), r.height.unwrap_or(0)),
            _ => unreachable!(),
        })
        .collect()
}

/// The pictures on disk match what the renditions say.
fn assert_files_match(converted: &Converted) {
    for r in with_role(converted, |r| *r != Role::Original) {
        let img = image::open(&r.file).unwrap_or_else(|e| panic!("{}: {e}", r.file.display()));
        assert_eq!((Some(img.width()), Some(img.height())), (r.width, r.height), "{}", r.file.display());
        let expected = if r.format == "png" { image::ImageFormat::Png } else { image::ImageFormat::Jpeg };
        assert_eq!(image::ImageFormat::from_path(&r.file).ok(), Some(expected));
        assert_eq!(std::fs::metadata(&r.file).map(|m| m.len()).ok(), Some(r.size));
    }
}

#[test]
fn big_jpeg_gets_every_rung_and_a_thumbnail() {
    let s = Scratch::new();
    let input = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=2400x1600", "-frames:v", "1"], "big.jpg");
    let c = s.convert(&input);
    assert_eq!(c.kind, MediaKind::Image);
    assert_eq!((c.format.as_str(), c.width, c.height, c.alpha), ("jpeg", Some(2400), Some(1600), false));
    assert_eq!(c.renditions[0].role, Role::Original);
    assert_eq!(c.renditions[0].file, input);
    assert_eq!(sizes(&c), vec![(1920, 1920, 1280), (1280, 1280, 853), (640, 640, 427), (320, 320, 213)]);
    let t = thumb(&c);
    assert_eq!((t.width, t.height, t.content_type), (Some(320), Some(213), "image/jpeg"));
    assert_files_match(&c);
}

#[test]
fn png_with_transparent_pixels_keeps_alpha_and_is_never_upscaled() {
    let s = Scratch::new();
    let input =
        s.ffmpeg(&["-f", "lavfi", "-i", "color=c=red@0.5:s=640x480,format=rgba", "-frames:v", "1"], "alpha.png");
    let p = probed(&input);
    assert_eq!((p.kind, p.width, p.height, p.has_alpha), (MediaKind::Image, Some(640), Some(480), true));
    let c = s.convert(&input);
    assert!(c.alpha);
    assert_eq!(sizes(&c), vec![(640, 640, 480), (320, 320, 240)]);
    assert!(c.renditions.iter().skip(1).all(|r| r.format == "png"));
    let small = image::open(&with_role(&c, |r| *r == Role::Image { long_side: 320 })[0].file).expect("png");
    assert!(small.to_rgba8().pixels().all(|p| (120..=136).contains(&p.0[3])), "alpha survives resizing");
    assert_files_match(&c);
}

#[test]
fn opaque_png_with_an_alpha_channel_is_not_alpha() {
    let s = Scratch::new();
    let input = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=400x300,format=rgba", "-frames:v", "1"], "opaque.png");
    let c = s.convert(&input);
    assert!(!c.alpha);
    assert_eq!(sizes(&c), vec![(320, 320, 240)]);
    assert_eq!(thumb(&c).format, "jpeg");
}

/// A 400×200 JPEG, red left half and blue right half, with EXIF orientation 6 (the
/// camera was turned: display rotated 90° clockwise).
fn jpeg_with_orientation_6(path: &Path) {
    let img = RgbImage::from_fn(400, 200, |x, _| if x < 200 { Rgb([255, 0, 0]) } else { Rgb([0, 0, 255]) });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 95).encode_image(&img).expect("encode");
    let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01".to_vec();
    exif.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]);
    let mut app1 = vec![0xFF, 0xE1];
    app1.extend_from_slice(&u16::try_from(exif.len() + 2).expect("len").to_be_bytes());
    app1.extend_from_slice(&exif);
    // After SOI and the JFIF APP0 segment.
    let app0_end = if jpeg[2..4] == [0xFF, 0xE0] { 4 + usize::from(u16::from_be_bytes([jpeg[4], jpeg[5]])) } else { 2 };
    jpeg.splice(app0_end..app0_end, app1);
    std::fs::write(path, jpeg).expect("write");
}

#[test]
fn exif_orientation_is_applied_to_size_and_pixels() {
    let s = Scratch::new();
    let input = s.path("turned.jpg");
    jpeg_with_orientation_6(&input);
    let p = probed(&input);
    assert_eq!((p.width, p.height), (Some(200), Some(400)));
    let c = s.convert(&input);
    assert_eq!((c.width, c.height), (Some(200), Some(400)));
    assert_eq!(sizes(&c), vec![(320, 160, 320)]);
    let out = image::open(&with_role(&c, |r| *r == Role::Image { long_side: 320 })[0].file).expect("jpeg");
    let (top, bottom) = (out.get_pixel(80, 40).0, out.get_pixel(80, 280).0);
    assert!(top[0] > 200 && top[2] < 60, "left (red) half is now on top: {top:?}");
    assert!(bottom[2] > 200 && bottom[0] < 60, "right (blue) half is now at the bottom: {bottom:?}");
}

#[test]
fn gif_and_webp_convert_from_their_first_frame_and_animations_get_a_duration() {
    let s = Scratch::new();
    let gif = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=300x200:r=5", "-frames:v", "3"], "anim.gif");
    let c = s.convert(&gif);
    assert_eq!((c.format.as_str(), c.renditions[0].content_type), ("gif", "image/gif"));
    assert_eq!(sizes(&c), vec![(300, 300, 200)], "smaller than every rung: one at its own size");
    // 3 frames of 0.2 s: it plays.
    close(c.duration.expect("a duration"), 0.6, 1e-9);
    assert_eq!(c.renditions[0].duration, c.duration);
    let s = Scratch::new();
    let webp = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=800x600", "-frames:v", "1", "-c:v", "libwebp"], "pic.webp");
    let c = s.convert(&webp);
    assert_eq!((c.format.as_str(), c.duration), ("webp", None), "a still picture has no duration");
    assert_eq!(sizes(&c), vec![(640, 640, 480), (320, 320, 240)]);
    assert_files_match(&c);
}

#[test]
fn heic_is_decoded_through_libheif() {
    let s = Scratch::new();
    let input = s.path("photo");
    std::fs::write(&input, include_bytes!("testdata/tiny.heic")).expect("write");
    let c = s.convert(&input);
    assert_eq!(
        (c.kind, c.format.as_str(), c.width, c.height, c.alpha),
        (MediaKind::Image, "heif", Some(96), Some(64), false)
    );
    assert_eq!(sizes(&c), vec![(96, 96, 64)]);
    assert_files_match(&c);

    let input = s.path("alpha");
    std::fs::write(&input, include_bytes!("testdata/alpha.heic")).expect("write");
    let s2 = Scratch::new();
    let c = s2.convert(&input);
    assert!(c.alpha);
    assert_eq!(thumb(&c).format, "png");
}

#[test]
fn pictures_above_the_pixel_limit_are_refused() {
    let s = Scratch::new();
    let input = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=640x480", "-frames:v", "1"], "pic.png");
    let limits = Limits { max_pixels: 300_000, ..Limits::default() };
    let refused = |r: Result<_, MediaError>| matches!(r, Err(MediaError::TooLarge { pixels: 307_200, limit: 300_000 }));
    assert!(refused(probe(&input, &limits).map(|_| ())));
    assert!(refused(convert(&input, &s.out(), &limits, &|_| {}).map(|_| ())));
    let heic = s.path("photo");
    std::fs::write(&heic, include_bytes!("testdata/tiny.heic")).expect("write");
    let tiny = Limits { max_pixels: 1000, ..Limits::default() };
    assert!(matches!(convert(&heic, &s.out(), &tiny, &|_| {}), Err(MediaError::TooLarge { .. })));
}

const SVG: &str = r##"<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" viewBox="0 0 200 100">
  <circle cx="50" cy="50" r="40" fill="#e11d48"/>
  <text x="110" y="60" font-size="20" fill="#111">Hi</text>
</svg>"##;

#[test]
fn svg_keeps_the_vector_and_gets_raster_renditions_at_every_rung() {
    let s = Scratch::new();
    let input = s.path("drawing");
    std::fs::write(&input, SVG).expect("write");
    let c = s.convert(&input);
    assert_eq!((c.kind, c.width, c.height, c.alpha), (MediaKind::Svg, Some(200), Some(100), true));
    assert_eq!((c.renditions[0].content_type, c.renditions[0].format.as_str()), ("image/svg+xml", "svg"));
    assert_eq!(sizes(&c), vec![(1920, 1920, 960), (1280, 1280, 640), (640, 640, 320), (320, 320, 160)]);
    let big = image::open(&with_role(&c, |r| *r == Role::Image { long_side: 1920 })[0].file).expect("png").to_rgba8();
    assert_eq!(big.get_pixel(480, 480).0, [0xe1, 0x1d, 0x48, 0xff], "circle drawn");
    assert_eq!(big.get_pixel(5, 5).0[3], 0, "transparent background");
    assert_files_match(&c);
}

#[test]
fn svg_never_loads_files_it_references() {
    let s = Scratch::new();
    let secret = s.ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=64x64", "-frames:v", "1"], "secret.png");
    let svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="64">
        <image href="{0}" width="64" height="64"/><image xlink:href="file://{0}" width="64" height="64"/></svg>"#,
        secret.display()
    );
    let input = s.path("sneaky.svg");
    std::fs::write(&input, svg).expect("write");
    let c = s.convert(&input);
    let small = image::open(&with_role(&c, |r| *r == Role::Image { long_side: 320 })[0].file).expect("png").to_rgba8();
    assert!(small.pixels().all(|p| p.0[3] == 0), "nothing of the referenced file was drawn");
}
