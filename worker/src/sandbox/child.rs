//! `reelfarm sandbox`: the child's side. Reads its [`Plan`], confines itself, runs the
//! engine and answers; see the module above.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use image::codecs::jpeg::JpegEncoder;
use image::ImageEncoder;

use reelfarm_domain::template::Source;
use tokio_util::sync::CancellationToken;

use super::{confine, FileOut, Files, FrameRequest, Message, Piece, Plan, RenderPlan, Reply, Work, PRESETS};
use crate::media::budget::Delegate;
use crate::media::limits::Deadline;
use crate::media::{self, Converted, Limits, MediaError, MemoryBudget, Role};
use crate::render::{self, split, Progress, Quality, RenderError, RenderSettings, SnapshotCache, SoundStore};

/// Longest plan the child reads: a template with its values (job bodies are at most a
/// few MiB).
const MAX_PLAN: u64 = 64 << 20;
/// Longest reply the child reads: a grant or a file name.
const MAX_LINE: u64 = 64 * 1024;
/// Quality of the preview frames' JPEGs (the thumbnail's).
const PREVIEW_JPEG_QUALITY: u8 = 85;

/// Runs one plan. Exit status 0 when an answer was written (the work's own failure
/// included), 1 when the sandbox could not be set up or the worker went away.
pub fn main() -> ExitCode {
    // The answers go to what was standard output; anything a library prints there goes
    // to standard error instead.
    let answers = match take_stdout() {
        Ok(answers) => answers,
        Err(e) => {
            eprintln!("reelfarm sandbox: standard output: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A child is started before its work comes (the worker keeps one spare): what every
    // render needs is made while it waits.
    render::text::warm_up();
    // SAFETY: standard input is this process's, read through this one reader only.
    let input = BufReader::new(unsafe { File::from_raw_fd(libc::STDIN_FILENO) });
    let channel = Arc::new(Channel {
        answers: Mutex::new(answers),
        input: Mutex::new(input),
        granted: Mutex::new(0),
        held: AtomicU64::new(0),
    });
    let plan: Plan = match channel.read(MAX_PLAN) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("reelfarm sandbox: reading the plan: {e}");
            return ExitCode::FAILURE;
        }
    };
    let message = match confine::apply(&plan) {
        Ok(confined) => {
            if !confined.landlock {
                eprintln!("reelfarm sandbox: this kernel has no Landlock; files are not restricted");
            }
            let limits = plan.limits.with_budget(MemoryBudget::delegated(channel.clone()));
            match &plan.work {
                Work::Convert { input, out_dir } => convert(input, out_dir, &limits),
                Work::Render(render) => self::render(render, limits, &channel),
                Work::Preview { quality, still_cache, video_cache, idle, .. } => {
                    let kept = SnapshotCache::new(*still_cache, *video_cache);
                    return previews(*quality, &kept, *idle, &limits, &channel);
                }
            }
        }
        Err(e) => Message::Failed { retryable: true, message: format!("the sandbox could not be set up: {e}") },
    };
    match channel.send(&message) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reelfarm sandbox: answering: {e}");
            ExitCode::FAILURE
        }
    }
}

fn convert(input: &Path, out_dir: &Path, limits: &Limits) -> Message {
    match media::convert(input, out_dir, limits, &|_| {}) {
        Ok(converted) => Message::Converted(files(converted)),
        Err(MediaError::TimedOut { limit }) => Message::TimedOut { limit },
        Err(e) => Message::Failed { retryable: e.is_retryable(), message: e.to_string() },
    }
}

