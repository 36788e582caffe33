//! What a load test does: the TOML scenario file merged with the command line (which
//! wins), checked before any request is sent.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::cli::LoadtestArgs;
use reelfarm_domain::priority::Priority;
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
    /// Several accounts sending jobs (each with its own token); the token of the command
    /// line alone when none is given.
    #[serde(default)]
    pub accounts: Vec<AccountSpec>,
}

/// One account of a multi-account scenario, as the file gives it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountSpec {
    /// Its name in the report.
    pub name: String,
    /// The environment variable holding its API token (tokens stay out of files).
    pub token_env: String,
    /// Relative share of the jobs (default 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// Videos per job of this account (default: the scenario's).
    pub videos_per_job: Option<u32>,
    /// `options.priority` of its jobs (default: none sent).
    pub priority: Option<String>,
}

/// An account jobs are sent for.
#[derive(Debug, Clone, Serialize)]
pub struct Account {
    pub name: String,
    #[serde(skip)]
    pub token: String,
    pub weight: u32,
    pub videos_per_job: u32,
    pub priority: Option<Priority>,
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
    /// Who sends the jobs, by weight (one account unless the scenario lists several).
    pub accounts: Vec<Account>,
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
        let accounts = accounts(scenario.accounts, args.token.as_deref(), videos_per_job)?;
        Ok(Plan { url, pace, stop, videos_per_job, qualities, templates, accounts, callbacks: !args.poll })
    }

    /// The account of job `n`, by weight.
    pub fn account_of(&self, n: u64) -> usize {
        by_weight(self.accounts.iter().map(|a| a.weight), n).0
    }

    /// The template and quality of job `n`: templates by weight, qualities in turn,
    /// deterministic so that two runs of one plan send the same mix (and, with several
    /// accounts, each account a mix of its own).
    pub fn mix(&self, n: u64) -> (&TemplateMix, Quality) {
        let accounts: u64 = self.accounts.iter().map(|a| u64::from(a.weight)).sum();
        let (template, round) = by_weight(self.templates.iter().map(|t| t.weight), n / accounts.max(1));
        let quality = self.qualities[round as usize % self.qualities.len()];
        (&self.templates[template], quality)
    }

    /// Videos of the first `jobs` jobs.
    pub fn videos_of(&self, jobs: u64) -> u64 {
        (0..jobs).map(|n| u64::from(self.accounts[self.account_of(n)].videos_per_job)).sum()
    }

    /// The body of job `n`, asking for a callback to `callback` when given.
    pub fn job_body(&self, n: u64, callback: Option<&str>) -> Value {
        let (template, quality) = self.mix(n);
        let account = &self.accounts[self.account_of(n)];
        let per_job = account.videos_per_job;
        let values: Vec<Value> = (0..per_job)
            .map(|i| {
                let number = n * u64::from(per_job) + u64::from(i);
                let variables: Map<String, Value> =
                    template.values.iter().map(|(id, v)| (id.clone(), numbered(v, number))).collect();
                json!({ "external_id": format!("loadtest-{number}"), "template_variables": variables })
            })
            .collect();
        let mut body = json!({ "template_id": template.id, "options": { "quality": quality }, "values": values });
        if let Some(priority) = account.priority {
            body["options"]["priority"] = json!(priority.as_str());
        }
        if let Some(url) = callback {
            body["notifications"] = json!([{ "type": "callback", "payload": { "url": url } }]);
        }
        body
    }
}

/// Which of the items weighted `weights` slot `n` falls on (cycling through the total
/// weight), and which round of the cycle it is.
fn by_weight(weights: impl Iterator<Item = u32> + Clone, n: u64) -> (usize, u64) {
    let total: u64 = weights.clone().map(u64::from).sum();
    let mut slot = n % total;
    for (i, w) in weights.enumerate() {
        if slot < u64::from(w) {
            return (i, n / total);
        }
        slot -= u64::from(w);
    }
    unreachable!("slot below the total weight")
}

