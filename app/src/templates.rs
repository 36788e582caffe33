//! Templates as a user sees them ([`TemplateView`]), and importing a template file
//! (`reelfarm admin template import`, the first run's examples): the template is checked,
//! its placeholder media stored, its thumb and preview rendered from its defaults, and the
//! record written.
//!
//! Nothing is visible until everything is in place: the files go under the template's
//! unguessable blob prefix first, the record is written last, and a failure on the way
//! removes what was stored.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use reelfarm_backends::store::{AssetStore, StoreError, TemplateStore, UserStore};
use reelfarm_backends::{Backends, Blobs};
use reelfarm_domain::asset::AssetStatus;
use reelfarm_domain::cost::Limits;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::{TemplateId, UserId};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::stored::{blob_prefix, NewTemplate, ShareTarget, TemplateRecord};
use reelfarm_domain::template::{Source, Template, TemplateVariable};

use crate::catalog::Catalog;
use crate::farm::Farm;
use crate::{Actor, AppError, FieldError, Result};

/// Renders a template's preview (an MP4 of its first seconds) and thumb (a JPEG) from its
/// defaults. The worker's renderer, given to the use case by the binary: the use case
/// decides what is rendered and where it goes, the renderer how.
#[async_trait::async_trait]
pub trait PreviewRenderer: Send + Sync {
    /// Renders `template` into `mp4` and `jpg`. `files` are its `file` sources, found on
    /// this machine; other sources (assets, addresses) are the renderer's to fetch.
    async fn render_preview(
        &self,
        template: &Template,
        files: &BTreeMap<String, PathBuf>,
        mp4: &Path,
        jpg: &Path,
    ) -> std::result::Result<(), String>;
}

/// Who a template is imported for.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportTemplate {
    /// The template file; `file` sources are relative to its directory.
    pub path: PathBuf,
    /// Owning user (name or id). Required unless `public`.
    pub owner: Option<String>,
    /// Visible to every user.
    pub public: bool,
    /// What a render of the template may ask of the farm (`Config::render_limits`).
    pub limits: Limits,
    /// A fixed id (the examples'); `None` makes a new one. An id that exists is a
    /// `Conflict` and leaves the stored template as it was.
    pub id: Option<TemplateId>,
}

