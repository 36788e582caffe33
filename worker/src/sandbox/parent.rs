//! The worker's side of a sandbox: starts the child, grants its memory from the worker's
//! budget, bounds its time, and checks what it answers.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use reelfarm_domain::template::{Source, Template};

use super::{Files, FrameRequest, Message, Plan, PlanLimits, RenderPlan, Reply, Work, ASSET_TYPES, MADE_TYPES, ROLES};
use crate::media::budget::Reservation;
use crate::media::limits::Deadline;
use crate::media::{Limits, MediaError, MemoryBudget, TooMuchMemory};
use crate::render::{Progress, Quality, RenderError, RenderOutput, SoundStore};

/// Address space a child may map for sniffing and probing, before its reservation.
const PROBE_MEMORY: u64 = 512 << 20;

/// Longest line the worker reads from a child: a render's answer holds its captions.
const MAX_LINE: u64 = 16 << 20;

/// Largest kept sound a child may hand over: an hour of stereo AAC at 320 kbit/s is
/// about 150 MB.
const MAX_KEPT_SOUND: u64 = 256 << 20;

/// What of a child's standard error is kept for the log and the error: its end.
const STDERR_TAIL: usize = 8 * 1024;

/// Time a child has past its deadline to notice it and answer before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// A preview child asked nothing for this long ends by itself (the worker's own sweep
/// ends them sooner, see `PreviewChild::idle`).
const PREVIEW_CHILD_IDLE: Duration = Duration::from_secs(600);

/// Starts sandboxed children of a program: this binary unless configured (e.g. the
/// bundle's launcher). One child is kept started ahead, waiting for its plan with the
/// fonts loaded, so that a unit of work does not wait for a process to start.
#[derive(Debug, Clone)]
pub struct Sandbox {
    program: PathBuf,
    /// Arguments before `sandbox`: a dynamic loader's, when this process was started by
    /// one (`ld-linux… --library-path LIB reelfarm …`, as the bundle does).
    leading: Vec<std::ffi::OsString>,
    spare: Arc<std::sync::Mutex<Option<Child>>>,
}

/// What a render's child may ask of the worker while it works, besides memory.
pub struct RenderServices<'a> {
    /// Called with the render's progress.
    pub progress: &'a (dyn Fn(Progress) + Send + Sync),
    /// Where the fleet keeps encoded sounds (none: the child encodes its own).
    pub sounds: Option<Arc<dyn SoundStore>>,
    /// Once cancelled, the child is killed and the render ends with
    /// [`RenderError::Cancelled`].
    pub stop: &'a CancellationToken,
}

impl Sandbox {
    /// Children of `program` (`None`: this executable).
    pub fn new(program: Option<PathBuf>) -> std::io::Result<Sandbox> {
        let (program, leading) = match program {
            Some(program) => (program, Vec::new()),
            None => this_program()?,
        };
        Ok(Sandbox { program, leading, spare: Arc::default() })
    }

    /// Converts `input` into renditions in `out_dir` (which must exist) in a child within
    /// `limits`, its memory reserved from their budget.
    pub async fn convert(&self, input: &Path, out_dir: &Path, limits: &Limits) -> Result<Files, MediaError> {
        let plan = plan(Work::Convert { input: input.to_owned(), out_dir: out_dir.to_owned() }, limits);
        let stop = CancellationToken::new();
        let services = RenderServices { progress: &|_| {}, sounds: None, stop: &stop };
        let Message::Converted(files) = self.run(&plan, &limits.memory, &services).await? else {
            return Err(MediaError::Internal("the sandbox answered a conversion with something else".into()));
        };
        check(&files, out_dir)?;
        Ok(files)
    }

