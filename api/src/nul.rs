//! NUL characters are refused at the edge: no id, name or text of ours contains one, and
//! PostgreSQL cannot store one in a text column (it answers an error, which would be a
//! 500). In a URL a NUL can only come percent-encoded (`%00`); in a JSON body it comes
//! as `\u0000` in any string, key or value.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use reelfarm_domain::error_key::ErrorKey;
use serde_json::Value;

use crate::error::{ApiError, FieldError};

/// Middleware: 400 for a request whose path or query holds an encoded NUL.
pub async fn refuse_in_url<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let encoded_nul = |s: &str| s.as_bytes().windows(3).any(|w| w == b"%00");
    if encoded_nul(req.path()) || encoded_nul(req.query_string()) {
        let (req, _) = req.into_parts();
        let res = ApiError::invalid_request("The address must not contain NUL characters (%00)").error_response_owned();
        return Ok(ServiceResponse::new(req, res).map_into_right_body());
    }
    next.call(req).await.map(ServiceResponse::map_into_left_body)
}

/// 400 naming the first string (or key) of `body` that holds a NUL, by its JSON path.
pub fn refuse_in_json(body: &Value) -> Result<(), ApiError> {
    refuse_in_field(body, "")
}

/// [`refuse_in_json`] for the value of the body's field `field` (a body whose other
/// fields are ignored when unknown): paths start with `field`.
pub fn refuse_in_field(value: &Value, field: &str) -> Result<(), ApiError> {
    match find(value, field.to_string()) {
        None => Ok(()),
        Some(path) => {
            Err(ApiError::validation(vec![FieldError::new(path, ErrorKey::Invalid, "must not contain NUL characters")]))
        }
    }
}

fn find(value: &Value, path: String) -> Option<String> {
    match value {
        Value::String(s) if s.contains('\0') => Some(path),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| find(v, format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
            if k.contains('\0') {
                Some(here)
            } else {
                find(v, here)
            }
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_nul_is_named_by_its_path() {
        assert!(refuse_in_json(&json!({"a": ["b", {"c": 1}], "d": null})).is_ok());
        let field = |v: Value| refuse_in_json(&v).unwrap_err().body().errors[0].field.clone();
        assert_eq!(field(json!({"template_id": "a\u{0}"})), "template_id");
        assert_eq!(field(json!({"values": [{}, {"external_id": "\u{0}"}]})), "values[1].external_id");
        assert_eq!(
            field(json!({"values": [{"template_variables": {"x\u{0}": "v"}}]})),
            "values[0].template_variables.x\u{0}"
        );
        assert_eq!(field(json!("\u{0}")), "");
    }
}
