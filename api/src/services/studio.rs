//! A frame of a revision of the studio's working copy (`reelfarm_app::studio`), bounded
//! as every preview frame is.

use reelfarm_domain::id::TemplateId;

use super::{previews, Result};
use crate::auth::Caller;
use crate::state::AppState;

/// The JPEG of the frame at `at` seconds of revision `rev` of the caller's working copy of
/// template `id`, at 480p — checked as a save would check it before a worker draws it.
pub async fn frame(state: &AppState, caller: &Caller, id: &TemplateId, rev: i64, at: f64) -> Result<Vec<u8>> {
    let revision = state.farm.studio_revision(&caller.user, id, rev).await?;
    let document = (&revision.template, revision.json);
    previews::frame_of_document(state, caller, &revision.record, document, at, revision.quality).await
}
