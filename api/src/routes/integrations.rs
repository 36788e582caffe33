//! The caller's linked accounts: the YouTube or Google Drive account the
//! notifier uploads videos to. Linking happens in a dashboard outside this API, which
//! hands over the OAuth client and refresh token; they are stored sealed and never shown
//! again: every response carries the client id and dates only.

use actix_web::{delete, get, put, web, HttpRequest, HttpResponse};
use reelfarm_backends::store::IntegrationRecord;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::iso8601;
use reelfarm_domain::integration::{LinkedAccount, Provider};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody, FieldError};
use crate::state::AppState;
use reelfarm_app::integrations as linked;

/// Longest value accepted for each field, in characters.
pub const MAX_FIELD_CHARS: usize = 4096;

/// A linked account as shown: never its secrets.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntegrationJson {
    /// `youtube` or `gdrive`.
    pub provider: String,
    /// Always true (an unlinked provider answers 404).
    pub linked: bool,
    /// The OAuth client id.
    pub client_id: String,
    /// When the provider was first linked.
    pub linked_at: String,
    /// When the account was last linked (replacing the previous one).
    pub updated_at: String,
}

impl IntegrationJson {
    fn new(record: &IntegrationRecord) -> IntegrationJson {
        IntegrationJson {
            provider: record.provider.as_str().to_string(),
            linked: true,
            client_id: record.client_id.clone(),
            linked_at: iso8601(record.linked_at),
            updated_at: iso8601(record.updated_at),
        }
    }
}

/// The caller's linked accounts.
#[utoipa::path(
    tag = "integrations",
    responses((status = 200, body = Vec<IntegrationJson>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/api2/v1/users/me/integrations")]
pub async fn list(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let records = linked::list(state.backends.store(), &caller.user.id).await?;
    Ok(HttpResponse::Ok().json(records.iter().map(IntegrationJson::new).collect::<Vec<_>>()))
}

/// Links an account of `provider`, replacing the one linked before.
#[utoipa::path(
    tag = "integrations",
    params(("provider" = String, Path, description = "`youtube` or `gdrive`")),
    request_body(content = LinkBody, content_type = "application/json"),
    responses(
        (status = 200, body = IntegrationJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Unknown provider"),
    ),
    security(("bearer" = []))
)]
#[put("/api2/v1/users/me/integrations/{provider}")]
pub async fn link(
    state: web::Data<AppState>,
    caller: Caller,
    provider: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let provider = parse_provider(&provider)?;
    let body: Value = crate::form::read_json(&req, payload).await?;
    let account = parse_account(&body).map_err(ApiError::validation)?;
    let record = linked::link(state.backends.store(), &state.sealer, &caller.user.id, provider, &account).await?;
    Ok(HttpResponse::Ok().json(IntegrationJson::new(&record)))
}

/// The caller's linked account of `provider`.
#[utoipa::path(
    tag = "integrations",
    params(("provider" = String, Path, description = "`youtube` or `gdrive`")),
    responses(
        (status = 200, body = IntegrationJson),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Unknown provider, or none linked"),
    ),
    security(("bearer" = []))
)]
#[get("/api2/v1/users/me/integrations/{provider}")]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
    provider: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let provider = parse_provider(&provider)?;
    let record = linked::get(state.backends.store(), &caller.user.id, provider).await?;
    Ok(HttpResponse::Ok().json(IntegrationJson::new(&record)))
}

/// Unlinks the caller's account of `provider`.
#[utoipa::path(
    tag = "integrations",
    params(("provider" = String, Path, description = "`youtube` or `gdrive`")),
    responses(
        (status = 204, description = "Unlinked"),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Unknown provider, or none linked"),
    ),
    security(("bearer" = []))
)]
#[delete("/api2/v1/users/me/integrations/{provider}")]
pub async fn unlink(
    state: web::Data<AppState>,
    caller: Caller,
    provider: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let provider = parse_provider(&provider)?;
    linked::unlink(state.backends.store(), &caller.user.id, provider).await?;
    Ok(HttpResponse::NoContent().finish())
}

