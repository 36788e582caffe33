//! The confinement itself: a process confined as a conversion's child is cannot open a
//! socket, start a program, read a file outside its input and the system's libraries,
//! write outside its output directory, or map more than its limit. Each check runs in a
//! fresh process (this test binary, started again for one test) so that the confinement,
//! which cannot be undone, ends with it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::confine;
use super::{Plan, PlanLimits, Work};

/// Set in the process started again: the scratch directory its checks work in.
const SCRATCH: &str = "REELFARM_SANDBOX_TEST_SCRATCH";

fn plan(scratch: &Path) -> Plan {
    Plan {
        work: Work::Convert { input: scratch.join("input"), out_dir: scratch.join("out") },
        limits: PlanLimits {
            max_pixels: 1,
            max_video_pixels: 1,
            max_animation_pixels: 1,
            max_duration: Duration::from_secs(1),
            time_limit: Duration::from_secs(10),
        },
        probe_memory: 64 << 20,
        most_memory: Some(128 << 20),
        cpu_seconds: 10,
    }
}

/// The checks, in the confined process: one line per check, `check NAME ok` or `… FAILED`.
fn confined_checks(scratch: &Path) {
    let confined = confine::apply(&plan(scratch)).expect("confine");
    // On lines of their own (libtest writes the test's name before them).
    let report = |name: &str, ok: bool| println!("\ncheck {name} {}", if ok { "ok" } else { "FAILED" });
    report("landlock", confined.landlock);
    // SAFETY: socket() with constant arguments; a descriptor it returns is closed.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    report("no-socket", socket < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
    report("no-unix-socket", std::os::unix::net::UnixStream::connect("/run/anything.sock").is_err());
    report("no-exec", Command::new("/bin/true").status().is_err());
    report("reads-input", std::fs::read(scratch.join("input")).is_ok_and(|b| b == b"input"));
    report("reads-libraries", std::fs::metadata("/usr/lib").is_ok());
    report("no-secret", std::fs::read(scratch.join("secret")).is_err());
    report("no-etc", std::fs::read("/etc/hostname").is_err() && std::fs::read("/etc/passwd").is_err());
    report("writes-out", std::fs::write(scratch.join("out/made.jpg"), b"x").is_ok());
    report("no-write-beside", std::fs::write(scratch.join("planted"), b"x").is_err());
    let big: Result<Vec<u8>, _> = {
        let mut v = Vec::new();
        v.try_reserve_exact(confine::mappable(128 << 20) as usize + (1 << 30)).map(|()| v)
    };
    report("address-space", big.is_err());
    let small: Result<Vec<u8>, _> = {
        let mut v = Vec::new();
        v.try_reserve_exact(16 << 20).map(|()| v)
    };
    report("room-to-probe", small.is_ok());
    confine::cap_memory(8 << 20).expect("cap");
    let after: Result<Vec<u8>, _> = {
        let mut v = Vec::new();
        v.try_reserve_exact(confine::mappable(8 << 20) as usize + (64 << 20)).map(|()| v)
    };
    report("capped-after-reserving", after.is_err());
    drop(after);
    // A render is granted more as it goes: the limit follows, up to the hard one.
    confine::cap_memory((8 << 20) + (256 << 20)).expect("cap");
    let grown: Result<Vec<u8>, _> = {
        let mut v = Vec::new();
        v.try_reserve_exact(confine::mappable(8 << 20) as usize + (64 << 20)).map(|()| v)
    };
    report("rises-with-grants", grown.is_ok());
    drop(grown);
    let beyond: Result<Vec<u8>, _> = {
        let mut v = Vec::new();
        v.try_reserve_exact(confine::mappable(128 << 20) as usize + (1 << 30)).map(|()| v)
    };
    report("never-past-the-budget", beyond.is_err());
}

#[test]
fn a_confined_child_has_no_network_no_programs_and_only_its_files() {
    if let Some(scratch) = std::env::var_os(SCRATCH) {
        confined_checks(Path::new(&scratch));
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("input"), b"input").unwrap();
    std::fs::write(scratch.path().join("secret"), b"secret").unwrap();
    std::fs::create_dir(scratch.path().join("out")).unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sandbox::tests::a_confined_child_has_no_network_no_programs_and_only_its_files"])
        .args(["--nocapture", "--test-threads", "1"])
        .env(SCRATCH, scratch.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("check ")).collect();
    let expected = [
        "landlock ok",
        "no-socket ok",
        "no-unix-socket ok",
        "no-exec ok",
        "reads-input ok",
        "reads-libraries ok",
        "no-secret ok",
        "no-etc ok",
        "writes-out ok",
        "no-write-beside ok",
        "address-space ok",
        "room-to-probe ok",
        "capped-after-reserving ok",
        "rises-with-grants ok",
        "never-past-the-budget ok",
    ];
    assert_eq!(lines, expected, "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(!scratch.path().join("planted").exists());
}

/// A conversion's answer as a well-behaved child gives it: the original, a JPEG
/// rendition and a thumbnail written to `out`.
fn answer(out: &Path) -> super::Files {
    std::fs::write(out.join("1280.jpg"), b"jpeg").unwrap();
    std::fs::write(out.join("thumb.jpg"), b"jpeg").unwrap();
    let file = |name: &str, role: &str| super::FileOut {
        name: name.into(),
        role: role.into(),
        content_type: "image/jpeg".into(),
        format: "jpeg".into(),
        width: Some(1280),
        height: Some(720),
        codec: None,
        bitrate: None,
        duration: None,
    };
    super::Files {
        asset_type: "sprite".into(),
        alpha: false,
        duration: None,
        width: Some(1920),
        height: Some(1080),
        renditions: vec![file("", "original"), file("1280.jpg", "image"), file("thumb.jpg", "thumb")],
    }
}

#[test]
fn what_a_child_answers_is_checked_before_the_worker_uploads_it() {
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(scratch.path().join("secret"), b"another tenant's").unwrap();
    std::os::unix::fs::symlink(scratch.path().join("secret"), out.join("link.jpg")).unwrap();
    let good = answer(&out);
    super::parent::check(&good, &out).expect("a well-behaved answer");

    let refused = |change: &dyn Fn(&mut super::Files)| {
        let mut bad = good.clone();
        change(&mut bad);
        super::parent::check(&bad, &out).expect_err("refused").to_string()
    };
    for name in ["../secret", "/etc/passwd", "link.jpg", "missing.jpg", "", "."] {
        let said = refused(&|f| f.renditions[1].name = name.into());
        assert!(said.contains("the sandbox answered the file"), "{name:?}: {said}");
    }
    assert!(refused(&|f| f.renditions[1].content_type = "text/html".into()).contains("the content type \"text/html\""));
    assert!(refused(&|f| f.renditions[1].role = "script".into()).contains("the role \"script\""));
    assert!(refused(&|f| f.renditions.swap(0, 1)).contains("the role"));
    assert!(refused(&|f| {
        f.renditions.pop();
    })
    .contains("no original or no thumbnail"));
    assert!(refused(&|f| f.asset_type = "html".into()).contains("the asset type"));
}
