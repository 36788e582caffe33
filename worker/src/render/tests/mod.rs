//! Tests of the render engine, judged by decoding its output with our own libav code.
//! Templates are small (160×90 to 320×180, 10 fps, 1–3 s) and written as JSON so they go
//! through the same reading and validation as real ones; media inputs are generated with
//! the ffmpeg CLI (tests only).

mod audio;
mod captions;
mod errors;
mod formats;
mod golden;
mod layers;
mod lottie;
mod moving;
mod previews;
mod split;
mod timing;
mod transitions;

use std::path::{Path, PathBuf};
use std::process::Command;

use ffmpeg::media::Type;
use ffmpeg_next as ffmpeg;
use reelfarm_domain::template::{Source, Template};
use serde_json::{json, Value};

use super::picture::{yuv_to_rgb, Picture};
use super::plan::SAMPLE_RATE;
use super::sound::SoundReader;
use super::video::FrameScaler;
use super::{render, Quality, RenderError, RenderOutput, RenderSettings};
use crate::media::av;
use crate::media::limits::Deadline;
use crate::media::Limits;

/// A scratch directory for inputs and outputs.
pub(super) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch { dir: tempfile::tempdir().expect("tempdir") }
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs the ffmpeg CLI writing `name` and returns its path.
    pub(super) fn ffmpeg(&self, args: &[&str], name: &str) -> PathBuf {
        let path = self.path(name);
        let status =
            Command::new("ffmpeg").args(["-v", "error", "-y"]).args(args).arg(&path).status().expect("ffmpeg CLI");
        assert!(status.success(), "ffmpeg {args:?} {name} failed");
        path
    }

    /// Renders `template` (JSON) with `file` sources resolved in this directory.
    pub(super) fn render(&self, template: Value, quality: Quality) -> Result<Rendered, RenderError> {
        let template = Template::from_json(serde_json::to_vec(&template).expect("json"))
            .unwrap_or_else(|e| panic!("template refused: {e}"));
        self.render_template(&template, quality)
    }

    pub(super) fn render_template(&self, template: &Template, quality: Quality) -> Result<Rendered, RenderError> {
        self.render_within(template, quality, Limits::default())
    }

    /// Renders `template` (JSON) into `output`'s format (the file is `Rendered::mp4`).
    pub(super) fn render_as(&self, template: Value, output: reelfarm_domain::output::Output) -> Rendered {
        let template = Template::from_json(serde_json::to_vec(&template).expect("json"))
            .unwrap_or_else(|e| panic!("template refused: {e}"));
        let (file, jpg) = (self.path(&format!("out.{}", output.format)), self.path("thumb.jpg"));
        let resolve = |source: &Source| match source {
            Source::File { file } => Some(self.path(file)),
            _ => None,
        };
        let settings = RenderSettings { output, preset: "ultrafast", crf: 18, ..RenderSettings::default() };
        let rendered = render(&template, &resolve, &settings, &file, &jpg, &|_| {}).expect("render");
        Rendered { output: rendered, mp4: file, jpg }
    }

    /// Renders `template` with sources held to `limits`.
    pub(super) fn render_within(
        &self,
        template: &Template,
        quality: Quality,
        limits: Limits,
    ) -> Result<Rendered, RenderError> {
        let mp4 = self.path("out.mp4");
        let jpg = self.path("out.jpg");
        let resolve = |source: &Source| match source {
            Source::File { file } => Some(self.path(file)),
            _ => None,
        };
        let settings = RenderSettings { quality, preset: "ultrafast", crf: 18, limits, ..RenderSettings::default() };
        let output = render(template, &resolve, &settings, &mp4, &jpg, &|_| {})?;
        Ok(Rendered { output, mp4, jpg })
    }
}

/// A finished render.
pub(super) struct Rendered {
    pub(super) output: RenderOutput,
    pub(super) mp4: PathBuf,
    pub(super) jpg: PathBuf,
}

impl Rendered {
    pub(super) fn frames(&self) -> Vec<Picture> {
        decode_frames(&self.mp4)
    }
}

/// A template of one or more clips on a `w` × `h` canvas at 10 fps, black background.
pub(super) fn template(w: u32, h: u32, clips: Vec<Value>) -> Value {
    json!({
        "version": 1,
        "name": "test",
        "canvas": { "width": w, "height": h, "fps": 10, "background": "#000000" },
        "clips": clips,
    })
}

