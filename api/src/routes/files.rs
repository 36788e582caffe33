//! Stored files at their public addresses (`{asset_base_url}/…`): streamed from a local
//! blob directory with range support, or redirected to a presigned S3 address. Either way
//! the answer's type and disposition follow `media_type::served`.

use actix_web::http::header;
use actix_web::{route, web, HttpRequest, HttpResponse};
use reelfarm_backends::blob::media_type::served;
use reelfarm_backends::blob::ByteRange;
use tokio_util::io::ReaderStream;

use crate::error::{ApiError, ErrorBody};
use crate::services;
use crate::services::files::{Opened, Requested};
use crate::state::AppState;

/// Of every stored file: no script, no plugin, no request of its own, a sandboxed origin
/// (inline styles only, which SVG pictures use).
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/// A stored file. Keys are unguessable, so no token is needed: these addresses are handed
/// to e-mail and callback recipients.
#[utoipa::path(
    tag = "files",
    params(("key" = String, Path, description = "Key of the stored file")),
    responses(
        (status = 200, description = "The file", content_type = "application/octet-stream"),
        (status = 206, description = "The requested range"),
        (status = 302, description = "Redirect to a presigned object-store address"),
        (status = 404, body = ErrorBody),
        (status = 416, description = "Range not satisfiable"),
    )
)]
#[route("/files/{key:.*}", method = "GET", method = "HEAD")]
pub async fn get(
    state: web::Data<AppState>,
    key: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let range = req.headers().get(header::RANGE).and_then(|v| v.to_str().ok()).and_then(parse_range);
    let read = match services::files::open(&state, &key, range).await? {
        Opened::Elsewhere(url) => return Ok(HttpResponse::Found().insert_header((header::LOCATION, url)).finish()),
        Opened::Unsatisfiable { size } => return Ok(unsatisfiable(size)),
        Opened::Here(read) => read,
    };
    let range = read.range;
    let read = read.read;
    // Uploaded files are served from the api's origin: never let one act as a page.
    let served = served(&read.meta.content_type);
    let mut res = if range.is_some() { HttpResponse::PartialContent() } else { HttpResponse::Ok() };
    res.insert_header((header::CONTENT_TYPE, served.content_type.clone()))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP));
    if let Some(disposition) = served.disposition() {
        res.insert_header((header::CONTENT_DISPOSITION, disposition));
    }
    if range.is_some() {
        res.insert_header((header::CONTENT_RANGE, format!("bytes {}-{}/{}", read.start, read.end, read.meta.size)));
    }
    let len = if read.meta.size == 0 { 0 } else { read.end - read.start + 1 };
    res.no_chunking(len);
    if req.method() == actix_web::http::Method::HEAD {
        return Ok(res.finish());
    }
    Ok(res.streaming(ReaderStream::new(read.body)))
}

fn unsatisfiable(size: u64) -> HttpResponse {
    HttpResponse::RangeNotSatisfiable().insert_header((header::CONTENT_RANGE, format!("bytes */{size}"))).finish()
}

fn parse_range(spec: &str) -> Option<Requested> {
    let spec = spec.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let (start, end) = (start.trim(), end.trim());
    if start.is_empty() {
        return end.parse().ok().map(Requested::Suffix);
    }
    let start: u64 = start.parse().ok()?;
    let end = if end.is_empty() { None } else { Some(end.parse::<u64>().ok().filter(|&e| e >= start)?) };
    Some(Requested::Range(ByteRange { start, end }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_http_defines_them() {
        assert_eq!(parse_range("bytes=0-99"), Some(Requested::Range(ByteRange { start: 0, end: Some(99) })));
        assert_eq!(parse_range("bytes=100-"), Some(Requested::Range(ByteRange { start: 100, end: None })));
        assert_eq!(parse_range("bytes=-500"), Some(Requested::Suffix(500)));
        assert_eq!(parse_range("bytes=5-1"), None);
        assert_eq!(parse_range("bytes=0-1,4-5"), None);
        assert_eq!(parse_range("items=0-1"), None);
    }
}
