//! The worker's side of a sandbox: starts the child, grants its memory from the worker's
//! budget, bounds its time, and checks what it answers.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use super::{Files, Grant, Message, Plan, PlanLimits, Work, ASSET_TYPES, MADE_TYPES, ROLES};
use crate::media::budget::Reservation;
use crate::media::limits::Deadline;
use crate::media::{Limits, MediaError, MemoryBudget};

/// Address space a child may map for sniffing and probing, before its reservation.
const PROBE_MEMORY: u64 = 512 << 20;

/// Longest line the worker reads from a child: a conversion's answer is a few KiB.
const MAX_LINE: u64 = 1 << 20;

/// What of a child's standard error is kept for the log and the error: its end.
const STDERR_TAIL: usize = 8 * 1024;

/// Time a child has past its deadline to notice it and answer before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Starts sandboxed children of a program: this binary unless configured (e.g. the
/// bundle's launcher).
#[derive(Debug, Clone)]
pub struct Sandbox {
    program: PathBuf,
}

impl Sandbox {
    /// Children of `program` (`None`: this executable).
    pub fn new(program: Option<PathBuf>) -> std::io::Result<Sandbox> {
        let program = match program {
            Some(program) => program,
            None => std::env::current_exe()?,
        };
        Ok(Sandbox { program })
    }

    /// Converts `input` into renditions in `out_dir` (which must exist) in a child within
    /// `limits`, its memory reserved from their budget.
    pub async fn convert(&self, input: &Path, out_dir: &Path, limits: &Limits) -> Result<Files, MediaError> {
        let plan = Plan {
            work: Work::Convert { input: input.to_owned(), out_dir: out_dir.to_owned() },
            limits: PlanLimits::from(limits),
            probe_memory: PROBE_MEMORY,
            most_memory: limits.memory.total_mib().map(|mib| mib << 20),
            cpu_seconds: cpu_seconds(limits.time_limit),
        };
        let files = self.run(&plan, &limits.memory).await?;
        check(&files, out_dir)?;
        Ok(files)
    }

    /// Runs `plan` in a child, its reservations taken from `budget`, until it answers,
    /// fails or passes its deadline.
    async fn run(&self, plan: &Plan, budget: &MemoryBudget) -> Result<Files, MediaError> {
        let deadline = Deadline::after(plan.limits.time_limit);
        let mut child = self.start()?;
        let mut stdin = child.stdin.take().ok_or_else(|| MediaError::Internal("no stdin".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| MediaError::Internal("no stdout".into()))?;
        let stderr = tokio::spawn(tail(child.stderr.take()));
        send(&mut stdin, plan).await?;
        let mut child_run = ChildRun { budget, deadline, stdin, reserved: None };
        let answered =
            tokio::time::timeout(plan.limits.time_limit + GRACE, child_run.talk(BufReader::new(stdout))).await;
        // A child that answered goes by itself; one that did not by the deadline, or
        // lingers after its answer, is killed.
        let status = match answered {
            Ok(_) => tokio::time::timeout(GRACE, child.wait()).await.ok().transpose()?,
            Err(_) => None,
        };
        if status.is_none() {
            child.kill().await?;
        }
        let Ok(answer) = answered else { return Err(deadline.error()) };
        match answer? {
            Some(Message::Converted(files)) => Ok(files),
            Some(Message::Failed { retryable: true, message }) => Err(MediaError::Io(std::io::Error::other(message))),
            Some(Message::Failed { message, .. }) => Err(MediaError::Reported(message)),
            _ => {
                let stderr = stderr.await.unwrap_or_default();
                let reserved = child_run.reserved.as_ref().map(|(_, what, bytes)| (what.as_str(), *bytes));
                Err(match status {
                    Some(status) => ended(status, &stderr, reserved, &plan.limits),
                    None => MediaError::Crashed("it stopped answering".into()),
                })
            }
        }
    }

    fn start(&self) -> Result<Child, MediaError> {
        let mut command = Command::new(&self.program);
        command
            .arg("sandbox")
            // Nothing of the worker's environment (database addresses, keys) reaches it.
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: prctl between fork and exec only sets a flag of the new process.
        unsafe {
            command.pre_exec(|| {
                // The child goes when the worker's thread that started it goes.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn().map_err(|e| {
            MediaError::Io(std::io::Error::new(
                e.kind(),
                format!("starting the sandbox {}: {e}", self.program.display()),
            ))
        })
    }
}

/// A child at work: what it reserved so far.
struct ChildRun<'a> {
    budget: &'a MemoryBudget,
    deadline: Deadline,
    stdin: ChildStdin,
    /// What the child reserved (held until it ends) and for what.
    reserved: Option<(Reservation, String, u64)>,
}

impl ChildRun<'_> {
    /// Grants the child's reservations until it answers; `None` when it ended without.
    async fn talk(&mut self, mut lines: impl AsyncBufRead + Unpin) -> Result<Option<Message>, MediaError> {
        loop {
            let mut line = Vec::new();
            (&mut lines).take(MAX_LINE).read_until(b'\n', &mut line).await?;
            if line.last() != Some(&b'\n') {
                return Ok(None);
            }
            let message: Message = serde_json::from_slice(&line)
                .map_err(|e| MediaError::Internal(format!("the sandbox answered nonsense: {e}")))?;
            let Message::Reserve { what, bytes } = message else { return Ok(Some(message)) };
            if self.reserved.is_some() {
                return Err(MediaError::Internal("the sandbox reserved memory twice".into()));
            }
            let (budget, deadline) = (self.budget.clone(), self.deadline);
            let reserved = tokio::task::spawn_blocking(move || budget.reserve(bytes, &deadline))
                .await
                .map_err(|e| MediaError::Internal(format!("reserving memory: {e}")))?;
            let grant = match reserved {
                Ok(reservation) => {
                    self.reserved = Some((reservation, what, bytes));
                    Grant::Granted
                }
                Err(MediaError::Memory(too_much)) => Grant::TooMuch(too_much),
                Err(_) => Grant::TimedOut,
            };
            send(&mut self.stdin, &grant).await?;
        }
    }
}

