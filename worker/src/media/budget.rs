//! The per-process media memory budget (`REELFARM_MEDIA_MEMORY`).
//!
//! The pixel caps bound each frame, not the sum a job holds at once. Before a conversion
//! decodes (after probing) and before a render opens its layers, the job estimates what
//! its decoders, scalers and encoders will hold ([`estimate`]) and reserves it here. An
//! estimate larger than the whole budget is refused at once ([`TooMuchMemory`]); others
//! wait for room, at most until the job's deadline, and give it back when their
//! [`Reservation`] is dropped (also when the job panics).
//!
//! It is an estimate: memory a decoder allocates beyond it (a bug, a crafted bitstream)
//! is not bounded here. Waiting is first come, first served only as far as the
//! condition variable wakes waiters: a large job may wait while smaller ones go ahead.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::limits::Deadline;
use super::MediaError;

const MIB: u64 = 1 << 20;

/// A job's estimate is larger than the whole budget: it could never run here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[error(
    "needs about {needed_mib} MiB of memory to decode; this worker allows {allowed_mib} MiB (REELFARM_MEDIA_MEMORY)"
)]
pub struct TooMuchMemory {
    /// The job's estimate, in MiB (rounded up).
    pub needed_mib: u64,
    /// The whole budget, in MiB.
    pub allowed_mib: u64,
}

/// Memory the media work of this process may hold at once, shared by every job (cheap to
/// clone). The default is unlimited: no reservation ever waits or fails. In a sandbox
/// (see `crate::sandbox`) the budget is the worker's: each reservation is asked of it.
#[derive(Clone, Default)]
pub struct MemoryBudget(Option<Arc<Shared>>, Option<Arc<dyn Delegate>>);

/// Where a sandboxed child asks for its memory: the worker that started it reserves it
/// in its own budget, and the child's address space is then capped by the kernel.
pub(crate) trait Delegate: Send + Sync {
    /// Reserves `bytes` for `what` ("the video"), waiting until `deadline`.
    fn reserve(&self, what: &'static str, bytes: u64, deadline: &Deadline) -> Result<(), MediaError>;
    /// Gives back `bytes` of an earlier reservation.
    fn release(&self, bytes: u64);
}

struct Shared {
    /// The whole budget in MiB.
    total: u64,
    /// MiB not reserved.
    free: Mutex<u64>,
    /// Signalled when a reservation is released.
    room: Condvar,
}

impl MemoryBudget {
    /// A budget of `bytes` (rounded down to whole MiB); `None` or 0: unlimited.
    pub fn new(bytes: Option<u64>) -> MemoryBudget {
        match bytes {
            Some(bytes) if bytes > 0 => {
                let total = bytes / MIB;
                let shared = Shared { total, free: Mutex::new(total), room: Condvar::new() };
                MemoryBudget(Some(Arc::new(shared)), None)
            }
            _ => MemoryBudget(None, None),
        }
    }

    /// A budget whose reservations are asked of `delegate` (a sandboxed child's).
    pub(crate) fn delegated(delegate: Arc<dyn Delegate>) -> MemoryBudget {
        MemoryBudget(None, Some(delegate))
    }

    /// The whole budget in MiB; `None` when unlimited.
    pub fn total_mib(&self) -> Option<u64> {
        self.0.as_ref().map(|s| s.total)
    }

    /// MiB not reserved now; `None` when unlimited.
    pub fn free_mib(&self) -> Option<u64> {
        self.0.as_ref().map(|s| *s.lock())
    }

    /// Reserves `bytes` (rounded up to whole MiB), waiting for room until `deadline`.
    /// Refused at once when `bytes` exceed the whole budget; `TimedOut` when no room
    /// was made before the deadline. Blocking: call it off the async runtime.
    pub(crate) fn reserve(&self, bytes: u64, deadline: &Deadline) -> Result<Reservation, MediaError> {
        self.reserve_for("the work", bytes, deadline)
    }

