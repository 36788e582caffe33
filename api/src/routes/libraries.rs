//! Libraries (spec §2.1, §2.2, §4.1, §4.2) and the personal library.

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use reelfarm_domain::library::{Library, LibraryKind, LibraryOwner};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use reelfarm_app::libraries;

/// The object types a library holds.
const SUPPORTED_TYPES: [&str; 6] = ["video", "image", "sprite", "svg", "sound", "lottie"];

/// Libraries of one kind (spec §2.1).
#[derive(Debug, Serialize, ToSchema)]
pub struct LibraryGroup {
    pub group_name: String,
    /// `personal`, `group`, `public` or `stock`.
    #[serde(rename = "type")]
    pub kind: String,
    pub libraries: Vec<LibraryJson>,
}

/// A library (spec §2.2).
#[derive(Debug, Serialize, ToSchema)]
pub struct LibraryJson {
    pub id: String,
    pub name: String,
    pub searchable: bool,
    pub external: bool,
    pub has_categories: bool,
    pub base_url: Option<String>,
    pub locked: bool,
    pub editable: bool,
    /// Address of a thumbnail image.
    pub thumbnail: String,
    pub supported_object_types: Vec<String>,
    pub default_type: String,
    pub predefined_searches: Vec<PredefinedSearch>,
    pub sort_order: i64,
    pub premium: bool,
    pub scope: Option<String>,
    /// `personal`, `group`, `public` or `stock`.
    #[serde(rename = "type")]
    pub kind: String,
    pub shares: Vec<Share>,
}

/// A saved search offered by the library: one per object type it holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct PredefinedSearch {
    pub label: String,
    pub query: Vec<String>,
    pub default_type: String,
    /// Nested searches (none so far).
    #[schema(value_type = Vec<Object>)]
    pub children: Vec<serde_json::Value>,
    pub order: i64,
    pub has_business_label: bool,
}

/// Who else the library is shared with: the group of a group library.
#[derive(Debug, Serialize, ToSchema)]
pub struct Share {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub guid: String,
}

impl LibraryJson {
    pub fn new(library: &Library, editable: bool, state: &AppState) -> LibraryJson {
        let searches = [("Videos", "video"), ("Images", "image"), ("Sounds", "sound")];
        let shares = match &library.owner {
            LibraryOwner::Group(group) => {
                vec![Share { id: group.to_string(), kind: "group".into(), guid: group.to_string() }]
            }
            _ => Vec::new(),
        };
        LibraryJson {
            id: library.id.to_string(),
            name: library.name.clone(),
            searchable: true,
            external: false,
            has_categories: false,
            base_url: None,
            locked: !editable,
            editable,
            thumbnail: state.static_url("library.svg"),
            supported_object_types: SUPPORTED_TYPES.iter().map(|s| s.to_string()).collect(),
            default_type: "video".into(),
            predefined_searches: searches
                .iter()
                .enumerate()
                .map(|(order, (label, kind))| PredefinedSearch {
                    label: label.to_string(),
                    query: vec![format!("type:{kind}")],
                    default_type: kind.to_string(),
                    children: Vec::new(),
                    order: order as i64,
                    has_business_label: false,
                })
                .collect(),
            sort_order: library.sort_order,
            premium: library.kind == LibraryKind::Stock,
            scope: None,
            kind: library.kind.as_str().into(),
            shares,
        }
    }
}

/// The caller's libraries, grouped: personal first, then each group's, public, stock.
#[utoipa::path(
    tag = "libraries",
    responses(
        (status = 200, body = Vec<LibraryGroup>),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/api2/v1/users/me/libraries")]
pub async fn list(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let sections = libraries::list(state.backends.store(), &caller.user.id).await?;
    let groups: Vec<LibraryGroup> = sections
        .into_iter()
        .map(|section| LibraryGroup {
            group_name: section.name,
            kind: section.kind.as_str().into(),
            libraries: section.libraries.iter().map(|(l, editable)| LibraryJson::new(l, *editable, &state)).collect(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(groups))
}

/// Form of `POST /api2/v1/users/me/libraries`; its OpenAPI schema (`CreateLibraryBody`)
/// is derived from it.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = CreateLibraryBody)]
pub struct CreateLibraryForm {
    #[schema(schema_with = library_name, required = true)]
    pub name: Option<String>,
}

fn library_name() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    super::bodies::text_field(reelfarm_app::accounts::MAX_NAME_CHARS, "Name of the library")
}

/// Creates a personal library.
#[utoipa::path(
    tag = "libraries",
    request_body(content = CreateLibraryForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, body = LibraryJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[post("/api2/v1/users/me/libraries")]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let form: CreateLibraryForm = crate::form::read(&req, payload).await?;
    let library = libraries::create(state.backends.store(), &caller.user.id, form.name.as_deref()).await?;
    Ok(HttpResponse::Ok().json(LibraryJson::new(&library, true, &state)))
}

/// The caller's personal library, created on first use.
#[utoipa::path(
    tag = "libraries",
    responses(
        (status = 200, body = LibraryJson),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/api2/v1/user/me/personal-library")]
pub async fn personal(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let library = libraries::personal(state.backends.store(), &caller.user.id).await?;
    Ok(HttpResponse::Ok().json(LibraryJson::new(&library, true, &state)))
}