/// Why a child ended without an answer, from its status and the end of its standard error.
fn ended(status: ExitStatus, stderr: &str, reserved: Option<(&str, u64)>, limits: &PlanLimits) -> MediaError {
    tracing::warn!(%status, stderr = %stderr, "a sandboxed child ended without an answer");
    let out_of_memory = ["memory allocation of", "std::bad_alloc", "Cannot allocate memory", "out of memory"]
        .iter()
        .any(|s| stderr.contains(s));
    match (status.signal(), reserved) {
        (Some(libc::SIGXCPU), _) => MediaError::TimedOut { limit: limits.time_limit.as_secs_f64() },
        (Some(_), Some((what, bytes))) if out_of_memory => {
            MediaError::OutOfMemory { what: what.into(), mib: bytes.div_ceil(1 << 20) }
        }
        (Some(_), None) if out_of_memory => {
            MediaError::OutOfMemory { what: "probing the file".into(), mib: PROBE_MEMORY >> 20 }
        }
        (Some(signal), _) => MediaError::Crashed(signal_name(signal)),
        (None, _) => MediaError::Crashed(format!("exit status {}", status.code().unwrap_or(-1))),
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGSEGV => "segmentation fault".into(),
        libc::SIGABRT => "aborted".into(),
        libc::SIGBUS => "bus error".into(),
        libc::SIGILL => "illegal instruction".into(),
        libc::SIGFPE => "arithmetic error".into(),
        libc::SIGKILL => "killed".into(),
        libc::SIGSYS => "refused system call".into(),
        other => format!("signal {other}"),
    }
}

/// Checks a child's answer: its files are regular files in `out_dir` (never a link or a
/// path elsewhere), with known roles and content types, and exactly one original first.
pub(super) fn check(files: &Files, out_dir: &Path) -> Result<(), MediaError> {
    let bad = |what: String| MediaError::Internal(format!("the sandbox answered {what}"));
    if !ASSET_TYPES.contains(&files.asset_type.as_str()) {
        return Err(bad(format!("the asset type {:?}", files.asset_type)));
    }
    for (i, r) in files.renditions.iter().enumerate() {
        if !ROLES.contains(&r.role.as_str()) || (r.role == "original") != (i == 0) {
            return Err(bad(format!("the role {:?} for rendition {i}", r.role)));
        }
        if r.role == "original" {
            continue;
        }
        if !MADE_TYPES.contains(&r.content_type.as_str()) {
            return Err(bad(format!("the content type {:?}", r.content_type)));
        }
        let plain = Path::new(&r.name).file_name().is_some_and(|n| n == r.name.as_str());
        let meta = plain.then(|| std::fs::symlink_metadata(out_dir.join(&r.name)).ok()).flatten();
        if !meta.is_some_and(|m| m.file_type().is_file()) {
            return Err(bad(format!("the file {:?}", r.name)));
        }
    }
    if files.renditions.first().is_none_or(|r| r.role != "original")
        || files.renditions.last().is_none_or(|r| r.role != "thumb")
    {
        return Err(bad("no original or no thumbnail".into()));
    }
    Ok(())
}

/// CPU seconds a unit with `time_limit` may use: every core for all of it.
fn cpu_seconds(time_limit: Duration) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    time_limit.as_secs().max(1).saturating_mul(cores)
}

async fn send(stdin: &mut ChildStdin, message: &impl serde::Serialize) -> Result<(), MediaError> {
    let mut line = serde_json::to_vec(message).map_err(|e| MediaError::Internal(e.to_string()))?;
    line.push(b'\n');
    // A child that went away is told nothing more; its status says why.
    let _ = stdin.write_all(&line).await;
    let _ = stdin.flush().await;
    Ok(())
}

/// The last [`STDERR_TAIL`] bytes of what a child writes to standard error.
async fn tail(stderr: Option<tokio::process::ChildStderr>) -> String {
    let Some(mut stderr) = stderr else { return String::new() };
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = stderr.read(&mut buf).await {
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
