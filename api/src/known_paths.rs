//! What an unmatched request gets: 405 with an `Allow` header (RFC 9110 §15.5.6) when its
//! path is one the API serves under other methods, else 404. The table is read from the
//! OpenAPI document, so it lists exactly the methods that are documented and served.

use actix_web::dev::ResourceDef;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use utoipa::openapi::OpenApi;

use crate::error::ApiError;

/// Served routes that the document shows differently or not at all: the stored files'
/// key spans several segments (the document shows it as one parameter), and the document
/// itself, the static images and the MCP endpoint are not API operations.
const UNDOCUMENTED: [(&str, &[&str]); 4] = [
    ("/files/{key:.*}", &["GET", "HEAD"]),
    ("/mcp", &["GET", "POST", "DELETE"]),
    ("/openapi.json", &["GET"]),
    ("/static/{name}", &["GET"]),
];

/// The order methods are listed in.
const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/// Every served path pattern with its methods.
pub struct KnownPaths(Vec<(ResourceDef, Vec<&'static str>)>);

impl KnownPaths {
    pub fn new(doc: &OpenApi) -> KnownPaths {
        let mut known: Vec<(ResourceDef, Vec<&'static str>)> =
            UNDOCUMENTED.iter().map(|(path, methods)| (ResourceDef::new(*path), methods.to_vec())).collect();
        for (path, item) in &doc.paths.paths {
            if known[..UNDOCUMENTED.len()].iter().any(|(def, _)| def.is_match(path)) {
                continue;
            }
            let operations = [&item.get, &item.head, &item.post, &item.put, &item.patch, &item.delete];
            let methods = METHODS.iter().zip(operations).filter(|(_, op)| op.is_some()).map(|(m, _)| *m).collect();
            known.push((ResourceDef::new(path.as_str()), methods));
        }
        KnownPaths(known)
    }

    /// The `Allow` value of `path` (every method of every pattern it matches), when it is
    /// a served path.
    pub fn allowed(&self, path: &str) -> Option<String> {
        let matching: Vec<&str> = self
            .0
            .iter()
            .filter(|(def, _)| def.is_match(path))
            .flat_map(|(_, methods)| methods.iter().copied())
            .collect();
        let allowed: Vec<&str> = METHODS.into_iter().filter(|m| matching.contains(m)).collect();
        (!allowed.is_empty()).then(|| allowed.join(", "))
    }
}

/// The default service: 405 + `Allow` for a known path, 404 for anything else.
pub async fn unmatched(req: HttpRequest, known: web::Data<KnownPaths>) -> HttpResponse {
    match known.allowed(req.path()) {
        Some(allow) => {
            let message = format!("{} is not allowed here; allowed: {allow}", req.method());
            let mut res = ApiError::method_not_allowed(message).error_response_owned();
            if let Ok(value) = header::HeaderValue::from_str(&allow) {
                res.headers_mut().insert(header::ALLOW, value);
            }
            res
        }
        None => ApiError::not_found("Route").error_response_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem};
    use utoipa::openapi::{OpenApiBuilder, PathsBuilder};

    #[test]
    fn documented_and_undocumented_paths_list_their_methods() {
        let mut item = PathItem::new(HttpMethod::Get, OperationBuilder::new().build());
        item.delete = Some(OperationBuilder::new().build());
        let paths = PathsBuilder::new()
            .path("/api2/v1/objects/{id}", item)
            .path("/files/{key}", PathItem::new(HttpMethod::Get, OperationBuilder::new().build()));
        let known = KnownPaths::new(&OpenApiBuilder::new().paths(paths).build());
        assert_eq!(known.allowed("/api2/v1/objects/abc").as_deref(), Some("GET, DELETE"));
        assert_eq!(known.allowed("/files/assets/a/b/original").as_deref(), Some("GET, HEAD"));
        assert_eq!(known.allowed("/openapi.json").as_deref(), Some("GET"));
        assert_eq!(known.allowed("/api2/v1/objects"), None);
        assert_eq!(known.allowed("/api2/v1/objects/abc/more"), None);
    }
}
