//! Graceful shutdown of the real processes, as an orchestrator stops them (SIGTERM, then
//! SIGKILL when the grace period runs out), on the test run's PostgreSQL, RabbitMQ, Redis
//! and S3: a worker stopped mid-render takes no new message and finishes the render before
//! it exits; a worker killed after its grace period leaves its render to another worker;
//! the api finishes a request under way before it exits.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::deployment::{
    create_job, job, json_of, long_template, render_attempts, request, response_of, wait_finished, wait_rendering,
    Deployment,
};

#[test]
fn a_worker_stopped_mid_render_finishes_it_and_one_killed_after_its_grace_period_leaves_it_to_another() {
    let deployment = Deployment::new();
    let admin_dir = tempfile::tempdir().unwrap();
    let mut api = deployment.spawn("api");
    api.wait_ready();
    deployment.admin(admin_dir.path(), &["user", "create", "ann", "--credits", "5"]);
    let token = deployment.admin(admin_dir.path(), &["token", "create", "ann"]);
    let template = long_template(admin_dir.path());
    let template =
        deployment.admin(admin_dir.path(), &["template", "import", template.to_str().unwrap(), "--owner", "ann"]);

    // SIGTERM mid-render: the worker finishes the render, takes nothing new, exits 0.
    let mut first = deployment.spawn("worker");
    let finished_in_grace = create_job(&api, &token, &template);
    wait_rendering(&api, &token, &finished_in_grace);
    let left_waiting = create_job(&api, &token, &template);
    first.signal("TERM");
    let status = first.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "exit status {status}");
    let done = job(&api, &token, &finished_in_grace);
    assert_eq!(done["videos"][0]["status"], "success", "finished before exiting: {done}");
    assert_eq!(render_attempts(&deployment, done["videos"][0]["id"].as_str().unwrap()), 1);
    let waiting = job(&api, &token, &left_waiting);
    assert_eq!(waiting["videos"][0]["status"], "pending", "not taken after SIGTERM: {waiting}");

    // SIGTERM, then SIGKILL as when the grace period runs out: the render goes back to
    // the queue and another worker renders it.
    let mut second = deployment.spawn("worker");
    wait_rendering(&api, &token, &left_waiting);
    second.signal("TERM");
    second.wait_for_log("shutdown requested", Duration::from_secs(10));
    second.signal("KILL");
    second.wait_exit(Duration::from_secs(10));
    let interrupted = job(&api, &token, &left_waiting);
    assert_eq!(interrupted["videos"][0]["status"], "started", "{interrupted}");

    let mut third = deployment.spawn("worker");
    let rescued = wait_finished(&api, &token, &left_waiting);
    assert_eq!(rescued["videos"][0]["status"], "success", "{rescued}");
    assert_eq!(render_attempts(&deployment, rescued["videos"][0]["id"].as_str().unwrap()), 2);
    let credits = json_of(request(&api.base, "GET", "/generator/v1/users/me/credits", Some(&token), None, b""), 200);
    assert_eq!(credits["credits"], 3, "each job charged once");

    third.signal("TERM");
    assert!(third.wait_exit(Duration::from_secs(60)).success());
    api.signal("TERM");
    assert!(api.wait_exit(Duration::from_secs(40)).success());
}

#[test]
fn the_api_finishes_an_upload_under_way_after_sigterm_then_exits() {
    let deployment = Deployment::new();
    let admin_dir = tempfile::tempdir().unwrap();
    let mut api = deployment.spawn("api");
    api.wait_ready();
    deployment.admin(admin_dir.path(), &["user", "create", "ann"]);
    let token = deployment.admin(admin_dir.path(), &["token", "create", "ann"]);

    let png = admin_dir.path().join("frame.png");
    let made = std::process::Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=1280x720",
            "-frames:v",
            "1",
        ])
        .arg(&png)
        .status()
        .expect("ffmpeg is installed (scripts/setup)");
    assert!(made.success());
    let bytes = std::fs::read(&png).unwrap();
    let added = json_of(
        request(
            &api.base,
            "POST",
            "/api2/v1/objects",
            Some(&token),
            Some("application/x-www-form-urlencoded"),
            b"filename=frame.png",
        ),
        200,
    );
    let url = added["url"].as_str().unwrap();
    let path = &url[url.find("/uploads/").expect("a signed upload address")..];

    // Half the body, then SIGTERM; the rest once the api is draining.
    let addr = api.base.trim_start_matches("http://");
    let mut upload = TcpStream::connect(addr).unwrap();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: image/png\r\nContent-Length: {}\r\n\r\n",
        bytes.len()
    );
    upload.write_all(head.as_bytes()).unwrap();
    let (first, rest) = bytes.split_at(bytes.len() / 2);
    upload.write_all(first).unwrap();
    upload.flush().unwrap();
    // A request on a later connection answered: the upload's connection was accepted
    // before it (one listener, accepted in order), so the upload is under way.
    assert_eq!(request(&api.base, "GET", "/healthz", None, None, b"").0, 200);
    api.signal("TERM");
    api.wait_for_log("api draining", Duration::from_secs(10));
    upload.write_all(rest).unwrap();
    let asset = json_of(response_of(upload), 200);
    assert_eq!(asset["id"], added["data"]["id"], "{asset}");
    assert_eq!(asset["status"], "processing", "stored and queued for conversion: {asset}");

    let status = api.wait_exit(Duration::from_secs(40));
    assert!(status.success(), "exit status {status}");
}
