//! Library objects (spec §2.3, §2.4, §4.3, §4.4): start an upload, read, list, delete.

use actix_web::{delete, get, post, web, HttpRequest, HttpResponse};
use reelfarm_app::assets;
use reelfarm_domain::asset::{Asset, AssetKind, AssetStatus, Rendition};
use reelfarm_domain::id::now_ms;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids;
use crate::pagination::PageQuery;
use crate::state::AppState;

/// An asset record (spec §2.3).
#[derive(Debug, Serialize, ToSchema)]
pub struct AssetJson {
    pub id: String,
    pub upload_id: String,
    pub library_object_id: String,
    pub created_at: String,
    /// `created`, `processing`, `finished` or `failed`.
    pub status: String,
    /// Why the conversion failed (only when `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `sprite`, `svg`, `video`, `sound` or `lottie`.
    #[serde(rename = "type")]
    pub kind: String,
    pub assets: Vec<AssetFileJson>,
    pub metadata: MetadataJson,
    pub premium: bool,
}

/// One stored file of an asset.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssetFileJson {
    /// Absolute address of the file, fetchable without a token.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video: Option<Vec<VideoStreamJson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioJson>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImageJson {
    pub width: u32,
    pub height: u32,
    pub format: String,
}

#[derive(Debug, Serialize, ToSchema)]
/// The video stream of a rendition.
pub struct VideoStreamJson {
    pub width: u32,
    pub height: u32,
    pub codec: String,
    /// Bits per second.
    pub bitrate: u64,
    /// Seconds.
    pub duration: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AudioJson {
    pub codec: String,
    pub bitrate: u64,
    pub duration: f64,
    pub format: String,
}

/// Asset metadata (spec §2.4).
#[derive(Debug, Serialize, ToSchema)]
pub struct MetadataJson {
    /// The id to use as an image, video or sound variable value (= `library_object_id`).
    pub id: String,
    pub label: String,
    pub description: String,
    /// Seconds as a decimal string (`"5.000"`); null for images.
    pub duration: Option<String>,
    /// Address of a thumbnail.
    pub thumb: String,
    pub alpha: bool,
    pub tags: Vec<String>,
    #[schema(value_type = Object)]
    pub properties: serde_json::Map<String, serde_json::Value>,
}

/// The object type an upload will probably be, from its file name, until conversion
/// knows for sure.
fn kind_from_name(filename: &str) -> AssetKind {
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "svg" => AssetKind::Svg,
        "json" | "lottie" => AssetKind::Lottie,
        "gif" | "jpeg" | "jpg" | "png" | "webp" | "heic" | "heif" => AssetKind::Sprite,
        "flac" | "m4a" | "mp3" | "wav" | "ogg" | "wma" | "aiff" | "aif" | "opus" => AssetKind::Sound,
        _ => AssetKind::Video,
    }
}

fn file_json(r: &Rendition, kind: AssetKind, state: &AppState) -> AssetFileJson {
    let path = state.backends.blobs().public_url(&r.key);
    let mut file = AssetFileJson { path, image: None, video: None, audio: None };
    let shape = match (r.role.as_str(), kind) {
        ("original", AssetKind::Video) | ("video", _) => "video",
        ("original", AssetKind::Sound) | ("audio", _) => "audio",
        _ => "image",
    };
    let codec = r.codec.clone().unwrap_or_default();
    match shape {
        "video" => {
            file.video = Some(vec![VideoStreamJson {
                width: r.width.unwrap_or(0),
                height: r.height.unwrap_or(0),
                codec,
                bitrate: r.bitrate.unwrap_or(0),
                duration: r.duration.unwrap_or(0.0),
            }])
        }
        "audio" => {
            file.audio = Some(AudioJson {
                codec,
                bitrate: r.bitrate.unwrap_or(0),
                duration: r.duration.unwrap_or(0.0),
                format: r.format.clone(),
            })
        }
        _ => {
            file.image =
                Some(ImageJson { width: r.width.unwrap_or(0), height: r.height.unwrap_or(0), format: r.format.clone() })
        }
    }
    file
}

