//! A fake of the Google services the upload channels use, on loopback: the OAuth 2.0
//! consent page and token endpoint (authorization code with PKCE, refresh token), YouTube's resumable `videos.insert` and `playlistItems.insert`, and
//! Drive's resumable `files.create`. It checks what Google checks (credentials, bearer
//! tokens, the upload headers and metadata, chunk ranges and sizes), answers as Google
//! does (`308` + `Range`, the resource with an `id` at the end), records what it
//! received, and can be told to fail.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use actix_web::http::StatusCode;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde::Deserialize;
use serde_json::{json, Value};

mod oauth;

/// The OAuth client and refresh token the fake accepts.
pub const CLIENT_ID: &str = "fake-client.apps.googleusercontent.com";
pub const CLIENT_SECRET: &str = "fake-client-secret";
pub const REFRESH_TOKEN: &str = "1//fake-refresh-token";
/// A playlist and a Drive folder that exist.
pub const PLAYLIST_ID: &str = "PLfakeplaylist";
pub const FOLDER_ID: &str = "fakefolder123";

/// Google's chunk unit.
const UNIT: u64 = 256 * 1024;

/// What a chunk PUT meets instead of the normal answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Keeps nothing and answers this status.
    Status(u16),
    /// Keeps the first `keep` bytes of the chunk, then drops the connection unanswered.
    Drop { keep: u64 },
    /// The access tokens expire just before the chunk arrives: it is refused with 401.
    ExpireTokens,
}

/// Which API a session or upload belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Video,
    File,
}

/// A completed upload.
#[derive(Debug, Clone)]
pub struct Upload {
    pub id: String,
    pub kind: Kind,
    /// The metadata the session was opened with.
    pub metadata: Value,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// Requests received, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub token_requests: u32,
    pub sessions_opened: u32,
    /// PUTs that carried bytes.
    pub chunk_puts: u32,
    /// Empty `bytes */total` PUTs.
    pub status_queries: u32,
    pub playlist_inserts: u32,
    /// Codes exchanged for tokens.
    pub codes_exchanged: u32,
}

/// A code the consent page gave, awaiting its exchange.
pub(super) struct Grant {
    redirect_uri: String,
    challenge: String,
    scope: String,
}

struct Session {
    kind: Kind,
    metadata: Value,
    content_type: String,
    total: u64,
    received: Vec<u8>,
    done: Option<String>,
}

#[derive(Default)]
struct State {
    access_tokens: HashSet<String>,
    grants: HashMap<String, Grant>,
    refresh_revoked: bool,
    sessions: HashMap<String, Session>,
    uploads: Vec<Upload>,
    playlist_items: Vec<(String, String)>,
    counts: Counts,
    /// Faults by the number of the chunk PUT they hit (1 = the first).
    faults: HashMap<u32, Fault>,
    /// Every session PUT answers 503 while set.
    outage: bool,
    /// `Content-Range` starts of the chunks received, in order.
    chunk_starts: Vec<u64>,
    next_id: u64,
}

impl State {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{:08}{}", self.next_id, uuid::Uuid::new_v4().simple())
    }
}

/// A connection's socket, to drop it from a handler.
struct Conn(socket2::Socket);

/// The running fake; stopped when dropped.
pub struct FakeGoogle {
    /// `http://127.0.0.1:PORT`: `REELFARM_GOOGLE_API_URL`.
    pub address: String,
    state: Arc<Mutex<State>>,
    handle: actix_web::dev::ServerHandle,
}

impl FakeGoogle {
    pub async fn start() -> FakeGoogle {
        let state = Arc::new(Mutex::new(State::default()));
        let data = web::Data::from(state.clone());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let address = format!("http://127.0.0.1:{port}");
        let base = web::Data::new(address.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(base.clone())
                .app_data(web::PayloadConfig::new(64 << 20))
                .route("/token", web::post().to(oauth::token))
                .route("/auth", web::get().to(oauth::consent_page))
                .route("/auth/decide", web::get().to(oauth::decide))
                .route("/upload/youtube/v3/videos", web::post().to(open_video))
                .route("/upload/youtube/v3/videos", web::put().to(session_put))
                .route("/upload/drive/v3/files", web::post().to(open_file))
                .route("/upload/drive/v3/files", web::put().to(session_put))
                .route("/youtube/v3/playlistItems", web::post().to(playlist_insert))
        })
        .on_connect(|conn, ext| {
            if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                if let Ok(socket) = socket2::SockRef::from(tcp).try_clone() {
                    ext.insert(Conn(socket));
                }
            }
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        FakeGoogle { address, state, handle }
    }

    /// `REELFARM_GOOGLE_AUTH_URL`: the consent page.
    pub fn auth_url(&self) -> String {
        format!("{}/auth", self.address)
    }