fn parse_provider(name: &str) -> Result<Provider, ApiError> {
    Provider::parse(name).ok_or_else(|| ApiError::not_found("Integration provider"))
}

/// The body of a link, as sent; its OpenAPI schema (`LinkBody`) is derived from it. Each
/// field is a text field of at most [`MAX_FIELD_CHARS`] characters, read as any JSON value
/// so that a wrong type is named by field.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = LinkBody)]
pub struct LinkBody {
    #[schema(schema_with = client_id, required = true)]
    client_id: Option<Value>,
    #[schema(schema_with = client_secret, required = true)]
    client_secret: Option<Value>,
    #[schema(schema_with = refresh_token, required = true)]
    refresh_token: Option<Value>,
}

fn client_id() -> RefOr<Schema> {
    super::bodies::text_field(MAX_FIELD_CHARS, "OAuth 2.0 client id")
}

fn client_secret() -> RefOr<Schema> {
    super::bodies::text_field(MAX_FIELD_CHARS, "OAuth 2.0 client secret (stored sealed, never shown)")
}

fn refresh_token() -> RefOr<Schema> {
    super::bodies::text_field(MAX_FIELD_CHARS, "Refresh token of the account (stored sealed, never shown)")
}

/// Reads the body of a link; `Err` names each field in error.
fn parse_account(body: &Value) -> Result<LinkedAccount, Vec<FieldError>> {
    // An array would be read field by field in order: only an object is a body.
    let Some(Ok(body)) = body.is_object().then(|| LinkBody::deserialize(body)) else {
        return Err(vec![FieldError::new("", ErrorKey::Invalid, "the body must be a JSON object")]);
    };
    let mut errors = Vec::new();
    let mut field = |name: &str, value: Option<Value>| match value {
        value @ (Some(Value::String(_)) | None | Some(Value::Null)) => {
            crate::text::field(name, value.as_ref().and_then(Value::as_str), MAX_FIELD_CHARS).unwrap_or_else(|e| {
                errors.push(e);
                String::new()
            })
        }
        Some(_) => {
            errors.push(FieldError::new(name, ErrorKey::Invalid, "must be a string"));
            String::new()
        }
    };
    let account = LinkedAccount {
        client_id: field("client_id", body.client_id),
        client_secret: field("client_secret", body.client_secret),
        refresh_token: field("refresh_token", body.refresh_token),
    };
    if errors.is_empty() {
        Ok(account)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_link_needs_three_non_empty_strings() {
        let account =
            parse_account(&json!({"client_id": " id ", "client_secret": "s", "refresh_token": "1//r\n"})).unwrap();
        assert_eq!((account.client_id.as_str(), account.refresh_token.as_str()), ("id", "1//r"));

        let errors = parse_account(&json!({"client_id": "", "client_secret": 5, "extra": true})).unwrap_err();
        let named: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.key.as_str())).collect();
        assert_eq!(
            named,
            [("client_id", "error.required"), ("client_secret", "error.invalid"), ("refresh_token", "error.required")]
        );
        let errors =
            parse_account(&json!({"client_id": "a\u{0}b", "client_secret": "x".repeat(4097), "refresh_token": "  "}))
                .unwrap_err();
        let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["error.invalid", "error.too_long", "error.required"]);
        assert_eq!(parse_account(&json!([])).unwrap_err()[0].key, "error.invalid");
    }

    #[test]
    fn the_view_has_no_secrets() {
        let record = IntegrationRecord {
            user_id: reelfarm_domain::id::UserId::generate(),
            provider: Provider::Gdrive,
            client_id: "cid".into(),
            sealed: "SEALED".into(),
            linked_at: 0,
            updated_at: 1_000,
        };
        let shown = serde_json::to_value(IntegrationJson::new(&record)).unwrap();
        assert_eq!(
            shown,
            json!({"provider": "gdrive", "linked": true, "client_id": "cid",
                   "linked_at": "1970-01-01T00:00:00.000Z", "updated_at": "1970-01-01T00:00:01.000Z"})
        );
    }
}