    /// [`MemoryBudget::reserve`] for `what` ("the Lottie animation"), the name a sandbox
    /// gives when the work needs more than it reserved.
    pub(crate) fn reserve_for(
        &self,
        what: &'static str,
        bytes: u64,
        deadline: &Deadline,
    ) -> Result<Reservation, MediaError> {
        if let Some(delegate) = &self.1 {
            delegate.reserve(what, bytes, deadline)?;
            return Ok(Reservation(Held::Delegated { delegate: delegate.clone(), bytes }));
        }
        let Some(shared) = &self.0 else {
            return Ok(Reservation(Held::Nothing));
        };
        let mib = bytes.div_ceil(MIB);
        if mib > shared.total {
            return Err(TooMuchMemory { needed_mib: mib, allowed_mib: shared.total }.into());
        }
        let mut free = shared.lock();
        let mut waited = false;
        while *free < mib {
            if !waited {
                tracing::info!(needed_mib = mib, free_mib = *free, "waiting for media memory");
                waited = true;
            }
            let Some(left) = deadline.remaining() else {
                return Err(deadline.error());
            };
            free = shared.room.wait_timeout(free, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        *free -= mib;
        Ok(Reservation(Held::Local { shared: shared.clone(), mib }))
    }
}

impl Shared {
    /// The free count; a panic elsewhere never leaves it inconsistent (plain integer).
    fn lock(&self) -> MutexGuard<'_, u64> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.total_mib() {
            Some(total) => write!(f, "MemoryBudget({total} MiB)"),
            None => f.write_str("MemoryBudget(unlimited)"),
        }
    }
}

/// Two budgets are equal when both are unlimited or they are the same budget.
impl PartialEq for MemoryBudget {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0, &self.1, &other.1) {
            (None, None, None, None) => true,
            (Some(a), Some(b), None, None) => Arc::ptr_eq(a, b),
            (None, None, Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// Memory taken from a [`MemoryBudget`], given back on drop.
#[must_use = "the memory is released when the reservation is dropped"]
pub(crate) struct Reservation(Held);

enum Held {
    /// Of an unlimited budget.
    Nothing,
    Local {
        shared: Arc<Shared>,
        mib: u64,
    },
    Delegated {
        delegate: Arc<dyn Delegate>,
        bytes: u64,
    },
}

impl Drop for Reservation {
    fn drop(&mut self) {
        match &self.0 {
            Held::Nothing => {}
            Held::Local { shared, mib } => {
                *shared.lock() += mib;
                shared.room.notify_all();
            }
            Held::Delegated { delegate, bytes } => delegate.release(*bytes),
        }
    }
}

/// What a job is estimated to hold at once, in bytes. Upper estimates from declared
/// sizes, before anything is decoded.
pub(crate) mod estimate {
    /// Bytes per pixel of a YUV 4:2:0 frame.
    const YUV420: f64 = 1.5;
    /// Frames a decoder may keep for reference (H.264/HEVC's most).
    const REFERENCE_FRAMES: u64 = 16;
    /// Frames one x264 encoder keeps: its lookahead, reference frames and one per thread.
    const ENCODER_FRAMES: u64 = 32;
    /// The render's canvases besides the encoder's: the one being drawn, the channel to
    /// the encoder, transition scratch canvases and the thumbnail.
    const RENDER_CANVASES: u64 = 8;
    /// Short sides of the MP4 renditions of a video (never above the source).
    const VIDEO_RUNGS: [u32; 3] = [1080, 720, 480];
    /// Longest side an SVG is rendered at.
    const SVG_LONG_SIDE: u32 = 1920;

    fn yuv(width: u32, height: u32, frames: u64) -> u64 {
        (f64::from(width) * f64::from(height) * YUV420) as u64 * frames
    }

    /// Frame threads libav starts for a conversion's decoder (`thread_count = 0`: one per
    /// core and one more, at most 16).
    fn conversion_decoder_threads() -> u64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        (cores + 1).min(16)
    }

    /// Frame threads of a render's video decoder (one per core, 1 to 8).
    fn render_decoder_threads() -> u64 {
        std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8) as u64
    }

    /// One video decoder at `width` × `height` with `threads` frame threads:
    /// w × h × 1.5 × (threads + 16 reference frames).
    fn decoder(width: u32, height: u32, threads: u64) -> u64 {
        yuv(width, height, threads + REFERENCE_FRAMES)
    }

    /// Converting a video of `width` × `height` (declared): its decoder, plus for each
    /// MP4 rung (1080p, 720p, 480p not above the source; the source size when it is
    /// below all of them; once more for the WebM when it has alpha) the encoder's frames
    /// (32) and the scaled frame.
    pub(crate) fn video(width: u32, height: u32, alpha: bool, decoder_threads: u64) -> u64 {
        let short = width.min(height).max(1);
        let mut rungs: Vec<u32> = VIDEO_RUNGS.into_iter().filter(|&r| r <= short).collect();
        if rungs.is_empty() {
            rungs.push(short);
        }
        if alpha {
            rungs.push(rungs[0]);
        }
        let scale = |side: u32| f64::from(side) / f64::from(short);
        let encoders: u64 = rungs
            .iter()
            .map(|&r| {
                let (w, h) = ((f64::from(width) * scale(r)) as u32, (f64::from(height) * scale(r)) as u32);
                yuv(w, h, ENCODER_FRAMES + 1)
            })
            .sum();
        decoder(width, height, decoder_threads) + encoders
    }

    /// [`video`] with libav's automatic thread count on this machine.
    pub(crate) fn video_here(width: u32, height: u32, alpha: bool) -> u64 {
        video(width, height, alpha, conversion_decoder_threads())
    }

    /// Converting an image of `width` × `height`: w × h × 4 (RGBA) × 3 (the decoded
    /// picture, the oriented copy and the largest rendition).
    pub(crate) fn image(width: u32, height: u32) -> u64 {
        u64::from(width) * u64::from(height) * 4 * 3
    }

    /// Converting an SVG: an image of the largest rendition (1920 × 1920 at most).
    pub(crate) fn svg() -> u64 {
        image(SVG_LONG_SIDE, SVG_LONG_SIDE)
    }

    /// Converting a Lottie file of `file_bytes`: the document as text, serde's tree and
    /// rlottie's model (about 16 times the file, images embedded in it decoded), and the
    /// thumbnail.
    pub(crate) fn lottie(file_bytes: u64) -> u64 {
        file_bytes * 16 + image(320, 320)
    }

    /// A render at `width` × `height` whose video layers have the declared `videos`
    /// sizes: the canvases (x264's 32 frames and 8 of the compositor) plus one decoder
    /// per video layer, all counted as open at once (an upper estimate: layers of
    /// different clips do not decode together).
    pub(crate) fn render(width: u32, height: u32, videos: &[(u32, u32)], decoder_threads: u64) -> u64 {
        let canvases = yuv(width, height, ENCODER_FRAMES + RENDER_CANVASES);
        canvases + videos.iter().map(|&(w, h)| decoder(w, h, decoder_threads)).sum::<u64>()
    }

    /// [`render`] with the render decoders' thread count on this machine.
    pub(crate) fn render_here(width: u32, height: u32, videos: &[(u32, u32)]) -> u64 {
        render(width, height, videos, render_decoder_threads())
    }
}
