//! Drafts: a fast, low-resolution render of a whole template with values, to judge timing
//! and motion before paying for the real one. A draft is a job of one video marked
//! `draft`: it costs no credit, renders at 480p (or the template's own size when smaller)
//! and at most 15 fps with x264's fastest preset, is not listed with the jobs and is
//! deleted with its video a day after it was made. It is polled like any job.
//!
//! What bounds them is the account's budget: `draft_minutes` of video in any hour.

use reelfarm_backends::store::{CreditStore, JobCreation, JobStore, TemplateStore};
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
        self.within_draft_budget(user, &estimate).await?;
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
        match self.backends.store().create_job(&job, None).await? {
            JobCreation::Created => Ok(JobRecord::from_new(&job)),
            other => Err(AppError::Failed(format!("a draft was not created: {other:?}"))),
        }
    }

    /// Refuses a draft that the account's budget (`draft_minutes` of video in any hour)
    /// does not cover: `TryLater` until enough of the hour's drafts have aged out, or
    /// invalid naming the template (`id`) when this draft alone is longer than the budget.
    async fn within_draft_budget(&self, user: &User, estimate: &Estimate) -> Result<()> {
        let Some(minutes) = self.draft_minutes else { return Ok(()) };
        let budget = i64::from(minutes) * 60_000;
        let wanted = (estimate.duration * 1000.0).round() as i64;
        if wanted > budget {
            let message = format!(
                "a draft of this template is {:.0} s long; drafts may make {minutes} minutes of video an hour",
                estimate.duration
            );
            return Err(AppError::Invalid(vec![FieldError::new("id", ErrorKey::LimitExceeded, message)]));
        }
        let now = now_ms();
        let drafts = self.backends.store().drafts_since(&user.id, now - BUDGET_WINDOW_MS).await?;
        let mut used: i64 = drafts.iter().map(|(_, ms)| ms).sum();
        if used + wanted <= budget {
            return Ok(());
        }
        // The hour's drafts age out oldest first: the time the one that makes room does.
        for (made, ms) in drafts {
            used -= ms;
            if used + wanted <= budget {
                let wait_ms = (made + BUDGET_WINDOW_MS - now).max(1000);
                return Err(AppError::TryLater { seconds: (wait_ms as u64).div_ceil(1000) });
            }
        }
        Err(AppError::TryLater { seconds: BUDGET_WINDOW_MS as u64 / 1000 })
    }
}