    /// Renders `render` (its sources and outputs in its directory) in a child within
    /// `limits`, its memory reserved from their budget. The piece's files are checked to
    /// be regular files where the plan put them.
    pub async fn render(
        &self,
        render: RenderPlan,
        limits: &Limits,
        services: &RenderServices<'_>,
    ) -> Result<Option<RenderOutput>, RenderError> {
        let (out, thumb) = render.piece.outputs();
        let (out, thumb) = (out.clone(), thumb.cloned());
        let plan = plan(Work::Render(Box::new(render)), limits);
        let made = match self.run(&plan, &limits.memory, services).await {
            Ok(Message::Rendered { made, sounds: (encoded, kept) }) => {
                for (kept, n) in [(false, encoded), (true, kept)].into_iter().filter(|(_, n)| *n > 0) {
                    reelfarm_backends::metrics::render_sounds(kept, n);
                }
                made.map(|made| *made)
            }
            Ok(_) => return Err(RenderError::Internal("the sandbox answered a render with something else".into())),
            Err(e) => return Err(render_error(e, services.stop)),
        };
        let regular = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
        if !regular(&out) || thumb.as_deref().is_some_and(|t| t.exists() && !regular(t)) {
            return Err(RenderError::Internal("the sandbox answered with a file that is not a regular file".into()));
        }
        Ok(made)
    }

    /// Runs `plan` in a child, its reservations taken from `budget`, until it answers,
    /// fails, passes its deadline or is stopped.
    async fn run(
        &self,
        plan: &Plan,
        budget: &MemoryBudget,
        services: &RenderServices<'_>,
    ) -> Result<Message, MediaError> {
        let deadline = Deadline::after(plan.limits.time_limit);
        let mut child = self.start()?;
        let mut stdin = child.stdin.take().ok_or_else(|| MediaError::Internal("no stdin".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| MediaError::Internal("no stdout".into()))?;
        let stderr = tokio::spawn(tail(child.stderr.take()));
        send(&mut stdin, plan).await?;
        let dir = match &plan.work {
            Work::Render(render) => Some(render.dir.as_path()),
            Work::Convert { .. } | Work::Preview { .. } => None,
        };
        let mut held = Held::default();
        let mut child_run = ChildRun { budget, deadline, stdin: &mut stdin, held: &mut held, dir, services };
        let answered = tokio::select! {
            answered = tokio::time::timeout(plan.limits.time_limit + GRACE, child_run.talk(BufReader::new(stdout))) => answered,
            () = services.stop.cancelled() => {
                child.kill().await?;
                return Err(MediaError::Internal("stopped".into()));
            }
        };
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
            Some(Message::Failed { retryable: true, message }) => Err(MediaError::Io(std::io::Error::other(message))),
            Some(Message::Failed { message, .. }) => Err(MediaError::Reported(message)),
            Some(Message::TimedOut { limit }) => Err(MediaError::TimedOut { limit }),
            Some(answer) => Ok(answer),
            None => {
                let stderr = stderr.await.unwrap_or_default();
                Err(match status {
                    Some(status) => ended(status, &stderr, held.of(), &plan.limits),
                    None => MediaError::Crashed("it stopped answering".into()),
                })
            }
        }
    }

    /// A child waiting for its plan: the spare when it is still alive, else a new one;
    /// then another spare is started for the next unit.
    fn start(&self) -> Result<Child, MediaError> {
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).take();
        let alive = |mut spare: Child| matches!(spare.try_wait(), Ok(None)).then_some(spare);
        let child = match spare.and_then(alive) {
            Some(spare) => spare,
            None => self.spawn()?,
        };
        match self.spawn() {
            Ok(next) => *self.spare.lock().unwrap_or_else(|e| e.into_inner()) = Some(next),
            Err(e) => tracing::warn!(error = %e, "no spare sandbox started"),
        }
        Ok(child)
    }

    fn spawn(&self) -> Result<Child, MediaError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.leading)
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

