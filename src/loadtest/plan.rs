//! What a load test does: the TOML scenario file merged with the command line (which
//! wins), checked before any request is sent.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::cli::LoadtestArgs;
use reelfarm_domain::quality::Quality;

/// A scenario file. Every key is optional; the command line overrides each.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub url: Option<String>,
    pub concurrency: Option<usize>,
    pub rate: Option<f64>,
    pub duration: Option<String>,
    pub jobs: Option<u64>,
    pub videos_per_job: Option<u32>,
    pub qualities: Option<Vec<Quality>>,
    #[serde(default)]
    pub templates: Vec<TemplateMix>,
}

/// One template of the mix.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateMix {
    pub id: String,
    /// Relative share of the jobs (default 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// `template_variables` of every video; `{n}` in a string becomes the video's number.
    #[serde(default)]
    pub values: BTreeMap<String, Value>,
}

fn one() -> u32 {
    1
}

/// How jobs are sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// This many clients, each waiting for its job's videos before sending the next.
    Concurrency(usize),
    /// Jobs per second, whatever the completions (an open loop).
    Rate(f64),
}

/// When sending stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    Jobs(u64),
    #[serde(serialize_with = "seconds")]
    Duration(Duration),
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The checked plan of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Base address of the deployment, without a trailing slash.
    pub url: String,
    pub pace: Pace,
    pub stop: Stop,
    pub videos_per_job: u32,
    pub qualities: Vec<Quality>,
    pub templates: Vec<TemplateMix>,
    /// Receives callbacks (false: polls the jobs).
    pub callbacks: bool,
}

impl Plan {
    pub fn new(args: &LoadtestArgs) -> anyhow::Result<Plan> {
        let scenario = match &args.scenario {
            Some(path) => read_scenario(path)?,
            None => Scenario::default(),
        };
        let url = args.url.clone().or(scenario.url).unwrap_or_else(|| "http://127.0.0.1:8080".into());
        let url = url.trim_end_matches('/').to_string();
        let parsed = url::Url::parse(&url).with_context(|| format!("--url `{url}` is not an address"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            bail!("--url `{url}` must be an http(s) address");
        }

        let (concurrency, rate) = match (args.concurrency, args.rate) {
            (None, None) => (scenario.concurrency, scenario.rate),
            given => given,
        };
        let pace = match (concurrency, rate) {
            (Some(_), Some(_)) => bail!("give a concurrency or a rate, not both"),
            (Some(0), _) => bail!("concurrency must be at least 1"),
            (Some(n), None) => Pace::Concurrency(n),
            (None, Some(r)) if !(r > 0.0 && r.is_finite()) => {
                bail!("rate must be a positive number of jobs per second")
            }
            (None, Some(r)) => Pace::Rate(r),
            (None, None) => Pace::Concurrency(4),
        };

        let (duration, jobs) = match (&args.duration, args.jobs) {
            (None, None) => (scenario.duration.clone(), scenario.jobs),
            (d, j) => (d.clone(), j),
        };
        let stop = match (duration, jobs) {
            (Some(_), Some(_)) => bail!("give a duration or a number of jobs, not both"),
            (Some(d), None) => Stop::Duration(
                reelfarm_backends::config::parse_duration(&d).map_err(|e| anyhow::anyhow!("duration: {e}"))?,
            ),
            (None, Some(0)) => bail!("jobs must be at least 1"),
            (None, Some(n)) => Stop::Jobs(n),
            (None, None) => bail!("give --duration or --jobs (or `duration`/`jobs` in the scenario)"),
        };
        if stop == Stop::Duration(Duration::ZERO) {
            bail!("duration must be longer than 0 s");
        }

        let videos_per_job = args.videos_per_job.or(scenario.videos_per_job).unwrap_or(1);
        if !(1..=100).contains(&videos_per_job) {
            bail!("videos per job must be 1 to 100");
        }

        let qualities = if args.qualities.is_empty() {
            scenario.qualities.unwrap_or_else(|| vec![Quality::P480])
        } else {
            args.qualities.clone()
        };
        if qualities.is_empty() {
            bail!("give at least one quality");
        }

        let templates = if args.templates.is_empty() {
            scenario.templates
        } else {
            args.templates.iter().map(|t| parse_template_arg(t)).collect::<anyhow::Result<_>>()?
        };
        if templates.is_empty() {
            bail!("give at least one template (--template ID or [[templates]] in the scenario)");
        }
        if templates.iter().any(|t| t.weight == 0) {
            bail!("template weights must be at least 1");
        }
        Ok(Plan { url, pace, stop, videos_per_job, qualities, templates, callbacks: !args.poll })
    }

    /// The template and quality of job `n`: templates by weight, qualities in turn,
    /// deterministic so that two runs of one plan send the same mix.
    pub fn mix(&self, n: u64) -> (&TemplateMix, Quality) {
        let total: u64 = self.templates.iter().map(|t| u64::from(t.weight)).sum();
        let mut slot = n % total;
        let template = self
            .templates
            .iter()
            .find(|t| {
                let w = u64::from(t.weight);
                if slot < w {
                    true
                } else {
                    slot -= w;
                    false
                }
            })
            .expect("slot below the total weight");
        let quality = self.qualities[(n / total) as usize % self.qualities.len()];
        (template, quality)
    }

    /// The body of job `n`, asking for a callback to `callback` when given.
    pub fn job_body(&self, n: u64, callback: Option<&str>) -> Value {
        let (template, quality) = self.mix(n);
        let values: Vec<Value> = (0..self.videos_per_job)
            .map(|i| {
                let number = n * u64::from(self.videos_per_job) + u64::from(i);
                let variables: Map<String, Value> =
                    template.values.iter().map(|(id, v)| (id.clone(), numbered(v, number))).collect();
                json!({ "external_id": format!("loadtest-{number}"), "template_variables": variables })
            })
            .collect();
        let mut body = json!({ "template_id": template.id, "options": { "quality": quality }, "values": values });
        if let Some(url) = callback {
            body["notifications"] = json!([{ "type": "callback", "payload": { "url": url } }]);
        }
        body
    }
}

fn read_scenario(path: &Path) -> anyhow::Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading scenario {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("scenario {}", path.display()))
}

