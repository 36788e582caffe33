//! Templates: imported by the operator (`reelfarm admin template import`) or saved by
//! their owner through the API, seen by their owner, by the users and groups they are
//! shared with, and by everyone when public; archived ones by nobody. Their versions are
//! in [`template_versions`](super::template_versions).

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::template_versions::insert_version;
use super::{
    flag, id, is_foreign_key_violation, is_unique_violation, optional_id, NewTemplate, Result, ShareTarget, Store,
    StoreError, TemplateRecord,
};
use crate::store::TemplateStore;
use reelfarm_domain::id::{now_ms, GroupId, TemplateId, UserId};
use reelfarm_domain::quality::Quality;

const COLUMNS: &str = "id, name, owner_user_id, public, category, tags, json, duration_ms, quality, blob_prefix, \
    files, thumb_key, preview_key, archived, created_at, version";

/// Those `$1` may see: own, shared with them or one of their groups, public; not archived.
const VISIBLE_TO_1: &str = "archived = 0 AND (owner_user_id = $1 OR public = 1 OR id IN (\
    SELECT template_id FROM template_shares WHERE user_id = $1 \
    OR group_id IN (SELECT group_id FROM group_members WHERE user_id = $1)))";

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("template {what}: {e}"))
}

fn template_from(row: &AnyRow) -> Result<TemplateRecord> {
    let tags: String = row.try_get("tags")?;
    let files: String = row.try_get("files")?;
    let quality: String = row.try_get("quality")?;
    Ok(TemplateRecord {
        id: id(row, "id")?,
        name: row.try_get("name")?,
        owner_user_id: optional_id(row, "owner_user_id")?,
        public: flag(row, "public")?,
        category: row.try_get("category")?,
        tags: serde_json::from_str(&tags).map_err(|e| corrupt("tags", e))?,
        json: row.try_get("json")?,
        duration_ms: row.try_get("duration_ms")?,
        quality: quality.parse::<Quality>().map_err(|_| corrupt("quality", &quality))?,
        blob_prefix: row.try_get("blob_prefix")?,
        files: serde_json::from_str(&files).map_err(|e| corrupt("files", e))?,
        thumb_key: row.try_get("thumb_key")?,
        preview_key: row.try_get("preview_key")?,
        archived: flag(row, "archived")?,
        created_at: row.try_get("created_at")?,
        version: row.try_get("version")?,
    })
}

impl TemplateStore for Store {
    #[tracing::instrument(name = "store::create_template", level = "debug", skip_all)]
    async fn create_template(&self, new: &NewTemplate) -> Result<TemplateRecord> {
        if new.owner_user_id.is_none() && !new.public {
            return Err(StoreError::Conflict("a template without an owner must be public".into()));
        }
        let now = now_ms();
        let mut tx = self.begin().await?;
        insert_template(&mut tx, new, now).await?;
        insert_version(&mut tx, &new.id, 1, &new.json, &new.files, new.owner_user_id.as_ref(), now).await?;
        tx.commit().await?;
        self.template(&new.id).await
    }

    #[tracing::instrument(name = "store::template", level = "debug", skip_all)]
    async fn template(&self, id: &TemplateId) -> Result<TemplateRecord> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM templates WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("template"))?;
        template_from(&row)
    }

    #[tracing::instrument(name = "store::visible_template", level = "debug", skip_all)]
    async fn visible_template(&self, id: &TemplateId, user_id: &UserId) -> Result<TemplateRecord> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM templates WHERE {VISIBLE_TO_1} AND id = $2"))
            .bind(user_id.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("template"))?;
        template_from(&row)
    }

    #[tracing::instrument(name = "store::visible_templates", level = "debug", skip_all)]
    async fn visible_templates(&self, user_id: &UserId, limit: u32, offset: u64) -> Result<Vec<TemplateRecord>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM templates WHERE {VISIBLE_TO_1} ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
        ))
        .bind(user_id.as_str())
        .bind(i64::from(limit))
        .bind(offset as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(template_from).collect()
    }

    #[tracing::instrument(name = "store::share_template", level = "debug", skip_all)]
    async fn share_template(&self, template_id: &TemplateId, with: &ShareTarget) -> Result<()> {
        let (user, group) = match with {
            ShareTarget::User(u) => (Some(u.as_str()), None),
            ShareTarget::Group(g) => (None, Some(g.as_str())),
        };
        let inserted = sqlx::query(
            "INSERT INTO template_shares (template_id, user_id, group_id, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(template_id.as_str())
        .bind(user)
        .bind(group)
        .bind(now_ms())
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Ok(()),
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::NotFound("template or share target")),
            Err(e) => Err(e.into()),
        }
    }

    #[tracing::instrument(name = "store::template_shares", level = "debug", skip_all)]
    async fn template_shares(&self, template_id: &TemplateId) -> Result<Vec<ShareTarget>> {
        let rows = sqlx::query(
            "SELECT user_id, group_id FROM template_shares WHERE template_id = $1 \
             ORDER BY created_at, user_id, group_id",
        )
        .bind(template_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let user: Option<String> = row.try_get("user_id")?;
                let group: Option<String> = row.try_get("group_id")?;
                match (user, group) {
                    (Some(u), None) => Ok(ShareTarget::User(UserId::trusted(u))),
                    (None, Some(g)) => Ok(ShareTarget::Group(GroupId::trusted(g))),
                    _ => Err(corrupt("share", "neither or both of user and group")),
                }
            })
            .collect()
    }
}

/// Writes the `templates` row of `new` (version 1) inside the caller's transaction.
pub(super) async fn insert_template(tx: &mut Transaction<'static, Any>, new: &NewTemplate, now: i64) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO templates ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 0, $14, 1)"
    ))
    .bind(new.id.as_str())
    .bind(&new.name)
    .bind(new.owner_user_id.as_ref().map(UserId::as_str))
    .bind(i64::from(new.public))
    .bind(&new.category)
    .bind(serde_json::to_string(&new.tags).expect("tags serialize"))
    .bind(&new.json)
    .bind(new.duration_ms)
    .bind(new.quality.as_str())
    .bind(&new.blob_prefix)
    .bind(serde_json::to_string(&new.files).expect("files serialize"))
    .bind(&new.thumb_key)
    .bind(&new.preview_key)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| {
        if is_foreign_key_violation(&e) {
            StoreError::NotFound("template owner")
        } else if is_unique_violation(&e) {
            StoreError::Conflict(format!("a template with id {} exists already", new.id))
        } else {
            e.into()
        }
    })?;
    Ok(())
}