/// A sandboxed child drawing the preview frames of one template version, kept between
/// calls with what it decoded ([`Work::Preview`]); killed when dropped. It holds the
/// memory it was granted until then.
pub struct PreviewChild {
    child: Child,
    stdin: ChildStdin,
    lines: BufReader<ChildStdout>,
    stderr: tokio::task::JoinHandle<String>,
    held: Held,
    limits: PlanLimits,
    dir: PathBuf,
    frames: u64,
    last_used: std::time::Instant,
    /// Cleared once it failed in a way that leaves it of no more use.
    alive: bool,
}

impl Sandbox {
    /// Starts a child drawing preview frames at `quality` from the sources in `dir` (which
    /// the frames' sources must be in), keeping up to `caches` bytes (pictures, video
    /// readers) of what it decoded, within `limits` (its memory reserved from their budget).
    pub(crate) async fn previews(
        &self,
        dir: &Path,
        quality: Quality,
        caches: (usize, usize),
        limits: &Limits,
    ) -> Result<PreviewChild, MediaError> {
        let (still_cache, video_cache) = caches;
        let work = Work::Preview { dir: dir.to_owned(), quality, still_cache, video_cache, idle: PREVIEW_CHILD_IDLE };
        let plan = plan(work, limits);
        let mut child = self.start()?;
        let mut stdin = child.stdin.take().ok_or_else(|| MediaError::Internal("no stdin".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| MediaError::Internal("no stdout".into()))?;
        let stderr = tokio::spawn(tail(child.stderr.take()));
        send(&mut stdin, &plan).await?;
        Ok(PreviewChild {
            child,
            stdin,
            lines: BufReader::new(stdout),
            stderr,
            held: Held::default(),
            limits: plan.limits,
            dir: dir.to_owned(),
            frames: 0,
            last_used: std::time::Instant::now(),
            alive: true,
        })
    }
}

impl PreviewChild {
    /// Whether it can draw another frame: it has not failed, nor ended.
    pub(crate) fn usable(&self) -> bool {
        self.alive && self.child.id().is_some()
    }

    /// How long it has been asked nothing.
    pub(crate) fn idle(&self) -> Duration {
        self.last_used.elapsed()
    }

    /// The JPEG of `template` at `at` seconds, drawn from `sources` (files in its
    /// directory), more memory reserved from `budget` when the frame needs it.
    pub(crate) async fn frame(
        &mut self,
        template: &Template,
        sources: Vec<(Source, PathBuf)>,
        at: f64,
        budget: &MemoryBudget,
    ) -> Result<Vec<u8>, RenderError> {
        self.frames += 1;
        self.last_used = std::time::Instant::now();
        let out = self.dir.join(format!("frame-{}.jpg", self.frames));
        let request = FrameRequest { template: template.clone(), sources, at, out: out.clone() };
        send(&mut self.stdin, &request).await.map_err(RenderError::from)?;
        let stop = CancellationToken::new();
        let services = RenderServices { progress: &|_| {}, sounds: None, stop: &stop };
        let limit = crate::render::snapshot_time_limit().min(self.limits.time_limit);
        let deadline = Deadline::after(limit);
        let mut run =
            ChildRun { budget, deadline, stdin: &mut self.stdin, held: &mut self.held, dir: None, services: &services };
        let answered = tokio::time::timeout(limit + GRACE, run.talk(&mut self.lines)).await;
        let answer = match answered {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                self.alive = false;
                return Err(e.into());
            }
            Err(_) => {
                self.alive = false;
                return Err(RenderError::TimedOut { limit: limit.as_secs_f64() });
            }
        };
        match answer {
            Some(Message::Framed) => {
                let regular = tokio::fs::symlink_metadata(&out).await.is_ok_and(|m| m.file_type().is_file());
                let jpeg = if regular { tokio::fs::read(&out).await.ok() } else { None };
                let _ = tokio::fs::remove_file(&out).await;
                jpeg.ok_or_else(|| RenderError::Internal("the sandbox answered without its frame".into()))
            }
            Some(Message::Failed { retryable: true, message }) => Err(RenderError::Io(std::io::Error::other(message))),
            Some(Message::Failed { message, .. }) => Err(RenderError::Reported(message)),
            Some(Message::TimedOut { limit }) => Err(RenderError::TimedOut { limit }),
            Some(_) => {
                self.alive = false;
                Err(RenderError::Internal("the sandbox answered a frame with something else".into()))
            }
            None => {
                self.alive = false;
                let status = tokio::time::timeout(GRACE, self.child.wait()).await.ok().and_then(Result::ok);
                let _ = self.child.kill().await;
                let stderr = (&mut self.stderr).await.unwrap_or_default();
                Err(render_error(
                    match status {
                        Some(status) => ended(status, &stderr, self.held.of(), &self.limits),
                        None => MediaError::Crashed("it stopped answering".into()),
                    },
                    &stop,
                ))
            }
        }
    }
}

