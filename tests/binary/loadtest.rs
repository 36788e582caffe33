//! `reelfarm loadtest` against `serve all`: a small batch, by callbacks and by polling,
//! with its JSON and HTML reports.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::templates::write_template;
use super::{admin, start_with, stdout_of, BIN};

fn loadtest(token: &str, args: &[&str]) -> Output {
    loadtest_with(&[("REELFARM_LOADTEST_TOKEN", token)], args)
}

/// `reelfarm loadtest` with only `env` (and `PATH`) in its environment.
fn loadtest_with(env: &[(&str, &str)], args: &[&str]) -> Output {
    std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .arg("loadtest")
        .args(args)
        .output()
        .unwrap()
}

fn report(dir: &Path) -> (Value, String) {
    let json = serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    (json, std::fs::read_to_string(dir.join("report.html")).unwrap())
}

/// The numbers of points of the plotted lines of an SVG (plotters draws them, and their
/// legend samples, as `<polyline>`s 2 pixels wide; grid lines are 1 pixel wide).
fn line_lengths(svg: &str) -> Vec<usize> {
    svg.split("<polyline")
        .skip(1)
        .filter(|p| p.contains("stroke-width=\"2\""))
        .map(|p| {
            let points = p.split("points=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or_default();
            points.split_whitespace().count()
        })
        .collect()
}

#[test]
fn loadtest_reports_throughput_latencies_failures_and_credits_with_plots() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let port = 0;
    stdout_of(admin(dir.path(), port, &["user", "create", "ann", "--credits", "6"]));
    let token = stdout_of(admin(dir.path(), port, &["token", "create", "ann"]));
    let template = write_template(work.path(), "Liberation Sans");
    let id = stdout_of(admin(dir.path(), port, &["template", "import", template.to_str().unwrap(), "--owner", "ann"]));
    // The callbacks go to the load test's listener on 127.0.0.1.
    let server = start_with(dir.path(), &[("REELFARM_OUTBOUND_ALLOW", "127.0.0.1")]);

    let out = work.path().join("callbacks");
    let run = loadtest(
        &token,
        &[
            "--url",
            &server.base,
            "--template",
            &id,
            "--quality",
            "480p",
            "--jobs",
            "4",
            "--concurrency",
            "2",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("renders/min sustained"), "{stdout}");
    let (json, html) = report(&out);
    assert_eq!(json["counts"]["jobs_created"], 4, "{json}");
    assert_eq!(json["counts"]["videos_succeeded"], 4, "{json}");
    assert_eq!(
        (json["counts"]["videos_failed"].as_u64(), json["counts"]["videos_unfinished"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        (json["credits"]["before"].as_i64(), json["credits"]["after"].as_i64(), json["credits"]["used"].as_i64()),
        (Some(6), Some(2), Some(4))
    );
    assert!(json["renders_per_minute"].as_f64().unwrap() > 0.0, "{json}");
    let p50 = |name: &str| json[name]["p50"].as_f64().unwrap();
    assert!(p50("creation_latency_ms") > 0.0 && p50("render_time_ms") > 0.0, "{json}");
    assert!(p50("end_to_end_ms") >= p50("render_time_ms"), "sent → callback spans the render: {json}");
    assert_eq!(json["queue_wait_ms"]["count"], 4);
    for video in json["videos"].as_array().unwrap() {
        assert_eq!(
            (video["status"].as_str(), video["quality"].as_str(), video["template"].as_str()),
            (Some("success"), Some("480p"), Some(id.as_str()))
        );
    }
    let mix = &json["by_template_and_quality"];
    assert_eq!(
        (mix.as_array().unwrap().len(), mix[0]["template"].as_str(), mix[0]["quality"].as_str()),
        (1, Some(id.as_str()), Some("480p")),
        "{json}"
    );
    assert_eq!((mix[0]["videos_succeeded"].as_u64(), mix[0]["render_time_ms"]["count"].as_u64()), (Some(4), Some(4)));
    let timeline = json["timeline"].as_array().unwrap();
    assert_eq!(timeline.iter().map(|b| b["videos_succeeded"].as_u64().unwrap()).sum::<u64>(), 4);
    assert_eq!(timeline.iter().map(|b| b["jobs_sent"].as_u64().unwrap()).sum::<u64>(), 4);

    // The page holds the figures and its plots inline: throughput, cumulative counts,
    // CPU, four histograms.
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("Renders per minute"), "{html}");
    assert!(html.contains(&format!("<tr><td>{id}</td><td>480p</td><td>4</td><td>0</td>")), "{html}");
    let svgs: Vec<&str> = html.split("<svg").skip(1).collect();
    assert_eq!(svgs.len(), 7, "{html}");
    // Each line with its legend sample; the lines have a point per bucket (or sample).
    let lines = svgs[..3].iter().map(|svg| line_lengths(svg)).collect::<Vec<_>>();
    assert_eq!(lines.iter().map(Vec::len).collect::<Vec<_>>(), [2, 6, 2], "{lines:?}");
    assert!(lines[..2].iter().flatten().all(|n| *n >= 2), "{lines:?}");
    assert!(lines[2][0] >= 1, "a CPU sample a second, and one at the end: {lines:?}");
    assert_eq!(
        (lines[0][0], lines[1][0]),
        (timeline.len(), timeline.len() + 1),
        "a point per bucket (and the origin): {lines:?}"
    );
    for histogram in &svgs[3..] {
        // The background, and at least one bar.
        assert!(histogram.matches("<rect").count() >= 2, "{histogram}");
    }
    assert!(svgs[3].contains("Job creation latency (n = 4)"), "{}", svgs[3]);

    // Callbacks to an address the deployment's outbound guard refuses (a loopback address
    // not on its allow list): the fallback poll still sees the video end.
    let out = work.path().join("refused-callbacks");
    let run = loadtest(
        &token,
        &[
            "--url",
            &server.base,
            "--template",
            &id,
            "--jobs",
            "1",
            "--listen",
            "127.0.0.2:0",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let (json, _) = report(&out);
    assert_eq!(
        (json["counts"]["videos_succeeded"].as_u64(), json["counts"]["videos_unfinished"].as_u64()),
        (Some(1), Some(0)),
        "{json}"
    );
    assert!(json["end_to_end_ms"]["p50"].as_f64().unwrap() >= 9_000.0, "seen by the poll every 10 s: {json}");

    // Polling, from a scenario file: one credit left for two jobs.
    let scenario = work.path().join("scenario.toml");
    std::fs::write(
        &scenario,
        format!("url = \"{}\"\nconcurrency = 1\njobs = 2\n[[templates]]\nid = \"{id}\"\n", server.base),
    )
    .unwrap();
    let out = work.path().join("polling");
    let run = loadtest(&token, &["--scenario", scenario.to_str().unwrap(), "--poll", "-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let (json, _) = report(&out);
    assert_eq!(
        (
            json["counts"]["jobs_sent"].as_u64(),
            json["counts"]["jobs_created"].as_u64(),
            json["counts"]["jobs_refused"].as_u64()
        ),
        (Some(2), Some(1), Some(1)),
        "{json}"
    );
    assert_eq!(json["failures_by_key"], serde_json::json!({ "create error.generator_contract_exceeded": 1 }));
    assert_eq!(json["counts"]["videos_succeeded"], 1);
    assert_eq!(json["credits"]["used"], 1);

    // Two accounts, each with its own token (from the environment) and settings: jobs by
    // weight, queue wait per account, in the report and on the page.
    let mut tokens = Vec::new();
    for name in ["bob", "cleo"] {
        stdout_of(admin(dir.path(), port, &["user", "create", name, "--credits", "3"]));
        tokens.push(stdout_of(admin(dir.path(), port, &["token", "create", name])));
        stdout_of(admin(dir.path(), port, &["template", "share", &id, name]));
    }
    let scenario = work.path().join("accounts.toml");
    std::fs::write(
        &scenario,
        format!(
            "url = \"{}\"\nconcurrency = 1\njobs = 3\n[[templates]]\nid = \"{id}\"\n\
             [[accounts]]\nname = \"bob\"\ntoken_env = \"BOB_TOKEN\"\nweight = 2\n\
             [[accounts]]\nname = \"cleo\"\ntoken_env = \"CLEO_TOKEN\"\npriority = \"high\"\n",
            server.base
        ),
    )
    .unwrap();
    let out = work.path().join("accounts");
    let env = [("BOB_TOKEN", tokens[0].as_str()), ("CLEO_TOKEN", tokens[1].as_str())];
    let run = loadtest_with(&env, &["--scenario", scenario.to_str().unwrap(), "--poll", "-o", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("account bob") && stdout.contains("account cleo"), "{stdout}");
    let (json, html) = report(&out);
    let accounts: Vec<_> = json["by_account"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["account"].as_str().unwrap(), a["videos_succeeded"].as_u64(), a["queue_wait_ms"]["count"].as_u64()))
        .collect();
    assert_eq!(accounts, [("bob", Some(2), Some(2)), ("cleo", Some(1), Some(1))], "{json}");
    let senders: Vec<_> = json["videos"].as_array().unwrap().iter().map(|v| v["account"].as_str().unwrap()).collect();
    assert_eq!(senders.iter().filter(|a| **a == "bob").count(), 2, "{senders:?}");
    assert_eq!((json["credits"]["before"].as_i64(), json["credits"]["used"].as_i64()), (Some(6), Some(3)));
    assert!(!serde_json::to_string(&json).unwrap().contains(&tokens[0]), "tokens stay out of the report");
    assert!(html.contains("By account") && html.contains("<tr><td>bob</td><td>2</td><td>0</td>"), "{html}");

    // A template the token cannot see stops the run before any job is sent.
    let run = loadtest(
        &token,
        &["--url", &server.base, "--template", "no-such-template", "--jobs", "1", "-o", out.to_str().unwrap()],
    );
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("template no-such-template"), "{stderr}");
}
