//! The release bundle (`scripts/package`, with ffmpeg built for it) as a machine without
//! the -dev packages runs it: it renders the quote card with the system's libraries
//! hidden, and `serve all` maps no shared library from outside the bundle.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::BIN;

/// `scripts/package` run on the test build: the bundle's directory.
fn bundle(into: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package");
    let out = Command::new(script).args(["--binary", BIN, "--no-archive", "--dir"]).arg(into).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(into).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

/// Whether this machine lets a process hide directories in a mount namespace of its own.
fn can_hide_directories() -> bool {
    Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success())
}

#[test]
fn the_bundle_renders_and_serves_with_its_own_libraries_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = bundle(dir.path());
    let libs = root.join("lib");
    let loader = std::fs::read_dir(&libs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("ld-linux"))
        .expect("the loader is bundled");
    let bundled = |lib: &str| {
        std::fs::read_dir(&libs).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().starts_with(lib))
    };
    for lib in ["libavcodec.so", "libavformat.so", "libheif.so", "librlottie.so", "libc.so.6"] {
        assert!(bundled(lib), "{lib} is bundled");
    }
    // ffmpeg built for the bundle: none of what only Debian's full build links.
    for lib in ["libcodec2.so", "libicudata.so", "librsvg-2.so", "libplacebo.so", "libflite.so"] {
        assert!(!bundled(lib), "{lib} came with Debian's ffmpeg build, not the bundle's");
    }

    // The quote card, with the system's library directory emptied: only the bundle's
    // loader and libraries are there to run it (the shell and `mount` start before).
    let video = dir.path().join("quote.mp4");
    let template = root.join("examples/templates/quote-card.json");
    let binary = root.join("libexec/reelfarm");
    let render = [
        loader.to_str().unwrap(),
        "--library-path",
        libs.to_str().unwrap(),
        binary.to_str().unwrap(),
        "render",
        template.to_str().unwrap(),
        "--quality",
        "480p",
        "-o",
        video.to_str().unwrap(),
    ];
    let out = if can_hide_directories() {
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "--", "sh", "-c"])
            .arg("mount -t tmpfs none /usr/lib/x86_64-linux-gnu && exec \"$@\"")
            .arg("sh")
            .args(render)
            .output()
    } else {
        eprintln!("no mount namespace here: the render runs beside the system's libraries");
        Command::new(render[0]).args(&render[1..]).output()
    }
    .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the bundle renders the quote card: {}", String::from_utf8_lossy(&out.stderr));
    // "…: 480×480, 7.52 s, 188 frames, …": the frames it reports are in the file.
    let frames = report.split(", ").find_map(|part| part.strip_suffix(" frames")).expect("a report");
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v", "-count_packets", "-show_entries"])
        .args(["stream=width,nb_read_packets", "-of", "csv=p=0"])
        .arg(&video)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), format!("480,{frames}"), "{report}");

    // `serve all` through bin/reelfarm: every shared object it maps is the bundle's.
    let data = dir.path().join("data");
    let server = super::serve_all(super::reelfarm_at(&root.join("bin/reelfarm"), &data, 0));
    let (status, _) = super::get(&server.base, "/healthz", None);
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", server.child.id())).unwrap();
    drop(server);
    assert_eq!(status, 200);
    let outside: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains(".so") && !Path::new(p).starts_with(&libs))
        .collect();
    assert!(outside.is_empty(), "mapped from outside the bundle: {outside:?}");
}

/// The manifest `scripts/lib/bundle-ffmpeg.sh` keeps of a finished ffmpeg build, for the
/// build's prefix `dir`.
fn manifest(dir: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/bundle-ffmpeg.sh");
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"source "$0" && bundle_ffmpeg_manifest "$1""#)
        .arg(script)
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A cached ffmpeg build is reused only while its files are what it made: a library
/// changed, added or relinked changes the manifest, and the build is made again.
#[test]
fn the_cached_ffmpeg_build_is_known_by_the_hash_of_its_files() {
    let prefix = tempfile::tempdir().unwrap();
    let lib = prefix.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::fs::write(lib.join("libavcodec.so.59.37.100"), b"the library").unwrap();
    std::os::unix::fs::symlink("libavcodec.so.59.37.100", lib.join("libavcodec.so.59")).unwrap();
    std::fs::write(prefix.path().join("CONFIGURATION"), b"--disable-everything").unwrap();
    let made = manifest(prefix.path());
    assert!(made.contains("./lib/libavcodec.so.59.37.100"), "{made}");
    assert!(made.contains("./lib/libavcodec.so.59 -> libavcodec.so.59.37.100"), "{made}");
    std::fs::write(prefix.path().join(".complete"), &made).unwrap();
    assert_eq!(manifest(prefix.path()), made, "the manifest leaves itself out");

    std::fs::write(lib.join("libavcodec.so.59.37.100"), b"the library, patched").unwrap();
    assert_ne!(manifest(prefix.path()), made, "changed bytes");
    std::fs::write(lib.join("libavcodec.so.59.37.100"), b"the library").unwrap();
    assert_eq!(manifest(prefix.path()), made);
    std::fs::write(lib.join("libextra.so"), b"planted").unwrap();
    assert_ne!(manifest(prefix.path()), made, "a file added");
    std::fs::remove_file(lib.join("libextra.so")).unwrap();
    std::fs::remove_file(lib.join("libavcodec.so.59")).unwrap();
    std::os::unix::fs::symlink("/usr/lib/x86_64-linux-gnu/libavcodec.so.59", lib.join("libavcodec.so.59")).unwrap();
    assert_ne!(manifest(prefix.path()), made, "a link pointed elsewhere");
}
