//! The media memory budget: the estimates, reservations that wait for room and give it
//! back on drop, and jobs estimated above the whole budget refused at once.

use std::sync::mpsc;
use std::time::Duration;

use super::{convert, Limits, Scratch};
use crate::media::budget::{estimate, MemoryBudget, TooMuchMemory};
use crate::media::limits::Deadline;
use crate::media::MediaError;

const MIB: u64 = 1 << 20;

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(30))
}

#[test]
fn estimates_follow_the_documented_formulas() {
    // Image: w × h × 4 × 3.
    assert_eq!(estimate::image(640, 480), 640 * 480 * 12);
    // Video below every rung: one rung at the source size. Decoder 320×240×1.5×(4+16),
    // the rung's encoder 320×240×1.5×(32+1).
    let frame = 320 * 240 * 3 / 2;
    assert_eq!(estimate::video(320, 240, false, 4), frame * 20 + frame * 33);
    // Alpha adds the WebM at the largest rung.
    assert_eq!(estimate::video(320, 240, true, 4), frame * 20 + 2 * frame * 33);
    // 1280×720: the 720p and 480p rungs (854×480 truncated to 853).
    let hd = 1280 * 720 * 3 / 2;
    assert_eq!(estimate::video(1280, 720, false, 4), hd * 20 + hd * 33 + (853 * 480 * 3 / 2) * 33);
    // Render: the canvas × (32 + 8), plus one decoder per video layer.
    assert_eq!(estimate::render(1280, 720, &[], 4), hd * 40);
    assert_eq!(estimate::render(1280, 720, &[(320, 240), (320, 240)], 4), hd * 40 + 2 * frame * 20);
    // More decoder threads, more memory.
    assert!(estimate::video(1920, 1080, false, 17) > estimate::video(1920, 1080, false, 2));
}

#[test]
fn reservations_take_whole_mib_and_give_them_back_on_drop() {
    let budget = MemoryBudget::new(Some(10 * MIB + 123));
    assert_eq!((budget.total_mib(), budget.free_mib()), (Some(10), Some(10)));
    let a = budget.reserve(3 * MIB, &deadline()).unwrap();
    let b = budget.reserve(MIB + 1, &deadline()).unwrap();
    assert_eq!(budget.free_mib(), Some(5), "1 MiB and a byte is 2 MiB");
    drop(a);
    assert_eq!(budget.free_mib(), Some(8));
    drop(b);
    assert_eq!(budget.free_mib(), Some(10));
}

#[test]
fn an_estimate_above_the_whole_budget_is_refused_at_once() {
    let budget = MemoryBudget::new(Some(8 * MIB));
    let err = budget.reserve(20 * MIB, &deadline()).err().expect("too large");
    assert!(matches!(err, MediaError::Memory(TooMuchMemory { needed_mib: 20, allowed_mib: 8 })), "{err:?}");
    assert_eq!(err.key(), "media.too_large");
    assert!(!err.is_retryable());
    assert_eq!(
        err.to_string(),
        "the file needs about 20 MiB of memory to decode; this worker allows 8 MiB (REELFARM_MEDIA_MEMORY)"
    );
    assert_eq!(budget.free_mib(), Some(8), "nothing was taken");
}

#[test]
fn a_job_waits_for_room_and_proceeds_when_another_finishes() {
    let budget = MemoryBudget::new(Some(10 * MIB));
    let held = budget.reserve(8 * MIB, &deadline()).unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let budget = budget.clone();
        std::thread::spawn(move || {
            let reservation = budget.reserve(5 * MIB, &deadline()).unwrap();
            tx.send(()).unwrap();
            drop(reservation);
        })
    };
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "no room yet: the job waits");
    drop(held);
    rx.recv_timeout(Duration::from_secs(10)).expect("room made: the job proceeds");
    waiter.join().unwrap();
    assert_eq!(budget.free_mib(), Some(10));
}

#[test]
fn waiting_ends_at_the_deadline() {
    let budget = MemoryBudget::new(Some(10 * MIB));
    let _held = budget.reserve(10 * MIB, &deadline()).unwrap();
    let err = budget.reserve(MIB, &Deadline::after(Duration::from_millis(100))).err().expect("no room in time");
    assert!(matches!(err, MediaError::TimedOut { .. }), "{err:?}");
}

#[test]
fn a_panicking_job_gives_its_memory_back() {
    let budget = MemoryBudget::new(Some(10 * MIB));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _memory = budget.reserve(6 * MIB, &deadline()).unwrap();
        panic!("decoder bug");
    }));
    assert!(result.is_err());
    assert_eq!(budget.free_mib(), Some(10));
}

#[test]
fn an_unlimited_budget_never_waits() {
    let budget = MemoryBudget::default();
    assert_eq!(budget.total_mib(), None);
    let _a = budget.reserve(u64::MAX, &deadline()).unwrap();
    let _b = budget.reserve(u64::MAX, &deadline()).unwrap();
    assert_eq!(MemoryBudget::new(Some(0)), MemoryBudget::default(), "0 disables the budget");
}

#[test]
fn a_conversion_above_the_budget_fails_and_a_small_picture_converts() {
    let s = Scratch::new();
    let limits = Limits { memory: MemoryBudget::new(Some(8 * MIB)), ..Limits::default() };
    let video = s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=1280x720:r=25", "-frames:v", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p"],
        "hd.mp4",
    );
    let err = convert(&video, &s.out(), &limits, &|_| {}).expect_err("above the budget");
    assert!(matches!(err, MediaError::Memory(TooMuchMemory { allowed_mib: 8, .. })), "{err:?}");
    let picture = s.ffmpeg(&["-f", "lavfi", "-i", "testsrc2=s=320x240", "-frames:v", "1"], "small.png");
    convert(&picture, &s.out(), &limits, &|_| {}).expect("a small picture fits");
    assert_eq!(limits.memory.free_mib(), Some(8), "every reservation was released");
}
