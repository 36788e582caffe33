//! Preview frames: the frame of a template at a time, with values applied as a job's,
//! drawn by a worker with the renderer's compositor (a `preview` call on the bus) and
//! answered as a JPEG. Anyone who may render a template may preview it; a frame costs no
//! credit (the API bounds how many an account asks for).

use reelfarm_backends::bus::{BusError, Service};
use reelfarm_domain::account::User;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::preview::{PreviewAnswer, PreviewCall, PREVIEW_WAIT};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_domain::template::Template;
use serde_json::{Map, Value};

use crate::farm::Farm;
use crate::{AppError, FieldError, Result};
use reelfarm_backends::store::TemplateStore;

/// A preview: the time of the frame (seconds), values as a job's `template_variables`,
/// and its size.
#[derive(Debug)]
pub struct PreviewRequest {
    pub at: f64,
    pub values: Map<String, Value>,
    pub quality: Quality,
}

impl Farm {
    /// The JPEG of the frame of template `id` (its current version) at `request.at`.
    #[tracing::instrument(name = "previews::frame", skip_all, fields(user_id = %user.id, id = %id))]
    pub async fn frame(&self, user: &User, id: &TemplateId, request: PreviewRequest) -> Result<Vec<u8>> {
        let record = self.backends.store().visible_template(id, &user.id).await?;
        let template = self.catalog.document(&record)?;
        within(record.duration_ms as f64 / 1000.0, request.at)?;
        let problems = self.beyond_limits(&template, request.quality);
        if !problems.is_empty() {
            return Err(AppError::Invalid(problems));
        }
        self.check_values(user, &template, request.values.clone(), "values").await?;
        let call = PreviewCall {
            template_id: record.id.clone(),
            version: record.version,
            at: request.at,
            quality: request.quality,
            values: request.values,
            document: None,
        };
        self.drawn(&call).await
    }

    /// The JPEG of the frame at `at` of `template`, an unsaved document of the template
    /// `record` (the studio's working copy) that was checked as a save; it may use
    /// `record`'s files.
    #[tracing::instrument(name = "previews::frame_of_document", skip_all, fields(id = %record.id))]
    pub async fn frame_of_document(
        &self,
        record: &TemplateRecord,
        (template, json): (&Template, String),
        at: f64,
        quality: Quality,
    ) -> Result<Vec<u8>> {
        within(template.duration(), at)?;
        let call = PreviewCall {
            template_id: record.id.clone(),
            version: record.version,
            at,
            quality,
            values: Map::new(),
            document: Some(json),
        };
        self.drawn(&call).await
    }

    /// Asks a worker for the frame of `call`.
    async fn drawn(&self, call: &PreviewCall) -> Result<Vec<u8>> {
        let answer = match self.backends.bus().call(Service::Preview, &call.to_bytes(), PREVIEW_WAIT).await {
            Ok(answer) => answer,
            Err(BusError::NoAnswer(_)) => {
                tracing::warn!("no worker answered a preview call");
                return Err(AppError::Unavailable);
            }
            Err(e) => return Err(AppError::Failed(format!("the preview call failed: {e}"))),
        };
        match PreviewAnswer::from_bytes(&answer) {
            Some(PreviewAnswer::Frame(jpeg)) => Ok(jpeg),
            Some(PreviewAnswer::Refused(message)) => {
                Err(AppError::Invalid(vec![FieldError::new("values", ErrorKey::Unrenderable, message)]))
            }
            Some(PreviewAnswer::Busy(message)) => {
                tracing::warn!(%message, "a preview frame was not drawn in time");
                Err(AppError::Unavailable)
            }
            Some(PreviewAnswer::Failed(message)) => Err(AppError::Failed(format!("preview failed: {message}"))),
            None => Err(AppError::Failed("undecodable preview answer".into())),
        }
    }
}

/// `at` must be a time of a video of `duration` seconds.
fn within(duration: f64, at: f64) -> Result<()> {
    if !at.is_finite() || at < 0.0 || at > duration {
        let message = format!("must be within the video: 0 to {duration} seconds");
        return Err(AppError::Invalid(vec![FieldError::new("t", ErrorKey::Invalid, message)]));
    }
    Ok(())
}