pub(super) fn clip(id: &str, duration: f64, layers: Vec<Value>) -> Value {
    json!({ "id": id, "duration": duration, "layers": layers })
}

/// A rectangle layer.
pub(super) fn rect(id: &str, x: f64, y: f64, w: f64, h: f64, color: &str) -> Value {
    json!({ "id": id, "kind": "shape", "x": x, "y": y, "width": w, "height": h, "color": color })
}

/// Every video frame of `path`, decoded with our own libav code into YUV 4:2:0.
pub(super) fn decode_frames(path: &Path) -> Vec<Picture> {
    let deadline = Deadline::after(std::time::Duration::from_secs(60));
    let mut input = av::open_input(path, &deadline).expect("open output");
    let stream = input.streams().best(Type::Video).expect("video stream");
    let index = stream.index();
    let context = ffmpeg::codec::context::Context::from_parameters(stream.parameters()).expect("params");
    let mut decoder = context.decoder().video().expect("decoder");
    let mut scaler = FrameScaler::default();
    let mut frames = Vec::new();
    let mut frame = ffmpeg::frame::Video::empty();
    let mut take = |decoder: &mut ffmpeg::decoder::Video, frames: &mut Vec<Picture>| {
        while decoder.receive_frame(&mut frame).is_ok() {
            let mut pic = Picture::default();
            scaler.scale(&frame, frame.width(), frame.height(), false, &mut pic).expect("convert");
            frames.push(pic);
        }
    };
    for (stream, packet) in input.packets() {
        if stream.index() == index {
            decoder.send_packet(&packet).expect("send packet");
            take(&mut decoder, &mut frames);
        }
    }
    decoder.send_eof().expect("eof");
    take(&mut decoder, &mut frames);
    frames
}

/// Durations of the output: (container, video stream, audio stream) in seconds.
pub(super) fn durations(path: &Path) -> (f64, f64, Option<f64>) {
    let deadline = Deadline::after(std::time::Duration::from_secs(60));
    let input = av::open_input(path, &deadline).expect("open output");
    let container = input.duration() as f64 / f64::from(ffmpeg::ffi::AV_TIME_BASE);
    let stream_seconds = |s: ffmpeg::format::stream::Stream| av::seconds(s.duration(), s.time_base());
    let video = input.streams().best(Type::Video).map(stream_seconds).expect("video stream");
    let audio = input.streams().best(Type::Audio).map(stream_seconds);
    (container, video, audio)
}

/// The output's sound as 48 kHz stereo samples (decoded with our own reader).
pub(super) fn decode_audio(path: &Path) -> Vec<Vec<f32>> {
    let deadline = Deadline::after(std::time::Duration::from_secs(60));
    let mut reader = SoundReader::open(path, 0.0, false, false, &deadline, &Limits::default())
        .expect("open")
        .expect("an audio stream");
    let mut pcm = vec![Vec::new(), Vec::new()];
    while reader.pull(SAMPLE_RATE as usize, &mut pcm, &deadline).expect("decode") > 0 {}
    pcm
}

/// Root mean square of `samples[from..to]` (seconds).
pub(super) fn rms(samples: &[f32], from: f64, to: f64) -> f64 {
    let rate = f64::from(SAMPLE_RATE);
    let (a, b) = ((from * rate) as usize, ((to * rate) as usize).min(samples.len()));
    if b <= a {
        return 0.0;
    }
    (samples[a..b].iter().map(|s| f64::from(*s).powi(2)).sum::<f64>() / (b - a) as f64).sqrt()
}

/// The colour at (x, y) as RGB.
pub(super) fn rgb(pic: &Picture, x: u32, y: u32) -> (u8, u8, u8) {
    let c = pic.at(x, y);
    yuv_to_rgb(c.y, c.u, c.v)
}

/// Asserts the colour at (x, y) is within `tolerance` of `expected` on every channel.
#[track_caller]
pub(super) fn assert_color(pic: &Picture, x: u32, y: u32, expected: (u8, u8, u8), tolerance: i32) {
    let got = rgb(pic, x, y);
    let ok = [(got.0, expected.0), (got.1, expected.1), (got.2, expected.2)]
        .iter()
        .all(|(a, b)| (i32::from(*a) - i32::from(*b)).abs() <= tolerance);
    assert!(ok, "pixel ({x}, {y}) is {got:?}, expected {expected:?} ± {tolerance}");
}