    /// `REELFARM_GOOGLE_OAUTH_URL`.
    pub fn oauth_url(&self) -> String {
        format!("{}/token", self.address)
    }

    /// Makes the `n`th chunk PUT from now on (1 = the next) meet `fault`, once.
    pub fn fail_chunk(&self, n: u32, fault: Fault) {
        let mut state = self.state.lock().unwrap();
        let at = state.counts.chunk_puts + n;
        state.faults.insert(at, fault);
    }

    /// While on, every session PUT (chunks and status queries) answers 503.
    pub fn set_outage(&self, on: bool) {
        self.state.lock().unwrap().outage = on;
    }

    /// Every access token issued so far stops working (they expired).
    pub fn expire_access_tokens(&self) {
        self.state.lock().unwrap().access_tokens.clear();
    }

    /// The refresh token is revoked: the token endpoint answers `invalid_grant`.
    pub fn revoke_refresh_token(&self) {
        self.state.lock().unwrap().refresh_revoked = true;
    }

    /// Every open upload session expires.
    pub fn expire_sessions(&self) {
        self.state.lock().unwrap().sessions.retain(|_, s| s.done.is_some());
    }

    pub fn counts(&self) -> Counts {
        self.state.lock().unwrap().counts.clone()
    }

    /// Completed uploads, in order.
    pub fn uploads(&self) -> Vec<Upload> {
        self.state.lock().unwrap().uploads.clone()
    }

    /// `(playlist id, video id)` of every playlist item inserted.
    pub fn playlist_items(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().playlist_items.clone()
    }

    /// Where each received chunk started, in order.
    pub fn chunk_starts(&self) -> Vec<u64> {
        self.state.lock().unwrap().chunk_starts.clone()
    }

    /// Bytes each open session holds so far.
    pub fn session_progress(&self) -> Vec<u64> {
        let state = self.state.lock().unwrap();
        state.sessions.values().filter(|s| s.done.is_none()).map(|s| s.received.len() as u64).collect()
    }
}

impl Drop for FakeGoogle {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}

type Shared = web::Data<Mutex<State>>;

/// Google's error body.
fn google_error(status: u16, reason: &str, message: &str) -> HttpResponse {
    HttpResponse::build(StatusCode::from_u16(status).unwrap()).json(json!({
        "error": {
            "code": status,
            "message": message,
            "errors": [{ "message": message, "domain": "global", "reason": reason }],
        }
    }))
}

/// Checks `Authorization: Bearer` (required or, on session PUTs, optional); the refusal
/// when it does not pass.
fn unauthorized(req: &HttpRequest, state: &State, required: bool) -> Option<HttpResponse> {
    let header = req.headers().get("authorization").and_then(|v| v.to_str().ok());
    let valid = match header {
        None => !required,
        Some(h) => h.strip_prefix("Bearer ").is_some_and(|t| state.access_tokens.contains(t)),
    };
    (!valid).then(|| google_error(401, "authError", "Request had invalid authentication credentials."))
}

/// The upload headers of a session's opening request: `(content type, length)`.
fn upload_headers(req: &HttpRequest) -> Result<(String, u64), Box<HttpResponse>> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let json_body = header("content-type").is_some_and(|t| t.starts_with("application/json"));
    if !json_body {
        return Err(Box::new(google_error(400, "badContent", "The metadata must be application/json.")));
    }
    let content_type = header("x-upload-content-type").unwrap_or_default();
    if !(content_type.starts_with("video/") || content_type == "application/octet-stream") {
        return Err(Box::new(google_error(400, "badContent", "Media type is not supported.")));
    }
    let length = header("x-upload-content-length").and_then(|l| l.parse().ok());
    let Some(length) = length else {
        return Err(Box::new(google_error(400, "invalid", "X-Upload-Content-Length is required.")));
    };
    Ok((content_type, length))
}

/// Opens a session and answers its URI in `Location`.
fn open(state: &mut State, base: &str, path: &str, kind: Kind, metadata: Value, upload: (String, u64)) -> HttpResponse {
    state.counts.sessions_opened += 1;
    let id = state.id("upload");
    let (content_type, total) = upload;
    state
        .sessions
        .insert(id.clone(), Session { kind, metadata, content_type, total, received: Vec::new(), done: None });
    HttpResponse::Ok().insert_header(("location", format!("{base}{path}?uploadType=resumable&upload_id={id}"))).finish()
}

#[derive(Deserialize)]
struct OpenQuery {
    #[serde(rename = "uploadType")]
    upload_type: Option<String>,
    part: Option<String>,
}

