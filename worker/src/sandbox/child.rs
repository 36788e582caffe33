//! `reelfarm sandbox`: the child's side. Reads its [`Plan`], confines itself, runs the
//! engine and answers; see the module above.

use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use super::{confine, FileOut, Files, Grant, Message, Plan, Work};
use crate::media::budget::Delegate;
use crate::media::limits::Deadline;
use crate::media::{self, Converted, MediaError, MemoryBudget, Role};

/// Longest line the child reads: a plan or a grant is far shorter.
const MAX_LINE: u64 = 64 * 1024;

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
    let channel = Arc::new(Channel { answers: Mutex::new(answers) });
    let plan: Plan = match read_line(&mut std::io::stdin().lock()) {
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
            run(&plan, channel.clone())
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

/// Runs the plan's work with the worker's budget behind `channel`.
fn run(plan: &Plan, channel: Arc<Channel>) -> Message {
    let limits = plan.limits.with_budget(MemoryBudget::delegated(channel));
    let Work::Convert { input, out_dir } = &plan.work;
    match media::convert(input, out_dir, &limits, &|_| {}) {
        Ok(converted) => Message::Converted(files(converted)),
        Err(e) => Message::Failed { retryable: e.is_retryable(), message: e.to_string() },
    }
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

/// The child's lines to the worker, and the worker's grants on standard input.
struct Channel {
    answers: Mutex<File>,
}

impl Channel {
    fn send(&self, message: &Message) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.write_all(&line)?;
        answers.flush()
    }
}

impl Delegate for Channel {
    fn reserve(&self, what: &'static str, bytes: u64, deadline: &Deadline) -> Result<(), MediaError> {
        let asked = Message::Reserve { what: what.into(), bytes };
        self.send(&asked)?;
        let grant: Grant = read_line(&mut std::io::stdin().lock())?;
        match grant {
            Grant::Granted => {
                confine::cap_memory(bytes).map_err(MediaError::Internal)?;
                Ok(())
            }
            Grant::TooMuch(too_much) => Err(too_much.into()),
            Grant::TimedOut => Err(deadline.error()),
        }
    }
}

/// Reads one JSON line (at most [`MAX_LINE`] bytes).
fn read_line<T: serde::de::DeserializeOwned>(input: &mut impl BufRead) -> std::io::Result<T> {
    let mut line = Vec::new();
    std::io::Read::take(&mut *input, MAX_LINE).read_until(b'\n', &mut line)?;
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
