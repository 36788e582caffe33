//! Tests of the conversion engine. Inputs are generated with the ffmpeg CLI (tests only;
//! the engine itself never runs it) into a temporary directory.

mod audio;
mod bad_input;
mod bomb;
mod budget;
pub(crate) mod lottie;
mod passthrough;
mod picture;
mod video;

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{convert, probe, Converted, Limits, Probe, Rendition, Role};

/// Patches the first track header's matrix of the MP4 at `path` to a 90° turn, as a phone
/// held upright writes it.
pub(super) fn turn_upright(path: &Path) {
    let mut data = std::fs::read(path).expect("read");
    let tkhd = data.windows(4).position(|w| w == b"tkhd").expect("tkhd");
    let matrix: Vec<u8> =
        [0i32, 65536, 0, -65536, 0, 0, 0, 0, 0x4000_0000].iter().flat_map(|v| v.to_be_bytes()).collect();
    data[tkhd + 44..tkhd + 80].copy_from_slice(&matrix);
    std::fs::write(path, data).expect("write");
}

/// A scratch directory with an `out/` subdirectory for renditions.
pub(super) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("out")).expect("out dir");
        Scratch { dir }
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(super) fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// Runs the ffmpeg CLI with `args` (inputs are lavfi graphs or files here) writing
    /// `name`, and returns its path.
    pub(super) fn ffmpeg(&self, args: &[&str], name: &str) -> PathBuf {
        let path = self.path(name);
        let status =
            Command::new("ffmpeg").args(["-v", "error", "-y"]).args(args).arg(&path).status().expect("ffmpeg CLI");
        assert!(status.success(), "ffmpeg {args:?} {name} failed");
        path
    }

    /// Converts `input` into `out/` with default limits.
    pub(super) fn convert(&self, input: &Path) -> Converted {
        convert(input, &self.out(), &Limits::default(), &|_| {})
            .unwrap_or_else(|e| panic!("converting {}: {e}", input.display()))
    }
}

/// Probes an output file with our own probe.
pub(super) fn probed(path: &Path) -> Probe {
    probe(path, &Limits::default()).unwrap_or_else(|e| panic!("probing {}: {e}", path.display()))
}

/// The renditions with a role, in order.
pub(super) fn with_role(converted: &Converted, pick: impl Fn(&Role) -> bool) -> Vec<&Rendition> {
    converted.renditions.iter().filter(|r| pick(&r.role)).collect()
}

/// The single thumbnail.
pub(super) fn thumb(converted: &Converted) -> &Rendition {
    let thumbs = with_role(converted, |r| *r == Role::Thumb);
    assert_eq!(thumbs.len(), 1, "one thumbnail");
    assert_eq!(thumbs[0].file, converted.thumb);
    thumbs[0]
}

/// Duration of a file according to ffprobe (the cross-check).
pub(super) fn ffprobe_duration(path: &Path) -> f64 {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1"])
        .arg(path)
        .output()
        .expect("ffprobe CLI");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("ffprobe duration")
}

/// Asserts `a` is within `tolerance` of `b`.
pub(super) fn close(a: f64, b: f64, tolerance: f64) {
    assert!((a - b).abs() <= tolerance, "{a} is not within {tolerance} of {b}");
}
