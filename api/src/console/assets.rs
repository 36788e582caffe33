//! The console's static files, embedded in the binary and served under names that carry
//! a hash of their content, so browsers may keep them for a year and still see a change.

use std::sync::LazyLock;

use actix_web::{get, web, HttpResponse};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

struct File {
    /// `htmx.3f2a9c1b7d0e4a55.js`: the stem, the content's hash, the extension.
    hashed: String,
    content_type: &'static str,
    bytes: &'static [u8],
}

impl File {
    fn new(name: &str, content_type: &'static str, bytes: &'static [u8]) -> File {
        let (stem, extension) = name.rsplit_once('.').expect("static files have an extension");
        let hash = hex::encode(&Sha256::digest(bytes)[..8]);
        File { hashed: format!("{stem}.{hash}.{extension}"), content_type, bytes }
    }
}

static FILES: LazyLock<[File; 4]> = LazyLock::new(|| {
    let js = "text/javascript; charset=utf-8";
    [
        File::new("console.css", "text/css; charset=utf-8", include_bytes!("../../static/console/console.css")),
        File::new("htmx.js", js, include_bytes!("../../static/console/htmx.min.js")),
        // htmx's `morph` swap (the studio): it keeps the elements a swap leaves in place,
        // with their focus and the requests queued on them.
        File::new("idiomorph.js", js, include_bytes!("../../static/console/idiomorph.min.js")),
        File::new("console.js", js, include_bytes!("../../static/console/console.js")),
    ]
});

/// The addresses pages link to.
#[derive(Debug, Clone)]
pub struct Urls {
    pub css: String,
    pub htmx: String,
    pub morph: String,
    pub js: String,
}

pub static URLS: LazyLock<Urls> = LazyLock::new(|| {
    let url = |i: usize| format!("/console/static/{}", FILES[i].hashed);
    Urls { css: url(0), htmx: url(1), morph: url(2), js: url(3) }
});

/// One static file by its hashed name.
#[get("/static/{name}")]
pub async fn file(name: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let file = FILES.iter().find(|f| f.hashed == *name).ok_or_else(|| ApiError::not_found("File"))?;
    Ok(HttpResponse::Ok()
        .content_type(file.content_type)
        .insert_header(("cache-control", "public, max-age=31536000, immutable"))
        .body(file.bytes))
}