/// The accounts of the scenario, their tokens read from the environment; the command
/// line's token alone when it lists none.
fn accounts(specs: Vec<AccountSpec>, token: Option<&str>, videos_per_job: u32) -> anyhow::Result<Vec<Account>> {
    if specs.is_empty() {
        let token =
            token.context("give a token (--token or REELFARM_LOADTEST_TOKEN) or [[accounts]] in the scenario")?;
        let only = Account { name: "default".into(), token: token.into(), weight: 1, videos_per_job, priority: None };
        return Ok(vec![only]);
    }
    let mut accounts: Vec<Account> = Vec::with_capacity(specs.len());
    for spec in specs {
        let name = &spec.name;
        if name.is_empty() || accounts.iter().any(|a| a.name == *name) {
            bail!("account names must be given and differ (`{name}`)");
        }
        let token = std::env::var(&spec.token_env)
            .with_context(|| format!("account {name}: the environment variable {} holds no token", spec.token_env))?;
        if spec.weight == 0 {
            bail!("account {name}: the weight must be at least 1");
        }
        let videos_per_job = spec.videos_per_job.unwrap_or(videos_per_job);
        if !(1..=100).contains(&videos_per_job) {
            bail!("account {name}: videos per job must be 1 to 100");
        }
        let priority =
            spec.priority.as_deref().map(str::parse).transpose().map_err(|e| anyhow::anyhow!("account {name}: {e}"))?;
        accounts.push(Account { name: spec.name, token, weight: spec.weight, videos_per_job, priority });
    }
    Ok(accounts)
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

    /// `reelfarm loadtest`'s arguments alone.
    #[derive(Parser)]
    struct Loadtest {
        #[command(flatten)]
        args: LoadtestArgs,
    }

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        let parsed = Loadtest::try_parse_from([&["loadtest", "--token", "t"], args].concat()).unwrap();
        Plan::new(&parsed.args)
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
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/loadtest.toml");
        let p = plan(&["--scenario", example]).unwrap();
        assert_eq!((p.pace, p.stop), (Pace::Concurrency(8), Stop::Duration(Duration::from_secs(300))));
        assert_eq!(p.templates.len(), 2);
        let quote = &p.job_body(5, None)["values"][0]["template_variables"]["265178f4-d980-40e9-ab00-e7874fb58e0f"];
        assert_eq!(quote, "Load test quote number 5");
    }

    #[test]
    fn several_accounts_send_jobs_by_weight_with_their_own_settings() {
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/loadtest-accounts.toml");
        for (var, token) in
            [("REELFARM_TOKEN_BATCH", "rf_b"), ("REELFARM_TOKEN_SHOP", "rf_s"), ("REELFARM_TOKEN_NEWS", "rf_n")]
        {
            std::env::set_var(var, token);
        }
        let p = plan(&["--scenario", example]).unwrap();
        let names: Vec<_> = p.accounts.iter().map(|a| (a.name.as_str(), a.token.as_str())).collect();
        assert_eq!(names, [("batch", "rf_b"), ("shop", "rf_s"), ("news", "rf_n")], "the command line's token unused");
        let senders: Vec<_> = (0..8).map(|n| p.accounts[p.account_of(n)].name.as_str()).collect();
        assert_eq!(senders, ["batch", "batch", "shop", "news", "batch", "batch", "shop", "news"], "weights 2:1:1");
        let batch = p.job_body(0, None);
        assert_eq!((batch["values"].as_array().unwrap().len(), &batch["options"]["priority"]), (20, &json!("low")));
        let single = p.job_body(2, None);
        assert_eq!(single["values"].as_array().unwrap().len(), 1);
        assert!(single["options"].get("priority").is_none());
        assert_eq!(p.videos_of(4), 42);
        let report = serde_json::to_string(&p).unwrap();
        assert!(!report.contains("rf_b"), "tokens stay out of the report: {report}");

        let dir = tempfile::tempdir().unwrap();
        let bad = |accounts: &str| {
            let file = dir.path().join("bad.toml");
            std::fs::write(&file, format!("jobs = 1\n[[templates]]\nid = \"a\"\n{accounts}")).unwrap();
            plan(&["--scenario", file.to_str().unwrap()]).unwrap_err().to_string()
        };
        let missing = bad("[[accounts]]\nname = \"x\"\ntoken_env = \"REELFARM_TOKEN_NOWHERE\"");
        assert!(missing.contains("REELFARM_TOKEN_NOWHERE"), "{missing}");
        let priority = bad("[[accounts]]\nname = \"x\"\ntoken_env = \"REELFARM_TOKEN_SHOP\"\npriority = \"urgent\"");
        assert!(priority.contains("account x") && priority.contains("low, normal, high"), "{priority}");
        let twice = "[[accounts]]\nname = \"x\"\ntoken_env = \"REELFARM_TOKEN_SHOP\"\n";
        assert!(bad(&format!("{twice}{twice}")).contains("differ"));
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
