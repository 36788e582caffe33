//! The first run, as someone trying reelfarm meets it: `serve all` on an empty data dir
//! sets up an owner, its token file and the example templates, prints the token once with
//! a ready request, and a later start reuses all of it.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reelfarm_server::bootstrap::examples::{template_id, EXAMPLES};
use serde_json::Value;

use super::deployment::{json_of, request};
use super::{admin, get, Server};
use reelfarm_backends::store::AccountStore;

/// `serve all` with the first-run set-up at its default (`auto`: on, as the store is the
/// embedded SQLite one); returns the server once it printed a line containing `until`,
/// and its standard output so far.
fn start_bootstrapping(data_dir: &std::path::Path, until: &str) -> (Server, String) {
    let mut child = super::reelfarm(data_dir, 0)
        .env_remove("REELFARM_BOOTSTRAP")
        .args(["serve", "all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let log = super::deployment::log_lines(&mut child, "all", None);
    let base = super::deployment::api_address(&log);
    let server = Server { child, base };
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let started = Instant::now();
    let within = Duration::from_secs(600);
    let mut printed = String::new();
    loop {
        match lines.recv_timeout(within.saturating_sub(started.elapsed())) {
            Ok(line) => {
                printed.push_str(&line);
                printed.push('\n');
                if line.contains(until) {
                    break;
                }
            }
            Err(_) => panic!("no line with `{until}` within {within:?}; printed:\n{printed}"),
        }
    }
    eprintln!("serve all printed `{until}` after {:.1} s", started.elapsed().as_secs_f64());
    (server, printed)
}

fn stop(mut server: Server) {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}

fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The stable ids of the examples in a template list, sorted, with the list's length.
fn listed_examples(server: &Server, token: &str) -> (usize, Vec<String>) {
    let list = json_of(request(&server.base, "GET", "/generator/v1/templates", Some(token), None, b""), 200);
    let list = list.as_array().unwrap();
    for t in list {
        assert_eq!(t["public"], true, "examples are public: {t}");
    }
    let mut ids: Vec<String> = list.iter().map(|t| t["id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    (list.len(), ids)
}

/// GET of an absolute address without a token; HTTP/1.0, so the body is never chunked.
fn download(url: &str) -> (u16, Vec<u8>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let status = String::from_utf8_lossy(&response[9..12]).parse().unwrap();
    let start = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, response[start..].to_vec())
}

#[test]
fn the_first_run_sets_up_an_owner_a_private_token_file_and_the_examples_and_a_restart_reuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("owner.token");
    let (server, printed) = start_bootstrapping(dir.path(), "/generator/v1/jobs/JOB_ID");

    // The token: in a file only its owner may read, printed once, and it works.
    assert_eq!(mode_of(&token_file), 0o600, "the token file is private");
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    assert!(token.starts_with("rf_"), "{token}");
    assert_eq!(printed.matches(&token).count(), 1, "the token is printed once:\n{printed}");
    assert!(printed.contains(&format!("reelfarm is ready: {}", server.base)), "{printed}");
    assert_eq!(get(&server.base, "/api2/v1/users/me/libraries", Some(&token)).0, 200);

    // A one-time link into the console, for the owner, who is an operator.
    let prefix = format!("{}/console/sign-in/link/", server.base);
    let link = printed.lines().find_map(|l| l.trim().strip_prefix(&prefix)).expect("a sign-in link is printed");
    let owner = super::console::with_store(dir.path(), async |store| {
        let owner = store.use_sign_in_link(link).await.unwrap().expect("the link signs someone in");
        assert_eq!(store.use_sign_in_link(link).await.unwrap(), None, "once");
        owner
    });
    assert_eq!((owner.name.as_str(), owner.operator), ("owner", true));

    // The examples, public, under their stable ids.
    let mut stable: Vec<String> = EXAMPLES.iter().map(|e| template_id(e.stem).into()).collect();
    stable.sort();
    assert_eq!(listed_examples(&server, &token), (EXAMPLES.len(), stable.clone()));

    // The printed request renders a playable video.
    let body = printed.split("-d '").nth(1).and_then(|rest| rest.split('\'').next()).expect("a curl line with a body");
    assert!(body.contains(template_id("quote-card").as_str()), "{body}");
    let command = printed.lines().find(|l| l.trim().ends_with("/generator/v1/jobs")).expect("the job's address");
    assert_eq!(command.trim(), format!("{}/generator/v1/jobs", server.base));
    assert!(printed.contains(&format!("$(cat {})", token_file.display())), "reads the token file:\n{printed}");
    let job = json_of(
        request(&server.base, "POST", "/generator/v1/jobs", Some(&token), Some("application/json"), body.as_bytes()),
        200,
    );
    let path = format!("/generator/v1/jobs/{}", job["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(300);
    let job: Value = loop {
        let job = json_of(request(&server.base, "GET", &path, Some(&token), None, b""), 200);
        if job["status"] != "started" {
            break job;
        }
        assert!(Instant::now() < deadline, "the first job is unfinished after 300 s: {job}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(job["status"], "finished", "{job}");
    assert_eq!(job["videos"][0]["status"], "success", "{job}");
    let (status, mp4) = download(job["videos"][0]["url"].as_str().unwrap());
    assert_eq!(status, 200);
    let video = dir.path().join("first.mp4");
    std::fs::write(&video, &mp4).unwrap();
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,height", "-of", "csv=p=0"])
        .arg(&video)
        .output()
        .expect("ffprobe is installed (scripts/setup)");
    assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "h264,720", "{probe:?}");
    stop(server);

    // A second start: no new token, owner or import; a token file others could read is
    // made private again.
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (server, printed) = start_bootstrapping(dir.path(), "owner's API token is in");
    assert!(!printed.contains(&token) && !printed.contains("rf_"), "no token on a later start:\n{printed}");
    assert!(!printed.contains("/console/sign-in/link/"), "nor a link:\n{printed}");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token, "the token file is kept");
    assert_eq!(mode_of(&token_file), 0o600, "and private again");
    let credits = json_of(request(&server.base, "GET", "/generator/v1/users/me/credits", Some(&token), None, b""), 200);
    assert_eq!(credits["credits"], 99, "the same owner, charged for the first job: {credits}");
    assert_eq!(listed_examples(&server, &token), (EXAMPLES.len(), stable));
    let port: u16 = server.base.rsplit(':').next().unwrap().parse().unwrap();
    let out = admin(dir.path(), port, &["user", "create", "owner"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("name: is the name of another user"), "{out:?}");
    stop(server);
}

#[test]
fn without_bootstrap_a_first_run_creates_nothing_and_a_bad_setting_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // `reelfarm()` sets REELFARM_BOOTSTRAP=off.
    let server = super::start(dir.path());
    let port: u16 = server.base.rsplit(':').next().unwrap().parse().unwrap();
    assert!(!dir.path().join("owner.token").exists());
    let out = admin(dir.path(), port, &["token", "create", "owner"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("user not found"), "no owner: {out:?}");
    super::stdout_of(admin(dir.path(), port, &["user", "create", "ann"]));
    let token = super::stdout_of(admin(dir.path(), port, &["token", "create", "ann"]));
    let (count, _) = listed_examples(&server, &token);
    assert_eq!(count, 0, "no examples");
    stop(server);

    let out =
        super::reelfarm(dir.path(), 0).env("REELFARM_BOOTSTRAP", "sometimes").args(["serve", "all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("REELFARM_BOOTSTRAP") && stderr.contains("`auto`, `on` or `off`"), "{stderr}");
}
