//! Versions of templates: every save through the API is a new version and becomes the
//! current one (copied onto the `templates` row, which reads stay on); old versions are
//! kept, listed and can be saved again (restored). Jobs pin the version they were checked
//! against ([`NewJob::template_version`](super::NewJob)).

use std::collections::BTreeMap;

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::jobs::want_template_media;
use super::templates::insert_template;
use super::{
    id, optional_id, NewTemplate, Result, Store, StoreError, TemplateContent, TemplateRecord, TemplateVersion,
};
use crate::store::{TemplateStore, TemplateVersionStore};
use reelfarm_domain::id::{now_ms, TemplateId, UserId};

const VERSION_COLUMNS: &str = "template_id, version, json, files, saved_by, created_at";

fn version_from(row: &AnyRow) -> Result<TemplateVersion> {
    let files: String = row.try_get("files")?;
    Ok(TemplateVersion {
        template_id: id(row, "template_id")?,
        version: row.try_get("version")?,
        json: row.try_get("json")?,
        files: serde_json::from_str(&files).map_err(|e| StoreError::Corrupt(format!("template version files: {e}")))?,
        saved_by: optional_id(row, "saved_by")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Records `version` of template `id` inside the caller's transaction.
pub(super) async fn insert_version(
    tx: &mut Transaction<'static, Any>,
    id: &TemplateId,
    version: i64,
    json: &str,
    files: &BTreeMap<String, String>,
    saved_by: Option<&UserId>,
    now: i64,
) -> Result<()> {
    sqlx::query(&format!("INSERT INTO template_versions ({VERSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"))
        .bind(id.as_str())
        .bind(version)
        .bind(json)
        .bind(serde_json::to_string(files).expect("files serialize"))
        .bind(saved_by.map(UserId::as_str))
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl TemplateVersionStore for Store {
    #[tracing::instrument(name = "store::create_saved_template", level = "debug", skip_all)]
    async fn create_saved_template(&self, new: &NewTemplate, media_cost_ms: i64) -> Result<TemplateRecord> {
        let owner =
            new.owner_user_id.as_ref().ok_or_else(|| StoreError::Conflict("a saved template has an owner".into()))?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        insert_template(&mut tx, new, now).await?;
        insert_version(&mut tx, &new.id, 1, &new.json, &new.files, Some(owner), now).await?;
        want_template_media(&mut tx, &new.id, 1, owner, media_cost_ms).await?;
        tx.commit().await?;
        self.outbox_written();
        self.template(&new.id).await
    }

    #[tracing::instrument(name = "store::save_template", level = "debug", skip_all)]
    async fn save_template(
        &self,
        id: &TemplateId,
        content: &TemplateContent,
        saved_by: &UserId,
        base: Option<i64>,
    ) -> Result<TemplateRecord> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        let saved = sqlx::query(
            "UPDATE templates SET name = $2, category = $3, tags = $4, json = $5, duration_ms = $6, quality = $7, \
             files = $8, version = version + 1 \
             WHERE id = $1 AND archived = 0 AND version = COALESCE($9, version) RETURNING version",
        )
        .bind(id.as_str())
        .bind(&content.name)
        .bind(&content.category)
        .bind(serde_json::to_string(&content.tags).expect("tags serialize"))
        .bind(&content.json)
        .bind(content.duration_ms)
        .bind(content.quality.as_str())
        .bind(serde_json::to_string(&content.files).expect("files serialize"))
        .bind(base)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = saved else {
            tx.rollback().await?;
            let current = self.template(id).await?;
            if current.archived {
                return Err(StoreError::NotFound("template"));
            }
            return Err(StoreError::Conflict(format!(
                "version {} of the template was saved since version {} was read; load it and save again",
                current.version,
                base.unwrap_or_default()
            )));
        };
        let version: i64 = row.try_get(0)?;
        insert_version(&mut tx, id, version, &content.json, &content.files, Some(saved_by), now).await?;
        want_template_media(&mut tx, id, version, saved_by, content.media_cost_ms).await?;
        tx.commit().await?;
        self.outbox_written();
        self.template(id).await
    }

    #[tracing::instrument(name = "store::template_versions", level = "debug", skip_all)]
    async fn template_versions(&self, id: &TemplateId, limit: u32, offset: u64) -> Result<Vec<TemplateVersion>> {
        let rows = sqlx::query(&format!(
            "SELECT {VERSION_COLUMNS} FROM template_versions WHERE template_id = $1 \
             ORDER BY version DESC LIMIT $2 OFFSET $3"
        ))
        .bind(id.as_str())
        .bind(i64::from(limit))
        .bind(offset as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(version_from).collect()
    }

    #[tracing::instrument(name = "store::template_version", level = "debug", skip_all)]
    async fn template_version(&self, id: &TemplateId, version: i64) -> Result<TemplateVersion> {
        let row = sqlx::query(&format!(
            "SELECT {VERSION_COLUMNS} FROM template_versions WHERE template_id = $1 AND version = $2"
        ))
        .bind(id.as_str())
        .bind(version)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound("template version"))?;
        version_from(&row)
    }

    #[tracing::instrument(name = "store::template_at", level = "debug", skip_all)]
    async fn template_at(&self, id: &TemplateId, version: Option<i64>) -> Result<TemplateRecord> {
        let mut record = self.template(id).await?;
        if let Some(version) = version.filter(|v| *v != record.version) {
            let old = self.template_version(id, version).await?;
            (record.json, record.files, record.version) = (old.json, old.files, version);
        }
        Ok(record)
    }

    #[tracing::instrument(name = "store::archive_template", level = "debug", skip_all)]
    async fn archive_template(&self, id: &TemplateId) -> Result<()> {
        let done = sqlx::query("UPDATE templates SET archived = 1 WHERE id = $1")
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("template"));
        }
        Ok(())
    }

    #[tracing::instrument(name = "store::set_template_media", level = "debug", skip_all)]
    async fn set_template_media(
        &self,
        id: &TemplateId,
        version: i64,
        thumb_key: &str,
        preview_key: &str,
    ) -> Result<bool> {
        let done = sqlx::query("UPDATE templates SET thumb_key = $3, preview_key = $4 WHERE id = $1 AND version = $2")
            .bind(id.as_str())
            .bind(version)
            .bind(thumb_key)
            .bind(preview_key)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
