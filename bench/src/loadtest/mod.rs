//! `reelfarm loadtest`: drives a running deployment over its public API with a token —
//! jobs at a fixed rate or from N clients, for a duration or a job count, over a mix of
//! templates and qualities — watches the videos end through callbacks to its own loopback
//! listener (or by polling), and reports renders per minute, latency percentiles (job
//! creation, queue wait, render time, end to end), failures by error key and credits
//! used, as `report.json` and a self-contained `report.html` with plots.

mod api;
mod drive;
mod html;
mod plan;
mod report;

use anyhow::Context;

use crate::cli::LoadtestArgs;
use api::Api;
use plan::Plan;
use report::{Credits, Report};

pub async fn run(args: LoadtestArgs) -> anyhow::Result<()> {
    let plan = Plan::new(&args)?;
    let mut apis = Vec::with_capacity(plan.accounts.len());
    let mut before = 0;
    for account in &plan.accounts {
        let api = Api::new(&plan.url, &account.token)?;
        before += api.credits().await.with_context(|| format!("account {}", account.name))?;
        for template in &plan.templates {
            api.check_template(&template.id).await.with_context(|| format!("account {}", account.name))?;
        }
        apis.push((account.name.clone(), api));
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    eprintln!(
        "loadtest: {} against {} ({})",
        match plan.stop {
            plan::Stop::Jobs(n) => format!("{n} jobs"),
            plan::Stop::Duration(d) => format!("jobs for {} s", d.as_secs_f64()),
        },
        plan.url,
        if plan.callbacks { "callbacks" } else { "polling" },
    );
    let started_at = reelfarm_domain::id::iso8601(reelfarm_domain::id::now_ms());
    let observed = drive::drive(&plan, apis.clone(), args.listen, args.drain_timeout).await?;
    let mut after = 0;
    for (_, api) in &apis {
        after += api.credits().await?;
    }
    let report = Report::new(&plan, started_at, observed, Credits { before, after, used: before - after });

    let json = args.out.join("report.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let html = args.out.join("report.html");
    std::fs::write(&html, html::page(&report)?).with_context(|| format!("writing {}", html.display()))?;
    report.print();
    println!("  reports                {} and {}", json.display(), html.display());
    Ok(())
}