async fn open_video(
    req: HttpRequest,
    query: web::Query<OpenQuery>,
    body: web::Bytes,
    state: Shared,
    base: web::Data<String>,
) -> HttpResponse {
    let mut state = state.lock().unwrap();
    if let Some(res) = unauthorized(&req, &state, true) {
        return res;
    }
    if query.upload_type.as_deref() != Some("resumable") {
        return google_error(400, "invalid", "uploadType must be resumable");
    }
    let parts: Vec<&str> = query.part.as_deref().unwrap_or_default().split(',').collect();
    if !parts.contains(&"snippet") || !parts.contains(&"status") {
        return google_error(400, "invalidPart", "part must name snippet and status");
    }
    let upload = match upload_headers(&req) {
        Ok(u) => u,
        Err(res) => return *res,
    };
    let Ok(metadata) = serde_json::from_slice::<Value>(&body) else {
        return google_error(400, "parseError", "Parse Error");
    };
    let title = metadata.pointer("/snippet/title").and_then(Value::as_str).unwrap_or_default();
    if title.trim().is_empty() {
        return google_error(400, "invalidTitle", "The request metadata specifies an invalid or empty video title.");
    }
    if title.chars().count() > 100 || title.contains(['<', '>']) {
        return google_error(400, "invalidTitle", "The request metadata specifies an invalid video title.");
    }
    let description = metadata.pointer("/snippet/description").and_then(Value::as_str).unwrap_or_default();
    if description.len() > 5000 || description.contains(['<', '>']) {
        return google_error(400, "invalidDescription", "The request metadata specifies an invalid video description.");
    }
    let privacy = metadata.pointer("/status/privacyStatus").and_then(Value::as_str);
    if !matches!(privacy, Some("private" | "public" | "unlisted")) {
        return google_error(400, "invalidVideoMetadata", "The request metadata is invalid.");
    }
    open(&mut state, &base, "/upload/youtube/v3/videos", Kind::Video, metadata, upload)
}

async fn open_file(
    req: HttpRequest,
    query: web::Query<OpenQuery>,
    body: web::Bytes,
    state: Shared,
    base: web::Data<String>,
) -> HttpResponse {
    let mut state = state.lock().unwrap();
    if let Some(res) = unauthorized(&req, &state, true) {
        return res;
    }
    if query.upload_type.as_deref() != Some("resumable") {
        return google_error(400, "invalid", "uploadType must be resumable");
    }
    let upload = match upload_headers(&req) {
        Ok(u) => u,
        Err(res) => return *res,
    };
    let Ok(metadata) = serde_json::from_slice::<Value>(&body) else {
        return google_error(400, "parseError", "Parse Error");
    };
    if metadata.get("name").and_then(Value::as_str).is_none_or(|n| n.is_empty()) {
        return google_error(400, "required", "A file name is required.");
    }
    let parents: Vec<&str> =
        metadata.get("parents").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    if let Some(missing) = parents.iter().find(|p| **p != FOLDER_ID) {
        return google_error(404, "notFound", &format!("File not found: {missing}."));
    }
    open(&mut state, &base, "/upload/drive/v3/files", Kind::File, metadata, upload)
}

#[derive(Deserialize)]
struct SessionQuery {
    upload_id: String,
}

/// A `Content-Range` of a session PUT: `bytes */total` (`None`) or `bytes a-b/total`.
fn content_range(req: &HttpRequest) -> Option<(Option<(u64, u64)>, u64)> {
    let value = req.headers().get("content-range")?.to_str().ok()?;
    let (range, total) = value.strip_prefix("bytes ")?.split_once('/')?;
    let total = total.parse().ok()?;
    if range == "*" {
        return Some((None, total));
    }
    let (a, b) = range.split_once('-')?;
    Some((Some((a.parse().ok()?, b.parse().ok()?)), total))
}

/// `308` with the `Range` the session holds (none when it holds nothing).
fn resume_incomplete(held: u64) -> HttpResponse {
    let mut res = HttpResponse::build(StatusCode::PERMANENT_REDIRECT);
    res.reason("Resume Incomplete");
    if held > 0 {
        res.insert_header(("range", format!("bytes=0-{}", held - 1)));
    }
    res.finish()
}

/// The completed upload's resource.
fn resource(upload: &Upload) -> HttpResponse {
    match upload.kind {
        Kind::Video => HttpResponse::Ok().json(json!({
            "kind": "youtube#video",
            "id": upload.id,
            "snippet": upload.metadata["snippet"],
            "status": { "uploadStatus": "uploaded", "privacyStatus": upload.metadata["status"]["privacyStatus"] },
        })),
        Kind::File => HttpResponse::Ok().json(json!({
            "kind": "drive#file",
            "id": upload.id,
            "name": upload.metadata["name"],
            "mimeType": upload.metadata["mimeType"],
        })),
    }
}

