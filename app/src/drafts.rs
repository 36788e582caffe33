//! Drafts: a fast, low-resolution render of a whole template with values, to judge timing
//! and motion before paying for the real one. A draft is a job of one video marked
//! `draft`: it costs no credit, renders at 480p (or the template's own size when smaller)
//! and at most 15 fps with x264's fastest preset, is not listed with the jobs and is
//! deleted with its video a day after it was made. It is polled like any job.
//!
//! What bounds them is the account's budget: `draft_minutes` of video in any hour.

use reelfarm_backends::store::{JobCreation, JobStore, TemplateStore};
use reelfarm_domain::account::User;
use reelfarm_domain::cost::Estimate;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::{now_ms, JobId, TemplateId};
use reelfarm_domain::job::{JobRecord, NewJob, NewRender};
use reelfarm_domain::output::Output;
use reelfarm_domain::priority::Priority;
use reelfarm_domain::quality::Quality;
use serde_json::{Map, Value};

use crate::farm::Farm;
use crate::{AppError, FieldError, Result};

/// The window the draft budget counts in.
const BUDGET_WINDOW_MS: i64 = 3_600_000;

impl Farm {
    /// Starts a draft of template `id` (its current version) with `values` for `user`;
    /// the job as made.
    #[tracing::instrument(name = "drafts::create", skip_all, fields(user_id = %user.id, id = %id))]
    pub async fn draft(&self, user: &User, id: &TemplateId, values: Map<String, Value>) -> Result<JobRecord> {
        let record = self.backends.store().visible_template(id, &user.id).await?;
        let template = self.catalog.document(&record)?;
        let quality = Quality::of_preview(template.canvas.width, template.canvas.height);
        let problems = self.beyond_limits(&template, quality);
        if !problems.is_empty() {
            return Err(AppError::Invalid(problems));
        }
        self.check_values(user, &template, values.clone(), "values").await?;
        let estimate = Estimate::of(&template, quality, &Output::default(), &|_| None);
        let budget_ms = self.draft_budget_ms(&estimate)?;
        let job = NewJob {
            id: JobId::generate(),
            user_id: user.id.clone(),
            template_id: record.id.clone(),
            template_version: record.version,
            draft: true,
            quality,
            priority: Priority::Normal,
            create_render: true,
            create_project: false,
            notifications: Vec::new(),
            output: Default::default(),
            renders: vec![NewRender { title: "Draft".into(), template_variables: values, ..self.costs(&estimate) }],
            created_at: now_ms(),
        };
        let store = self.backends.store();
        let created = match budget_ms {
            // The budget is checked as the draft is written, in one step.
            Some(budget_ms) => store.create_draft(&job, job.created_at - BUDGET_WINDOW_MS, budget_ms).await?,
            None => store.create_job(&job, None).await?,
        };
        match created {
            JobCreation::Created => Ok(JobRecord::from_new(&job)),
            JobCreation::DraftBudgetSpent { drafts } => {
                Err(AppError::TryLater { seconds: wait_for_room(&drafts, &job, budget_ms.unwrap_or(0)) })
            }
            other => Err(AppError::Failed(format!("a draft was not created: {other:?}"))),
        }
    }

    /// The account's draft budget in milliseconds of video (`None`: unlimited); invalid,
    /// naming the template (`id`), when this draft alone is longer.
    fn draft_budget_ms(&self, estimate: &Estimate) -> Result<Option<i64>> {
        let Some(minutes) = self.draft_minutes else { return Ok(None) };
        let budget = i64::from(minutes) * 60_000;
        if (estimate.duration * 1000.0).round() as i64 > budget {
            let message = format!(
                "a draft of this template is {:.0} s long; drafts may make {minutes} minutes of video an hour",
                estimate.duration
            );
            return Err(AppError::Invalid(vec![FieldError::new("id", ErrorKey::LimitExceeded, message)]));
        }
        Ok(Some(budget))
    }
}

/// Seconds until `job` fits the budget of `budget_ms` beside the window's `drafts`
/// (oldest first): they age out oldest first, and the one that makes room says when.
fn wait_for_room(drafts: &[(i64, i64)], job: &NewJob, budget_ms: i64) -> u64 {
    let wanted: i64 = job.renders.iter().map(|r| r.video_ms).sum();
    let mut used: i64 = drafts.iter().map(|(_, ms)| ms).sum();
    for (made, ms) in drafts {
        used -= ms;
        if used + wanted <= budget_ms {
            let wait_ms = (made + BUDGET_WINDOW_MS - job.created_at).max(1000);
            return (wait_ms as u64).div_ceil(1000);
        }
    }
    BUDGET_WINDOW_MS as u64 / 1000
}
