//! The `reelfarm` binary as an operator uses it: `serve all` on a fresh data dir with zero
//! external services, `admin` commands against the same configuration, SIGTERM.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod bundle;
mod console;
mod deploy;
mod deployment;
mod faults;
mod first_run;
mod loadtest;
mod shutdown;
mod templates;
mod trace;

const BIN: &str = env!("CARGO_BIN_EXE_reelfarm");

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn reelfarm(data_dir: &std::path::Path, port: u16) -> Command {
    reelfarm_at(std::path::Path::new(BIN), data_dir, port)
}

/// [`reelfarm`] of the executable `program` (the binary, or a bundle's script).
fn reelfarm_at(program: &std::path::Path, data_dir: &std::path::Path, port: u16) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REELFARM_DATA_DIR", data_dir)
        .env("REELFARM_LISTEN", format!("127.0.0.1:{port}"))
        // No first-run set-up (its six preview renders) unless a test asks for it.
        .env("REELFARM_BOOTSTRAP", "off");
    cmd
}

fn admin(data_dir: &std::path::Path, port: u16, args: &[&str]) -> Output {
    reelfarm(data_dir, port).arg("admin").args(args).output().unwrap()
}

fn stdout_of(out: Output) -> String {
    assert!(out.status.success(), "admin failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Blocking GET over a raw TCP connection; returns (status, body).
fn get(base: &str, path: &str, token: Option<&str>) -> (u16, String) {
    deployment::request(base, "GET", path, token, None, b"")
}

fn start(data_dir: &std::path::Path) -> Server {
    start_with(data_dir, &[])
}

/// `serve all` with more configuration.
fn start_with(data_dir: &std::path::Path, env: &[(&str, &str)]) -> Server {
    let mut command = reelfarm(data_dir, 0);
    command.envs(env.iter().copied());
    serve_all(command)
}

/// `command` with `serve all`, once it listens.
fn serve_all(mut command: Command) -> Server {
    let mut child = command.args(["serve", "all"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let lines = deployment::log_lines(&mut child, "all", None);
    let base = deployment::api_address(&lines);
    Server { child, base }
}

#[test]
fn serve_all_runs_with_zero_services_and_admin_tokens_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let port: u16 = server.base.rsplit(':').next().unwrap().parse().unwrap();

    let (status, body) = get(&server.base, "/api2/v1/users/me/libraries", None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("error.unauthorized"), "{body}");

    let user_id = stdout_of(admin(dir.path(), port, &["user", "create", "ann", "--credits", "20"]));
    assert_eq!(user_id.len(), 36, "prints the user id: {user_id}");
    let token = stdout_of(admin(dir.path(), port, &["token", "create", "ann"]));
    assert!(token.starts_with("rf_"), "prints the token: {token}");
    let (status, body) = get(&server.base, "/api2/v1/users/me/libraries", Some(&token));
    assert_eq!(status, 200, "{body}");
    let groups: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(groups[0]["type"], "personal");

    let library = stdout_of(admin(dir.path(), port, &["library", "create", "Sounds", "--kind", "public"]));
    let (_, body) = get(&server.base, "/api2/v1/users/me/libraries", Some(&token));
    assert!(body.contains(&library), "{body}");

    let revoked = stdout_of(admin(dir.path(), port, &["token", "revoke", &token[..11]]));
    assert!(revoked.starts_with("revoked token"), "{revoked}");
    assert_eq!(get(&server.base, "/api2/v1/users/me/libraries", Some(&token)).0, 401);

    // Graceful shutdown on SIGTERM: exits 0.
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(40);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status}");
}

#[test]
fn admin_errors_are_clear_and_configuration_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let port = 0;
    let out = admin(dir.path(), port, &["token", "create", "nobody"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("user not found"), "{out:?}");

    stdout_of(admin(dir.path(), port, &["user", "create", "bo"]));
    let out = admin(dir.path(), port, &["user", "create", "bo"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("name: is the name of another user"), "{out:?}");
    // The console's rules for a new user (reelfarm_app::accounts::create_user) hold at the
    // command line: the same use case makes both.
    for (name, problem) in [
        ("n".repeat(101), "name: must be at most 100 characters"),
        ("a\u{7}b".to_string(), "name: must not contain control characters"),
        (" ".to_string(), "name: is required and must not be empty"),
    ] {
        let out = admin(dir.path(), port, &["user", "create", &name]);
        assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains(problem), "{out:?}");
    }
    let out = admin(dir.path(), port, &["user", "create", "cy", "--group", &"g".repeat(101), "--email", "nope"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("email: is not an e-mail address") && stderr.contains("group: must be at most"),
        "{stderr}"
    );

    let out = reelfarm(dir.path(), port).env("REELFARM_BUS_URL", "kafka://x").args(["serve", "all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("REELFARM_BUS_URL"), "{out:?}");
}