/// The plan of `work` within `limits`.
fn plan(work: Work, limits: &Limits) -> Plan {
    Plan {
        work,
        limits: PlanLimits::from(limits),
        probe_memory: PROBE_MEMORY,
        most_memory: limits.memory.total_mib().map(|mib| mib << 20),
        cpu_seconds: cpu_seconds(limits.time_limit),
    }
}

/// A render's error from a sandbox's: what the child reported keeps its kind (a failure
/// a later attempt may get past, or one of the template and its sources); a crash or
/// running out of memory is the template's.
fn render_error(e: MediaError, stop: &CancellationToken) -> RenderError {
    match e {
        _ if stop.is_cancelled() => RenderError::Cancelled,
        MediaError::Io(e) => RenderError::Io(e),
        MediaError::TimedOut { limit } => RenderError::TimedOut { limit },
        MediaError::Crashed(how) => {
            RenderError::Reported(format!("the renderer crashed on this template's sources ({how})"))
        }
        MediaError::Memory(too_much) => RenderError::Memory(too_much),
        MediaError::Internal(message) => RenderError::Internal(message),
        other => RenderError::Reported(other.to_string()),
    }
}

/// What a child reserved (held until it ends), and for what it asked last.
#[derive(Default)]
struct Held {
    reserved: Vec<(Reservation, u64)>,
    what: String,
}

impl Held {
    fn bytes(&self) -> u64 {
        self.reserved.iter().map(|(_, bytes)| bytes).sum()
    }

    /// For what and how many bytes, when anything.
    fn of(&self) -> Option<(&str, u64)> {
        let bytes = self.bytes();
        (bytes > 0).then_some((self.what.as_str(), bytes))
    }
}

/// A child at work: what it holds, and what it may ask for.
struct ChildRun<'a> {
    budget: &'a MemoryBudget,
    deadline: Deadline,
    stdin: &'a mut ChildStdin,
    held: &'a mut Held,
    /// A render's directory, where kept sounds are handed over.
    dir: Option<&'a Path>,
    services: &'a RenderServices<'a>,
}

