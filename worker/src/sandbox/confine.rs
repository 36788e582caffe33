//! What a sandboxed child does to itself before it reads its input: limits the kernel
//! enforces, that the child cannot raise again.
//!
//! - Address space (`RLIMIT_AS`): what the child had mapped when it started plus
//!   [`Plan::probe_memory`] until it has reserved memory for decoding, then what it had
//!   mapped at its first grant plus [`mappable`] of all it was granted (the soft limit;
//!   it rises with each grant). The hard limit, from the start, is [`mappable`] of the
//!   worker's whole budget: only code that took over the child could raise its soft
//!   limit, and no further than that. (cgroup v2's
//!   `memory.max` would count resident memory instead of mappings; this machine class
//!   has cgroup v1, so the address space it is — see docs/security.md.)
//! - CPU time (`RLIMIT_CPU`): the plan's seconds, then `SIGXCPU`; five more, `SIGKILL`.
//! - No core files.
//! - `no_new_privs`, then a seccomp filter that refuses `socket`, `execve`, `execveat`,
//!   `io_uring_setup` and `ptrace` with `EPERM`: no network, no other program.
//! - Landlock, where the kernel has it: reading only the input, the system's libraries
//!   and fonts (`/usr`, `/lib*`), the CPU and cgroup facts in `/sys` and `/proc/self`;
//!   writing only the output directory.

use std::path::{Path, PathBuf};

use landlock::{path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, ABI};

use super::{Plan, Work};

const MIB: u64 = 1 << 20;

/// Address space a child maps besides its reservation: thread stacks (8 MiB each; a
/// conversion's decoder starts one per core and one more, each x264 encoder about 1.5
/// per core), glibc's second arena (64 MiB) and the libraries' own buffers.
pub(crate) fn headroom() -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    512 * MIB + 8 * MIB * (6 * cores + 8)
}

/// The address space a reservation of `bytes` may map: twice the bytes, and the
/// [`headroom`]. Decoders and encoders map more than they touch (x264's frame pools,
/// libav's frame threads): measured on this machine class, a conversion's peak mapping
/// above what it had mapped when it reserved was up to 1.76 times its reservation plus
/// 416 MiB (a 720p video; docs/security.md).
pub(crate) fn mappable(bytes: u64) -> u64 {
    bytes.saturating_mul(2).saturating_add(headroom())
}

/// How the child was confined, for its log line.
#[derive(Debug)]
pub(crate) struct Confined {
    /// Whether Landlock restricts the files the child sees (`false` on kernels without it).
    pub(crate) landlock: bool,
}

/// Confines the calling process as `plan` says; call it before any thread starts.
pub(crate) fn apply(plan: &Plan) -> Result<Confined, String> {
    let mapped = mapped_bytes().map_err(|e| format!("reading /proc/self/status: {e}"))?;
    let hard = plan.most_memory.map_or(libc::RLIM_INFINITY, |most| mapped.saturating_add(mappable(most)));
    set_limit(libc::RLIMIT_AS, (mapped + plan.probe_memory + headroom()).min(hard), hard)?;
    set_limit(libc::RLIMIT_CPU, plan.cpu_seconds.max(1), plan.cpu_seconds.max(1) + 5)?;
    set_limit(libc::RLIMIT_CORE, 0, 0)?;
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS only sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }
    let landlock = restrict_files(plan)?;
    refuse_syscalls()?;
    Ok(Confined { landlock })
}

/// Sets the address-space limit to what was mapped at the first grant plus what
/// [`mappable`] gives `granted`, all the memory granted so far (never above the hard
/// limit set by [`apply`], which stays: a render is granted more as it goes). Returns the
/// new limit.
pub(crate) fn cap_memory(granted: u64) -> Result<u64, String> {
    static MAPPED_AT_FIRST_GRANT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let mapped = match MAPPED_AT_FIRST_GRANT.get() {
        Some(mapped) => *mapped,
        None => {
            let now = mapped_bytes().map_err(|e| format!("reading /proc/self/status: {e}"))?;
            *MAPPED_AT_FIRST_GRANT.get_or_init(|| now)
        }
    };
    let (_, hard) = get_limit(libc::RLIMIT_AS)?;
    let cap = mapped.saturating_add(mappable(granted)).min(hard);
    set_limit(libc::RLIMIT_AS, cap, hard)?;
    Ok(cap)
}

/// The process's mapped address space (`VmSize`), in bytes.
fn mapped_bytes() -> std::io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| std::io::Error::other("no VmSize line"))
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> Result<(), String> {
    let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
    // SAFETY: setrlimit reads the struct we pass; it changes only this process's limits.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(format!("setrlimit({resource}): {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn get_limit(resource: libc::__rlimit_resource_t) -> Result<(u64, u64), String> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(resource, &mut limit) } != 0 {
        return Err(format!("getrlimit({resource}): {}", std::io::Error::last_os_error()));
    }
    Ok((limit.rlim_cur, limit.rlim_max))
}

/// Landlock: the files the child may read and write. `Ok(false)` where the kernel has no
/// Landlock (the other limits still hold).
fn restrict_files(plan: &Plan) -> Result<bool, String> {
    // A conversion reads its input and writes its output directory; a render reads and
    // writes its directory, which holds its sources.
    let (input, out_dir) = match &plan.work {
        Work::Convert { input, out_dir } => (input, out_dir),
        Work::Render(render) => (&render.dir, &render.dir),
        Work::Preview { dir, .. } => (dir, dir),
    };
    let abi = ABI::V5;
    let existing = |paths: Vec<PathBuf>| paths.into_iter().filter(|p| p.exists()).collect::<Vec<_>>();
    let read = existing(
        ["/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/sys/fs/cgroup", "/sys/devices/system/cpu", "/proc/self"]
            .iter()
            .map(PathBuf::from)
            .chain([input.clone()])
            .collect(),
    );
    let write = existing(vec![out_dir.clone(), Path::new("/dev/null").into()]);
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(&read, AccessFs::from_read(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(&write, AccessFs::from_all(abi))))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("landlock: {e}"))?;
    Ok(status.ruleset != RulesetStatus::NotEnforced)
}

/// The seccomp filter: the system calls a media decoder never needs, refused.
fn refuse_syscalls() -> Result<(), String> {
    use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
    let refused = [libc::SYS_socket, libc::SYS_execve, libc::SYS_execveat, libc::SYS_io_uring_setup, libc::SYS_ptrace];
    let arch = if cfg!(target_arch = "aarch64") { TargetArch::aarch64 } else { TargetArch::x86_64 };
    let filter = SeccompFilter::new(
        refused.into_iter().map(|call| (call, vec![])).collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(|e| format!("seccomp filter: {e:?}"))?;
    seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))
}