async fn session_put(
    req: HttpRequest,
    query: web::Query<SessionQuery>,
    body: web::Bytes,
    state: Shared,
) -> HttpResponse {
    let mut guard = state.lock().unwrap();
    let state = &mut *guard;
    if !body.is_empty() {
        state.counts.chunk_puts += 1;
        let number = state.counts.chunk_puts;
        if state.faults.get(&number) == Some(&Fault::ExpireTokens) {
            state.faults.remove(&number);
            state.access_tokens.clear();
        }
    }
    if let Some(res) = unauthorized(&req, state, false) {
        return res;
    }
    if state.outage {
        return google_error(503, "backendError", "Backend Error");
    }
    let Some((range, total)) = content_range(&req) else {
        return google_error(400, "badRequest", "Content-Range is required.");
    };
    let Some(session) = state.sessions.get_mut(&query.upload_id) else {
        return google_error(404, "notFound", "The upload session was not found or has expired.");
    };
    if let Some(id) = &session.done {
        let id = id.clone();
        let upload = state.uploads.iter().find(|u| u.id == id).unwrap();
        return resource(upload);
    }
    if total != session.total {
        return google_error(400, "badRequest", "The Content-Range total does not match X-Upload-Content-Length.");
    }
    let Some((start, end)) = range else {
        if !body.is_empty() {
            return google_error(400, "badRequest", "A status query has no body.");
        }
        state.counts.status_queries += 1;
        return resume_incomplete(session.received.len() as u64);
    };
    let held = session.received.len() as u64;
    if end < start || end >= total || body.len() as u64 != end - start + 1 || start > held {
        return google_error(400, "badRequest", "The Content-Range does not match the body or the bytes held.");
    }
    if end + 1 < total && !(body.len() as u64).is_multiple_of(UNIT) {
        return google_error(400, "badRequest", "Chunks but the last must be a multiple of 256 KiB.");
    }
    state.chunk_starts.push(start);
    let number = state.counts.chunk_puts;
    let session = state.sessions.get_mut(&query.upload_id).unwrap();
    // Bytes before `held` were received already.
    let new = &body[(held - start) as usize..];
    match state.faults.remove(&number) {
        Some(Fault::Status(status)) => return google_error(status, "backendError", "Backend Error"),
        Some(Fault::Drop { keep }) => {
            let keep = (keep.saturating_sub(held - start) as usize).min(new.len());
            session.received.extend_from_slice(&new[..keep]);
            if let Some(Conn(socket)) = req.conn_data::<Conn>() {
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
            // Never reaches the client when the drop worked; fails the upload if not.
            return google_error(400, "fakeDropFailed", "the fake could not drop the connection");
        }
        Some(Fault::ExpireTokens) | None => {}
    }
    session.received.extend_from_slice(new);
    if (session.received.len() as u64) < total {
        return resume_incomplete(session.received.len() as u64);
    }
    let prefix = if session.kind == Kind::Video { "v" } else { "f" };
    let upload = Upload {
        id: String::new(),
        kind: session.kind,
        metadata: session.metadata.clone(),
        content_type: session.content_type.clone(),
        bytes: std::mem::take(&mut session.received),
    };
    let id = state.id(prefix);
    state.sessions.get_mut(&query.upload_id).unwrap().done = Some(id.clone());
    state.uploads.push(Upload { id, ..upload });
    resource(state.uploads.last().unwrap())
}

async fn playlist_insert(req: HttpRequest, body: web::Bytes, state: Shared) -> HttpResponse {
    let mut state = state.lock().unwrap();
    if let Some(res) = unauthorized(&req, &state, true) {
        return res;
    }
    if req.query_string() != "part=snippet" {
        return google_error(400, "invalidPart", "part must be snippet");
    }
    let Ok(item) = serde_json::from_slice::<Value>(&body) else {
        return google_error(400, "parseError", "Parse Error");
    };
    let playlist = item.pointer("/snippet/playlistId").and_then(Value::as_str).unwrap_or_default().to_string();
    let kind = item.pointer("/snippet/resourceId/kind").and_then(Value::as_str);
    let video = item.pointer("/snippet/resourceId/videoId").and_then(Value::as_str).unwrap_or_default().to_string();
    if playlist != PLAYLIST_ID {
        return google_error(
            404,
            "playlistNotFound",
            "The playlist identified with the request's playlistId parameter cannot be found.",
        );
    }
    if kind != Some("youtube#video") || !state.uploads.iter().any(|u| u.kind == Kind::Video && u.id == video) {
        return google_error(
            404,
            "videoNotFound",
            "The video that you are trying to add to the playlist cannot be found.",
        );
    }
    state.counts.playlist_inserts += 1;
    state.playlist_items.push((playlist.clone(), video.clone()));
    let id = state.id("PLI");
    HttpResponse::Ok().json(json!({
        "kind": "youtube#playlistItem",
        "id": id,
        "snippet": { "playlistId": playlist, "resourceId": { "kind": "youtube#video", "videoId": video } },
    }))
}