impl ChildRun<'_> {
    /// Answers the child's questions until it answers; `None` when it ended without.
    async fn talk(&mut self, mut lines: impl AsyncBufRead + Unpin) -> Result<Option<Message>, MediaError> {
        loop {
            let mut line = Vec::new();
            (&mut lines).take(MAX_LINE).read_until(b'\n', &mut line).await?;
            if line.last() != Some(&b'\n') {
                return Ok(None);
            }
            let message: Message = serde_json::from_slice(&line)
                .map_err(|e| MediaError::Internal(format!("the sandbox answered nonsense: {e}")))?;
            match message {
                Message::Reserve { what, bytes } => {
                    let reply = self.reserve(what, bytes).await?;
                    send(self.stdin, &reply).await?;
                }
                Message::Progress { frames_done, frames_total } => {
                    (self.services.progress)(Progress { frames_done: frames_done.min(frames_total), frames_total });
                }
                Message::SoundGet { name } => {
                    let file = self.sound_get(name).await;
                    send(self.stdin, &Reply::Sound(file)).await?;
                }
                Message::SoundPut { name, file } => self.sound_put(name, file).await,
                answer => return Ok(Some(answer)),
            }
        }
    }

    /// Reserves `bytes` more for the child, never more than the whole budget in all.
    async fn reserve(&mut self, what: String, bytes: u64) -> Result<Reply, MediaError> {
        let wanted = self.held.bytes().saturating_add(bytes);
        if let Some(total) = self.budget.total_mib() {
            if wanted.div_ceil(1 << 20) > total {
                return Ok(Reply::TooMuch(TooMuchMemory { needed_mib: wanted.div_ceil(1 << 20), allowed_mib: total }));
            }
        }
        let (budget, deadline) = (self.budget.clone(), self.deadline);
        let reserved = tokio::task::spawn_blocking(move || budget.reserve(bytes, &deadline))
            .await
            .map_err(|e| MediaError::Internal(format!("reserving memory: {e}")))?;
        Ok(match reserved {
            Ok(reservation) => {
                self.held.reserved.push((reservation, bytes));
                self.held.what = what;
                Reply::Granted
            }
            Err(MediaError::Memory(too_much)) => Reply::TooMuch(too_much),
            Err(_) => Reply::TimedOut,
        })
    }

    /// The kept sound `name`, written into the render's directory for the child; its
    /// file's name.
    async fn sound_get(&self, name: String) -> Option<String> {
        let (store, dir) = (self.services.sounds.clone()?, self.dir?);
        if !sound_name(&name) {
            return None;
        }
        let bytes = tokio::task::spawn_blocking(move || store.get(&name)).await.ok()??;
        let file = format!("sound-get-{}", reelfarm_domain::token::random_base62(8));
        tokio::fs::write(dir.join(&file), bytes).await.ok()?;
        Some(file)
    }

    /// Keeps the sound the child wrote to `file` under `name`, and removes the file.
    async fn sound_put(&self, name: String, file: String) {
        let (Some(store), Some(dir)) = (self.services.sounds.clone(), self.dir) else { return };
        let plain = file.starts_with("sound-put-") && Path::new(&file).file_name().is_some_and(|n| n == file.as_str());
        if !plain || !sound_name(&name) {
            return;
        }
        let path = dir.join(&file);
        let regular = tokio::fs::symlink_metadata(&path)
            .await
            .is_ok_and(|m| m.file_type().is_file() && m.len() <= MAX_KEPT_SOUND);
        let bytes = if regular { tokio::fs::read(&path).await.ok() } else { None };
        let _ = tokio::fs::remove_file(&path).await;
        if let Some(bytes) = bytes {
            let _ = tokio::task::spawn_blocking(move || store.put(&name, bytes)).await;
        }
    }
}

/// A kept sound's name as the renderer makes it: a content key in hex.
fn sound_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_hexdigit())
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

/// This executable, and the arguments that start it again. Started by a dynamic loader
/// (`ld-linux-x86-64.so.2 --library-path LIB BINARY …`, the bundle's way of running with
/// its own libraries), the process's executable is the loader: it runs the binary it was
/// given (`argv[0]` of this process) with the libraries beside it.
fn this_program() -> std::io::Result<(PathBuf, Vec<std::ffi::OsString>)> {
    let exe = std::env::current_exe()?;
    let loader = exe.file_name().is_some_and(|name| name.to_string_lossy().starts_with("ld-linux"));
    match (loader, std::env::args_os().next(), exe.parent()) {
        (true, Some(binary), Some(libraries)) => {
            Ok((exe.clone(), vec!["--library-path".into(), libraries.as_os_str().to_owned(), binary]))
        }
        _ => Ok((exe, Vec::new())),
    }
}