/// Renders the plan's piece; its progress and the fleet's sounds go through `channel`.
fn render(plan: &RenderPlan, limits: Limits, channel: &Arc<Channel>) -> Message {
    let Some(preset) = PRESETS.iter().find(|p| **p == plan.preset) else {
        return Message::Failed { retryable: false, message: format!("unknown x264 preset {:?}", plan.preset) };
    };
    let sounds = plan.sounds.then(|| {
        let store = ChannelSounds { channel: channel.clone(), dir: plan.dir.clone(), puts: AtomicU64::new(0) };
        Arc::new(store) as Arc<dyn SoundStore>
    });
    let settings = RenderSettings {
        quality: plan.quality,
        output: plan.output,
        crf: plan.crf,
        preset,
        threads: plan.threads,
        time_limit: limits.time_limit,
        limits,
        // The worker kills a cancelled render's child.
        stop: CancellationToken::new(),
        sounds,
        speech: plan.speech.clone(),
        max_seconds: plan.max_seconds,
    };
    let resolve = |s: &Source| plan.sources.iter().find(|(f, _)| f == s).map(|(_, p)| p.clone());
    let last = AtomicU64::new(u64::MAX);
    let progress = |p: Progress| {
        let percent = p.frames_done * 100 / p.frames_total.max(1);
        if last.swap(percent, Ordering::Relaxed) != percent {
            // A worker that went away kills this child; nothing to do here.
            let _ = channel.send(&Message::Progress { frames_done: p.frames_done, frames_total: p.frames_total });
        }
    };
    let template = &plan.template;
    let made = match &plan.piece {
        Piece::Whole { out, thumb } => render::render(template, &resolve, &settings, out, thumb, &progress).map(Some),
        Piece::Frames { range, out, thumb } => {
            split::render_frames(template, &resolve, &settings, range.clone(), out, thumb, &progress).map(Some)
        }
        Piece::Sound { out } => split::render_sound(template, &resolve, &settings, out).map(|_| None),
    };
    match made {
        Ok(made) => {
            Message::Rendered { made: made.map(Box::new), sounds: reelfarm_backends::metrics::render_sound_counts() }
        }
        Err(e) => failed(&e),
    }
}

/// The answer of a render or frame that failed with `e`.
fn failed(e: &RenderError) -> Message {
    match e {
        RenderError::TimedOut { limit } => Message::TimedOut { limit: *limit },
        e => Message::Failed { retryable: retryable(e), message: e.to_string() },
    }
}