impl AssetJson {
    pub fn new(asset: &Asset, state: &AppState) -> AssetJson {
        let blobs = state.backends.blobs();
        let kind = asset.kind.unwrap_or_else(|| kind_from_name(&asset.filename));
        AssetJson {
            id: asset.id.to_string(),
            upload_id: asset.upload_id.clone(),
            library_object_id: asset.id.to_string(),
            created_at: reelfarm_domain::id::iso8601(asset.created_at),
            status: asset.status.public().into(),
            error: asset.error.clone().filter(|_| asset.status == AssetStatus::Failed),
            kind: kind.as_str().into(),
            assets: asset.renditions.iter().filter(|r| r.role != "thumb").map(|r| file_json(r, kind, state)).collect(),
            metadata: MetadataJson {
                id: asset.id.to_string(),
                label: asset.label.clone(),
                description: asset.description.clone(),
                // Video, sound, Lottie and animated pictures have one.
                duration: asset.duration_ms.map(|ms| format!("{}.{:03}", ms / 1000, ms % 1000)),
                thumb: asset
                    .thumb_key
                    .as_deref()
                    .map_or_else(|| state.static_url("library.svg"), |k| blobs.public_url(k)),
                alpha: asset.alpha,
                tags: asset.tags.clone(),
                properties: asset.properties.clone(),
            },
            premium: asset.premium,
        }
    }
}

/// Response of `POST /api2/v1/objects`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AddObjectResponse {
    /// Signed address to PUT the file to; valid 24 h (configurable), one object.
    pub url: String,
    pub data: AssetJson,
}

/// Form of `POST /api2/v1/objects`; its OpenAPI schema (`AddObjectBody`) is derived from
/// it.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = AddObjectBody)]
pub struct AddObjectForm {
    #[schema(schema_with = filename, required = true)]
    pub filename: Option<String>,
    /// Library to add to (one the caller may edit); the personal library when absent or empty
    #[schema(value_type = String, required = false)]
    pub library_id: Option<String>,
}

fn filename() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    super::bodies::text_field(reelfarm_app::assets::MAX_FILENAME_CHARS, "Name of the file")
}

/// Starts an upload: records the object and returns the signed address to PUT it to.
#[utoipa::path(
    tag = "objects",
    request_body(content = AddObjectForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, body = AddObjectResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[post("/api2/v1/objects")]
pub async fn add(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let form: AddObjectForm = crate::form::read(&req, payload).await?;
    let library_id = match form.library_id.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(id) => Some(ids::in_field("library_id", id)?),
        None => None,
    };
    let store = state.backends.store();
    let asset = assets::add(store, &caller.user.id, form.filename.as_deref(), library_id.as_ref()).await?;
    let url = crate::signing::upload_url(&state.config, &asset.id, now_ms());
    Ok(HttpResponse::Ok().json(AddObjectResponse { url, data: AssetJson::new(&asset, &state) }))
}

/// One asset record; poll it until `status` is `finished` or `failed`.
#[utoipa::path(
    tag = "objects",
    params(("id" = String, Path)),
    responses((status = 200, body = AssetJson), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/api2/v1/objects/{id}")]
pub async fn get(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let asset = assets::get(state.backends.store(), &caller.user.id, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::Ok().json(AssetJson::new(&asset, &state)))
}

/// Removes an asset and every stored file of it.
#[utoipa::path(
    tag = "objects",
    params(("id" = String, Path)),
    responses(
        (status = 200, description = "Deleted"),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[delete("/api2/v1/objects/{id}")]
pub async fn remove(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = ids::in_path(&id)?;
    let asset = assets::remove(state.backends.store(), state.backends.blobs(), &caller.user.id, &id).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"id": asset.id, "deleted": true})))
}

/// Assets of a library (spec §4.3), newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssetList {
    pub assets: Vec<AssetJson>,
}

/// Lists a library's assets, newest first.
#[utoipa::path(
    tag = "objects",
    params(("id" = String, Path, description = "Library id"), PageQuery),
    responses(
        (status = 200, body = AssetList),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/api2/v1/libraries/{id}/assets")]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (id, page) = (ids::in_path(&id)?, query.parse()?);
    let assets = assets::list(state.backends.store(), &caller.user.id, &id, None, page.limit, page.offset()).await?;
    let assets = assets.iter().map(|a| AssetJson::new(a, &state)).collect();
    Ok(HttpResponse::Ok().json(AssetList { assets }))
}
