//! Libraries and their objects: the list of libraries, a library's objects (searched,
//! paged, uploaded to), an object's tile while it converts, and an object's page with
//! every rendition, where it is renamed or deleted.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use askama::Template;
use reelfarm_app::{assets, AppError};
use reelfarm_domain::asset::{Asset, AssetKind, AssetStatus};
use reelfarm_domain::id::{iso8601, now_ms, AssetId, LibraryId};
use serde::Deserialize;
use serde_json::json;

use super::pages::CsrfForm;
use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::error::ApiError;
use crate::ids;
use crate::pagination::Page;
use crate::state::AppState;

/// Objects per page of a library.
const ASSETS_PER_PAGE: u32 = 48;

type Answer = Result<HttpResponse, ConsoleError>;

/// A library as listed.
struct LibraryCard {
    id: String,
    name: String,
    kind: &'static str,
    editable: bool,
}

struct SectionView {
    title: String,
    libraries: Vec<LibraryCard>,
}

#[derive(Template)]
#[template(path = "console/libraries.html")]
struct LibrariesPage {
    chrome: Chrome,
    sections: Vec<SectionView>,
}

#[get("/libraries")]
pub async fn libraries_page(state: web::Data<AppState>, visitor: SignedIn) -> Answer {
    let sections = reelfarm_app::libraries::list(state.backends.store(), &visitor.session.user.id).await?;
    let sections = sections
        .into_iter()
        .map(|s| SectionView {
            title: s.name,
            libraries: s
                .libraries
                .into_iter()
                .map(|(l, editable)| LibraryCard {
                    id: l.id.to_string(),
                    name: l.name,
                    kind: l.kind.as_str(),
                    editable,
                })
                .collect(),
        })
        .collect();
    Ok(html(StatusCode::OK, &LibrariesPage { chrome: visitor.chrome("libraries"), sections }))
}

/// An object as its tile shows it.
struct AssetTile {
    id: String,
    /// Still arriving or converting: the tile polls for its next state.
    pending: bool,
    error: Option<String>,
    label: String,
    kind: &'static str,
    status: &'static str,
    size: String,
    duration: Option<String>,
    thumb: Option<String>,
}

impl AssetTile {
    fn new(asset: &Asset, state: &AppState) -> AssetTile {
        AssetTile {
            id: asset.id.to_string(),
            pending: matches!(asset.status, AssetStatus::Uploading | AssetStatus::Processing),
            error: asset.error.clone().filter(|_| asset.status == AssetStatus::Failed),
            label: asset.label.clone(),
            kind: asset.kind.map_or("file", |k| k.as_str()),
            status: asset.status.public(),
            size: asset.size.map(readable_size).unwrap_or_else(|| "—".into()),
            duration: asset.duration_ms.filter(|ms| *ms > 0).map(readable_duration),
            thumb: asset.thumb_key.as_deref().map(|k| state.backends.blobs().public_url(k)),
        }
    }
}

#[derive(Template)]
#[template(path = "console/library.html")]
struct LibraryPage {
    chrome: Chrome,
    id: String,
    editable: bool,
    name: String,
    assets: Vec<AssetTile>,
    /// What the labels were searched for (empty: everything).
    search: String,
    page: u32,
    more: bool,
}