/// `ID` or `ID*WEIGHT`.
fn parse_template_arg(arg: &str) -> anyhow::Result<TemplateMix> {
    let (id, weight) = match arg.split_once('*') {
        Some((id, w)) => {
            (id, w.parse().with_context(|| format!("--template `{arg}`: the weight after `*` must be a number"))?)
        }
        None => (arg, 1),
    };
    if id.is_empty() {
        bail!("--template `{arg}`: the template id is missing");
    }
    Ok(TemplateMix { id: id.to_string(), weight, values: BTreeMap::new() })
}

/// `value` with `{n}` in its strings replaced by `n` (also inside objects, for rich text
/// and TTS values).
fn numbered(value: &Value, n: u64) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("{n}", &n.to_string())),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), numbered(v, n))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(|v| numbered(v, n)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        let cli = crate::cli::Cli::try_parse_from([&["reelfarm", "loadtest", "--token", "t"], args].concat()).unwrap();
        match cli.command {
            crate::cli::Command::Loadtest(args) => Plan::new(&args),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_command_line_overrides_the_scenario() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            r#"
url = "http://127.0.0.1:9000/"
rate = 2.5
duration = "90s"
qualities = ["720p"]
[[templates]]
id = "a"
weight = 3
values = { v = "Title {n}", rich = { type = "rich-text", value = "<b>{n}</b>" } }
[[templates]]
id = "b"
"#,
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let p = plan(&["--scenario", path]).unwrap();
        assert_eq!(p.url, "http://127.0.0.1:9000");
        assert_eq!((p.pace, p.stop), (Pace::Rate(2.5), Stop::Duration(Duration::from_secs(90))));
        let mix: Vec<_> = (0..8).map(|n| p.mix(n).0.id.as_str()).collect();
        assert_eq!(mix, ["a", "a", "a", "b", "a", "a", "a", "b"], "weights 3:1");
        let body = p.job_body(2, Some("http://127.0.0.1:1/cb"));
        assert_eq!(
            body["values"][0]["template_variables"],
            json!({"v": "Title 2", "rich": {"type": "rich-text", "value": "<b>2</b>"}})
        );
        assert_eq!(body["options"]["quality"], "720p");
        assert_eq!(body["notifications"][0]["payload"]["url"], "http://127.0.0.1:1/cb");

        let p = plan(&[
            "--scenario",
            path,
            "--concurrency",
            "3",
            "--jobs",
            "10",
            "--template",
            "c*2",
            "--quality",
            "480p",
            "--quality",
            "1080p",
            "--poll",
        ])
        .unwrap();
        assert_eq!((p.pace, p.stop, p.callbacks), (Pace::Concurrency(3), Stop::Jobs(10), false));
        let mix: Vec<_> = (0..4).map(|n| p.mix(n).1.as_str()).collect();
        assert_eq!(mix, ["480p", "480p", "1080p", "1080p"], "qualities in turn over the template cycle");
        assert!(p.job_body(0, None).get("notifications").is_none());
    }

    #[test]
    fn the_example_scenario_is_a_valid_plan() {
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/loadtest.toml");
        let p = plan(&["--scenario", example]).unwrap();
        assert_eq!((p.pace, p.stop), (Pace::Concurrency(8), Stop::Duration(Duration::from_secs(300))));
        assert_eq!(p.templates.len(), 2);
        let quote = &p.job_body(5, None)["values"][0]["template_variables"]["265178f4-d980-40e9-ab00-e7874fb58e0f"];
        assert_eq!(quote, "Load test quote number 5");
    }

    #[test]
    fn bad_plans_are_refused_with_the_reason() {
        for (args, reason) in [
            (vec!["--template", "a"], "--duration or --jobs"),
            (vec!["--jobs", "1"], "at least one template"),
            (vec!["--jobs", "0", "--template", "a"], "at least 1"),
            (vec!["--jobs", "1", "--template", "a", "--rate", "0"], "positive"),
            (vec!["--duration", "5 parsecs", "--template", "a"], "duration"),
            (vec!["--jobs", "1", "--template", "a*x"], "weight"),
            (vec!["--jobs", "1", "--template", "a", "--url", "ftp://x"], "http(s)"),
            (vec!["--jobs", "1", "--template", "a", "--videos-per-job", "0"], "1 to 100"),
        ] {
            let err = plan(&args).unwrap_err().to_string();
            assert!(err.contains(reason), "{args:?}: {err}");
        }
    }
}