/// Draws preview frames as they are asked for, keeping what it decoded in `kept`, until
/// the worker stops asking: its end of the pipe closes, or nothing comes for `idle`.
fn previews(quality: Quality, kept: &SnapshotCache, idle: Duration, limits: &Limits, channel: &Channel) -> ExitCode {
    while channel.asked_within(idle) {
        let Ok(request) = channel.read::<FrameRequest>(MAX_PLAN) else { break };
        let message = match frame(&request, quality, kept, limits) {
            Ok(()) => Message::Framed,
            Err(e) => failed(&e),
        };
        if channel.send(&message).is_err() {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Draws the frame of `request` and writes it as a JPEG to its file.
fn frame(request: &FrameRequest, quality: Quality, kept: &SnapshotCache, limits: &Limits) -> Result<(), RenderError> {
    let resolve = |s: &Source| request.sources.iter().find(|(f, _)| f == s).map(|(_, p)| p.clone());
    let frame = render::snapshot(&request.template, &resolve, Some(kept), quality, request.at, limits)?;
    let mut jpeg = Vec::new();
    JpegEncoder::new_with_quality(&mut jpeg, PREVIEW_JPEG_QUALITY)
        .write_image(frame.as_raw(), frame.width(), frame.height(), image::ExtendedColorType::Rgb8)
        .map_err(|e| RenderError::Internal(format!("encoding the frame: {e}")))?;
    std::fs::write(&request.out, jpeg)?;
    Ok(())
}

/// Whether a later attempt at a render that failed with `e` may succeed: not when the
/// template or its sources are at fault.
fn retryable(e: &RenderError) -> bool {
    !e.is_bad_input()
}

/// A conversion's result as the child reports it.
fn files(converted: Converted) -> Files {
    let renditions = converted
        .renditions
        .into_iter()
        .map(|r| FileOut {
            name: match r.role {
                Role::Original => String::new(),
                _ => r.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            },
            role: match r.role {
                Role::Original => "original",
                Role::Image { .. } => "image",
                Role::Video { .. } | Role::VideoAlpha { .. } => "video",
                Role::Audio { .. } => "audio",
                Role::Thumb => "thumb",
            }
            .into(),
            content_type: r.content_type.into(),
            format: r.format,
            width: r.width,
            height: r.height,
            codec: r.codec,
            bitrate: r.bitrate,
            duration: r.duration,
        })
        .collect();
    Files {
        asset_type: converted.kind.asset_type().into(),
        alpha: converted.alpha,
        duration: converted.duration,
        width: converted.width,
        height: converted.height,
        renditions,
    }
}

/// The child's lines to the worker, and the worker's replies on standard input.
struct Channel {
    answers: Mutex<File>,
    /// Standard input: the plan, the worker's replies and, for previews, its requests.
    input: Mutex<BufReader<File>>,
    /// Bytes of memory the worker granted so far; held while a question waits for its
    /// reply, so that replies come in the order of the questions.
    granted: Mutex<u64>,
    /// Bytes the engine holds reserved now (at most `granted`).
    held: AtomicU64,
}

impl Channel {
    fn send(&self, message: &Message) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.write_all(&line)?;
        answers.flush()
    }

    /// Reads one JSON line of at most `max` bytes from the worker.
    fn read<T: serde::de::DeserializeOwned>(&self, max: u64) -> std::io::Result<T> {
        read_line(&mut *self.input.lock().unwrap_or_else(|e| e.into_inner()), max)
    }

    /// Whether the worker asks something within `idle` (something read already counts).
    fn asked_within(&self, idle: Duration) -> bool {
        if !self.input.lock().unwrap_or_else(|e| e.into_inner()).buffer().is_empty() {
            return true;
        }
        let mut stdin = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
        let millis = idle.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: poll reads and writes the one pollfd we pass, for its count of 1.
        unsafe { libc::poll(&mut stdin, 1, millis) > 0 }
    }

    /// Sends `question` and reads the worker's reply; the caller holds `granted`.
    fn ask(&self, question: &Message) -> std::io::Result<Reply> {
        self.send(question)?;
        self.read(MAX_LINE)
    }
}

impl Delegate for Channel {
    /// Asks the worker only for what the engine's reservations need beyond what it was
    /// granted before: memory granted is kept until the child ends (its peak), and the
    /// address-space limit follows it.
    fn reserve(&self, what: &'static str, bytes: u64, deadline: &Deadline) -> Result<(), MediaError> {
        let mut granted = self.granted.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = self.held.load(Ordering::SeqCst).saturating_add(bytes);
        if wanted > *granted {
            match self.ask(&Message::Reserve { what: what.into(), bytes: wanted - *granted })? {
                Reply::Granted => {
                    *granted = wanted;
                    confine::cap_memory(wanted).map_err(MediaError::Internal)?;
                }
                Reply::TooMuch(too_much) => return Err(too_much.into()),
                Reply::TimedOut => return Err(deadline.error()),
                Reply::Sound(_) => return Err(MediaError::Internal("the worker answered out of turn".into())),
            }
        }
        self.held.fetch_add(bytes, Ordering::SeqCst);
        Ok(())
    }

    fn release(&self, bytes: u64) {
        self.held.fetch_sub(bytes, Ordering::SeqCst);
    }
}

/// The fleet's kept sounds, read and written by the worker as files in the render's
/// directory.
struct ChannelSounds {
    channel: Arc<Channel>,
    dir: PathBuf,
    /// Sounds handed over so far (their files' names).
    puts: AtomicU64,
}

impl std::fmt::Debug for ChannelSounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelSounds")
    }
}

impl SoundStore for ChannelSounds {
    fn get(&self, name: &str) -> Option<Vec<u8>> {
        let _turn = self.channel.granted.lock().unwrap_or_else(|e| e.into_inner());
        match self.channel.ask(&Message::SoundGet { name: name.into() }) {
            Ok(Reply::Sound(Some(file))) => std::fs::read(self.dir.join(file)).ok(),
            _ => None,
        }
    }

    fn put(&self, name: &str, bytes: Vec<u8>) {
        let file = format!("sound-put-{}", self.puts.fetch_add(1, Ordering::Relaxed));
        if std::fs::write(self.dir.join(&file), bytes).is_ok() {
            let _ = self.channel.send(&Message::SoundPut { name: name.into(), file });
        }
    }
}

/// Reads one JSON line of at most `max` bytes.
fn read_line<T: serde::de::DeserializeOwned>(input: &mut impl BufRead, max: u64) -> std::io::Result<T> {
    let mut line = Vec::new();
    std::io::Read::take(&mut *input, max).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no complete line"));
    }
    serde_json::from_slice(&line).map_err(std::io::Error::other)
}

/// A copy of standard output for the answers, with standard output itself pointed at
/// standard error.
fn take_stdout() -> std::io::Result<File> {
    let stdout = std::io::stdout();
    // SAFETY: dup and dup2 on the process's own standard descriptors; the duplicate is a
    // new descriptor owned by the returned File alone.
    unsafe {
        let copy = libc::dup(stdout.as_raw_fd());
        if copy < 0 || libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(File::from_raw_fd(copy))
    }
}