/// Imports the template file `new.path`; returns the stored template.
#[tracing::instrument(name = "templates::import", skip_all)]
pub async fn import(
    store: &(impl AssetStore + TemplateStore + UserStore),
    blobs: &Blobs,
    renderer: &dyn PreviewRenderer,
    actor: Actor<'_>,
    new: &ImportTemplate,
) -> Result<TemplateRecord> {
    actor.require_operator()?;
    let path = &new.path;
    let bytes =
        tokio::fs::read(path).await.map_err(|e| AppError::Failed(format!("cannot read {}: {e}", path.display())))?;
    let template = Template::from_json(&bytes).map_err(|e| {
        let key = e.key();
        AppError::Invalid(
            e.errors().into_iter().map(|p| FieldError::new(p.path.clone(), key, p.message.clone())).collect(),
        )
    })?;
    if let Err(problems) = new.limits.check(&template, Quality::Default, &|_| None) {
        let fields =
            problems.iter().map(|p| FieldError::new(p.path.clone(), ErrorKey::LimitExceeded, p.message.clone()));
        return Err(AppError::Invalid(fields.collect()));
    }
    let owner = match &new.owner {
        Some(who) => Some(store.find_user(who).await?.id),
        None if new.public => None,
        None => {
            return Err(AppError::Invalid(vec![FieldError::new(
                "owner",
                ErrorKey::Required,
                "is required unless the template is public",
            )]))
        }
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let local = check_sources(store, &template, dir).await?;

    let id = new.id.clone().unwrap_or_else(TemplateId::generate);
    let prefix = blob_prefix(&id);
    let (files, thumb_key, preview_key) = match store_and_render(blobs, renderer, &template, &local, &prefix).await {
        Ok(stored) => stored,
        Err(e) => {
            remove_prefix(blobs, &prefix).await;
            return Err(e);
        }
    };
    let (canvas, duration) = (&template.canvas, template.duration());
    let json = String::from_utf8(bytes).map_err(|_| AppError::invalid("json", "the template file is not UTF-8"))?;
    let record = NewTemplate {
        id,
        name: template.name.clone(),
        owner_user_id: owner,
        public: new.public,
        category: template.category.clone(),
        tags: template.tags.clone(),
        json,
        duration_ms: (duration * 1000.0).round() as i64,
        quality: Quality::of_canvas(canvas.width, canvas.height),
        blob_prefix: prefix.clone(),
        files,
        thumb_key: Some(thumb_key),
        preview_key: Some(preview_key),
    };
    match store.create_template(&record).await {
        Ok(record) => Ok(record),
        Err(e) => {
            remove_prefix(blobs, &prefix).await;
            Err(e.into())
        }
    }
}

/// A `file` source resolved against `dir`: a relative path with no `..` (and no
/// backslash) naming a regular file.
pub fn local_file(dir: &Path, file: &str) -> std::result::Result<PathBuf, String> {
    let relative = Path::new(file);
    let inside = relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside || file.contains('\\') {
        return Err(format!(
            "{file:?} must be a relative path inside the template's directory (not absolute, no `..`)"
        ));
    }
    let path = dir.join(relative);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(format!("{} is not a file", path.display())),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The local files of the template's `file` sources, after checking every source can be
/// had: files exist below `dir`, assets exist and are converted. Problems name the
/// source's JSON path.
async fn check_sources(store: &impl AssetStore, template: &Template, dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut local = BTreeMap::new();
    let mut problems = Vec::new();
    for (path, source, _) in template.sources_at() {
        match source {
            Source::File { file } => match local_file(dir, file) {
                Ok(found) => {
                    local.insert(file.clone(), found);
                }
                Err(problem) => problems.push(FieldError::new(format!("{path}.file"), ErrorKey::UnknownFile, problem)),
            },
            Source::Asset { asset } => match store.named_asset(asset).await {
                Ok(a) if a.status == AssetStatus::Finished && a.original_key.is_some() => {}
                Ok(a) => problems.push(FieldError::new(
                    format!("{path}.asset"),
                    ErrorKey::AssetNotReady,
                    format!("asset {asset} is {}, not finished", a.status.public()),
                )),
                Err(StoreError::NotFound(_)) => problems.push(FieldError::new(
                    format!("{path}.asset"),
                    ErrorKey::UnknownAsset,
                    format!("no asset {asset}"),
                )),
                Err(e) => return Err(e.into()),
            },
            Source::Url { .. } => {}
        }
    }
    match problems.is_empty() {
        true => Ok(local),
        false => Err(AppError::Invalid(problems)),
    }
}

/// Stores the `file` sources and renders and stores the thumb and preview; returns the
/// file keys by path, the thumb key and the preview key.
async fn store_and_render(
    blobs: &Blobs,
    renderer: &dyn PreviewRenderer,
    template: &Template,
    local: &BTreeMap<String, PathBuf>,
    prefix: &str,
) -> Result<(BTreeMap<String, String>, String, String)> {
    let failed = |what: String| move |e: &dyn std::fmt::Display| AppError::Failed(format!("{what}: {e}"));
    let mut files = BTreeMap::new();
    for (i, (file, path)) in local.iter().enumerate() {
        let key = format!("{prefix}/media/{i}-{}", key_segment(file));
        blobs.put_file(&key, path, content_type_of(file)).await.map_err(|e| failed(format!("storing {file}"))(&e))?;
        files.insert(file.clone(), key);
    }
    let work = tempfile::tempdir().map_err(|e| failed("temporary directory".into())(&e))?;
    let (mp4, jpg) = (work.path().join("preview.mp4"), work.path().join("thumb.jpg"));
    renderer
        .render_preview(template, local, &mp4, &jpg)
        .await
        .map_err(|e| failed("rendering the preview".into())(&e))?;
    let (thumb_key, preview_key) = (format!("{prefix}/thumb.jpg"), format!("{prefix}/preview.mp4"));
    blobs.put_file(&thumb_key, &jpg, "image/jpeg").await.map_err(|e| failed("storing the thumb".into())(&e))?;
    blobs.put_file(&preview_key, &mp4, "video/mp4").await.map_err(|e| failed("storing the preview".into())(&e))?;
    Ok((files, thumb_key, preview_key))
}

async fn remove_prefix(blobs: &Blobs, prefix: &str) {
    if let Err(e) = blobs.delete_prefix(&format!("{prefix}/")).await {
        tracing::warn!(%prefix, error = %e, "files of a failed template import were not removed");
    }
}

/// The file name of `file` as one blob key segment: letters, digits, `-`, `_`, `.`.
fn key_segment(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() {
        "file".into()
    } else {
        safe.into()
    }
}

/// The media type of a placeholder file, from its extension.
fn content_type_of(file: &str) -> &'static str {
    let ext = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "heic" | "heif" => "image/heic",
        "mp4" | "m4v" => "video/mp4",
        "mov" => "video/quicktime",
        "webm" => "video/webm",
        "mkv" => "video/x-matroska",
        "mp3" => "audio/mpeg",
        "m4a" | "aac" => "audio/mp4",
        "wav" => "audio/wav",
        "ogg" | "oga" => "audio/ogg",
        "flac" => "audio/flac",
        _ => "application/octet-stream",
    }
}

/// A template as the caller sees it.
pub struct TemplateView {
    pub record: TemplateRecord,
    pub document: Arc<Template>,
    /// Public addresses of the library assets that are defaults of its variables, by
    /// asset id (empty for an asset deleted since).
    pub asset_addresses: Arc<HashMap<String, String>>,
    /// Whom the template is shared with: for its owner only, empty for everyone else.
    pub shares: Vec<ShareTarget>,
}