impl LibraryPage {
    /// The query of this listing at page `page`.
    fn at(&self, page: u32) -> String {
        let mut pairs = vec![("page", page.to_string())];
        if !self.search.is_empty() {
            pairs.insert(0, ("q", self.search.clone()));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

#[derive(Deserialize)]
pub struct LibraryQuery {
    q: Option<String>,
    page: Option<u32>,
}

#[get("/libraries/{id}")]
pub async fn library_page(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    query: web::Query<LibraryQuery>,
) -> Answer {
    let id = ids::in_path::<LibraryId>(&id)?;
    let caller = visitor.caller();
    let (library, editable) = reelfarm_app::libraries::visible(state.backends.store(), &caller.user.id, &id).await?;
    let page = Page { limit: ASSETS_PER_PAGE, page: query.page.unwrap_or(1).max(1) };
    let search = query.q.as_deref().map(str::trim).unwrap_or_default().to_string();
    let store = state.backends.store();
    let assets = assets::list(store, &caller.user.id, &id, Some(&search), page.limit, page.offset()).await?;
    let more = assets.len() == ASSETS_PER_PAGE as usize;
    let assets = assets.iter().map(|a| AssetTile::new(a, &state)).collect();
    let chrome = visitor.chrome("libraries");
    let (id, name, page) = (id.to_string(), library.name, page.page);
    Ok(html(StatusCode::OK, &LibraryPage { chrome, id, editable, name, assets, search, page, more }))
}

#[derive(Deserialize)]
pub struct NewObjectForm {
    filename: Option<String>,
}

/// Records an object for the page's uploader: JSON (its id and signed upload address,
/// or the API's error body) for the script that then PUTs the file.
#[post("/libraries/{id}/objects")]
pub async fn add_object(
    req: HttpRequest,
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<NewObjectForm>,
) -> Answer {
    visitor.check_csrf_header(&req)?;
    let id = ids::in_path::<LibraryId>(&id)?;
    let user = &visitor.session.user.id;
    match assets::add(state.backends.store(), user, form.filename.as_deref(), Some(&id)).await {
        Ok(asset) => {
            let upload_url = crate::signing::upload_url(&state.config, &asset.id, now_ms());
            Ok(HttpResponse::Created().json(json!({"id": asset.id, "upload_url": upload_url})))
        }
        Err(e) => Ok(ApiError::from(e).error_response_owned()),
    }
}

#[derive(Template)]
#[template(path = "console/tile.html")]
struct TileFragment {
    asset: AssetTile,
}

/// One object's tile (polled while it arrives and converts).
#[get("/objects/{id}/tile")]
pub async fn object_tile(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    let id = ids::in_path::<AssetId>(&id)?;
    let asset = assets::get(state.backends.store(), &visitor.session.user.id, &id).await?;
    Ok(html(StatusCode::OK, &TileFragment { asset: AssetTile::new(&asset, &state) }))
}

/// A stored file of an object, as its page lists it.
struct FileRow {
    role: String,
    /// `video`, `audio` or `image`: how the page shows it.
    shows_as: &'static str,
    url: String,
    format: String,
    dimensions: Option<String>,
    codec: String,
    bitrate: Option<String>,
    duration: Option<String>,
    size: String,
}

#[derive(Template)]
#[template(path = "console/object.html")]
struct ObjectPage {
    chrome: Chrome,
    tile: AssetTile,
    library_id: String,
    filename: String,
    created: String,
    editable: bool,
    files: Vec<FileRow>,
    problem: Option<String>,
}

/// The page of object `id`, showing `problem` (of a rename) when there is one.
async fn object(
    state: &AppState,
    visitor: &SignedIn,
    id: &str,
    problem: Option<String>,
) -> Result<ObjectPage, ConsoleError> {
    let id = ids::in_path::<AssetId>(id)?;
    let (asset, editable) = assets::visible(state.backends.store(), &visitor.session.user.id, &id).await?;
    let kind = asset.kind;
    let files = asset
        .renditions
        .iter()
        .map(|r| FileRow {
            role: r.role.clone(),
            shows_as: match (r.role.as_str(), kind) {
                ("video", _) | ("original", Some(AssetKind::Video)) => "video",
                ("audio", _) | ("original", Some(AssetKind::Sound)) => "audio",
                // An animation file: the thumbnail shows it.
                ("original", Some(AssetKind::Lottie)) => "file",
                _ => "image",
            },
            url: state.backends.blobs().public_url(&r.key),
            format: r.format.clone(),
            dimensions: r.width.zip(r.height).map(|(w, h)| format!("{w}×{h}")),
            codec: r.codec.clone().unwrap_or_default(),
            bitrate: r.bitrate.filter(|b| *b > 0).map(|b| format!("{} kbit/s", b / 1000)),
            duration: r.duration.map(|d| readable_duration((d * 1000.0) as i64)),
            size: readable_size(r.size),
        })
        .collect();
    Ok(ObjectPage {
        chrome: visitor.chrome("libraries"),
        tile: AssetTile::new(&asset, state),
        library_id: asset.library_id.to_string(),
        filename: asset.filename.clone(),
        created: iso8601(asset.created_at),
        editable,
        files,
        problem,
    })
}

#[get("/objects/{id}")]
pub async fn object_page(state: web::Data<AppState>, visitor: SignedIn, id: web::Path<String>) -> Answer {
    Ok(html(StatusCode::OK, &object(&state, &visitor, &id, None).await?))
}

#[derive(Deserialize)]
pub struct RenameForm {
    csrf: String,
    label: Option<String>,
}

#[post("/objects/{id}/rename")]
pub async fn rename_object(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<RenameForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let asset = ids::in_path::<AssetId>(&id)?;
    match assets::rename(state.backends.store(), &visitor.session.user.id, &asset, form.label.as_deref()).await {
        Ok(_) => Ok(see_other(&format!("/console/objects/{asset}"))),
        Err(AppError::Invalid(errors)) => {
            let problem = errors.first().map(|f| format!("The name {}", f.message));
            Ok(html(StatusCode::BAD_REQUEST, &object(&state, &visitor, &id, problem).await?))
        }
        Err(e) => Err(e.into()),
    }
}

#[post("/objects/{id}/delete")]
pub async fn delete_object(
    state: web::Data<AppState>,
    visitor: SignedIn,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let id = ids::in_path::<AssetId>(&id)?;
    let user = &visitor.session.user.id;
    let removed = assets::remove(state.backends.store(), state.backends.blobs(), user, &id).await?;
    Ok(see_other(&format!("/console/libraries/{}", removed.library_id)))
}

/// `1.4 MB`, `312 KB`, `87 B` (decimal units, as file managers show them).
pub(super) fn readable_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{} KB", b / 1_000),
        b => format!("{b} B"),
    }
}

/// `1:05`, `12:00`, `1:02:03`.
fn readable_duration(ms: i64) -> String {
    let seconds = (ms + 500) / 1000;
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(readable_size(87), "87 B");
        assert_eq!(readable_size(312_400), "312 KB");
        assert_eq!(readable_size(1_400_000), "1.4 MB");
        assert_eq!(readable_size(2_500_000_000), "2.5 GB");
        assert_eq!(readable_duration(65_000), "1:05");
        assert_eq!(readable_duration(719_600), "12:00");
        assert_eq!(readable_duration(3_723_000), "1:02:03");
    }
}