impl TemplateView {
    /// The template's variables, their default media resolved to public addresses.
    pub fn variables(&self, blobs: &Blobs) -> Vec<TemplateVariable> {
        self.document.variables(|source| match source {
            Source::File { file } => self.record.files.get(file).map(|key| blobs.public_url(key)).unwrap_or_default(),
            Source::Asset { asset } => self.asset_addresses.get(asset).cloned().unwrap_or_default(),
            Source::Url { url } => url.clone(),
        })
    }
}

impl Farm {
    /// `limit` of the templates `user` may use from `offset` (own, shared with them or
    /// their groups, public), newest first.
    #[tracing::instrument(name = "templates::list", skip_all, fields(user_id = %user))]
    pub async fn templates(&self, user: &UserId, limit: u32, offset: u64) -> Result<Vec<TemplateView>> {
        let records = self.backends.store().visible_templates(user, limit, offset).await?;
        views(&self.backends, &self.catalog, user, records).await
    }

    /// One template `user` may use.
    #[tracing::instrument(name = "templates::get", skip_all, fields(user_id = %user, id = %id))]
    pub async fn template(&self, user: &UserId, id: &TemplateId) -> Result<TemplateView> {
        let record = self.backends.store().visible_template(id, user).await?;
        self.template_view(user, record).await
    }

    /// The view of one template record as `user` sees it.
    pub async fn template_view(&self, user: &UserId, record: TemplateRecord) -> Result<TemplateView> {
        Ok(views(&self.backends, &self.catalog, user, vec![record]).await?.pop().expect("one view per record"))
    }
}

/// The views of `records`; the assets their variables default to are looked up once,
/// whatever number of templates use them.
async fn views(
    backends: &Backends,
    catalog: &Catalog,
    user: &UserId,
    records: Vec<TemplateRecord>,
) -> Result<Vec<TemplateView>> {
    let mut addresses = HashMap::new();
    let mut parts = Vec::with_capacity(records.len());
    for record in records {
        let document = catalog.document(&record)?;
        load_addresses(backends, &document, &mut addresses).await?;
        let shares = if record.owner_user_id.as_ref() == Some(user) {
            backends.store().template_shares(&record.id).await?
        } else {
            Vec::new()
        };
        parts.push((record, document, shares));
    }
    let asset_addresses = Arc::new(addresses);
    Ok(parts
        .into_iter()
        .map(|(record, document, shares)| TemplateView {
            record,
            document,
            asset_addresses: asset_addresses.clone(),
            shares,
        })
        .collect())
}

/// Looks up the assets that are defaults of `template`'s variables and are not in
/// `addresses` yet.
async fn load_addresses(
    backends: &Backends,
    template: &Template,
    addresses: &mut HashMap<String, String>,
) -> Result<()> {
    let layers = template.clips.iter().flat_map(|c| &c.layers).filter(|l| l.variable.is_some());
    for source in layers.filter_map(|l| l.content.source()) {
        let Source::Asset { asset } = source else { continue };
        if addresses.contains_key(asset) {
            continue;
        }
        let address = match backends.store().named_asset(asset).await {
            Ok(a) => a.original_key.map(|k| backends.blobs().public_url(&k)).unwrap_or_default(),
            // The asset was deleted since the import: there is no default to show.
            Err(StoreError::NotFound(_)) => String::new(),
            Err(e) => return Err(e.into()),
        };
        addresses.insert(asset.clone(), address);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_become_safe_key_segments() {
        assert_eq!(key_segment("media/photo.jpg"), "photo.jpg");
        assert_eq!(key_segment("Mein Foto (1).PNG"), "Mein_Foto__1_.PNG");
        assert_eq!(key_segment("..hidden"), "hidden");
        assert_eq!(key_segment("a/"), "file");
        assert_eq!(content_type_of("x/Y.JPG"), "image/jpeg");
        assert_eq!(content_type_of("noext"), "application/octet-stream");
    }

    #[test]
    fn file_sources_stay_inside_the_template_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("media")).unwrap();
        std::fs::write(dir.path().join("media/a.png"), b"x").unwrap();
        assert_eq!(local_file(dir.path(), "media/a.png").unwrap(), dir.path().join("media/a.png"));
        for bad in ["/etc/passwd", "../a.png", "media/../../x", "..\\a.png"] {
            let err = local_file(dir.path(), bad).unwrap_err();
            assert!(err.contains("relative path") && err.contains("no `..`"), "{bad}: {err}");
        }
        assert!(local_file(dir.path(), "media").unwrap_err().contains("is not a file"));
        assert!(local_file(dir.path(), "media/b.png").unwrap_err().contains("cannot read"));
    }
}
