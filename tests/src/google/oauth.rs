//! The fake's OAuth 2.0 side, as Google's accounts service speaks it: the consent page
//! (authorization-code flow with PKCE: `S256` challenges only, `access_type=offline` for
//! a refresh token), and the token endpoint exchanging codes (once, at the same redirect
//! address, with the challenge's verifier) and refresh tokens.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use sha2::Digest;

use super::{Grant, Shared, State, CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN};

#[derive(Deserialize)]
pub(super) struct TokenForm {
    grant_type: String,
    client_id: String,
    client_secret: String,
    refresh_token: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
}

/// What a consent request carries, as Google's authorization endpoint takes it.
#[derive(Deserialize)]
pub(super) struct ConsentQuery {
    client_id: String,
    redirect_uri: String,
    response_type: String,
    scope: String,
    state: String,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    access_type: Option<String>,
    /// On the page's buttons: `allow` or `deny`.
    decision: Option<String>,
}

fn html_page(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status).content_type("text/html; charset=utf-8").body(format!(
        "<!doctype html><html lang=\"en\"><head><title>Sign in - Google Accounts</title></head><body>{body}</body></html>"
    ))
}

/// The consent page: checks the request as Google does, then asks.
pub(super) async fn consent_page(query: web::Query<ConsentQuery>) -> HttpResponse {
    let q = query.into_inner();
    let problem = if q.client_id != CLIENT_ID {
        Some("invalid_client: The OAuth client was not found.")
    } else if q.response_type != "code" {
        Some("unsupported_response_type")
    } else if q.code_challenge.is_none() || q.code_challenge_method.as_deref() != Some("S256") {
        Some("invalid_request: code_challenge_method must be S256")
    } else if q.access_type.as_deref() != Some("offline") {
        Some("invalid_request: no refresh token without access_type=offline")
    } else {
        None
    };
    if let Some(problem) = problem {
        return html_page(
            StatusCode::BAD_REQUEST,
            format!("<h1>Access blocked</h1><p id=\"error\">Error 400: {problem}</p>"),
        );
    }
    let hidden: String = [
        ("client_id", &q.client_id),
        ("redirect_uri", &q.redirect_uri),
        ("response_type", &q.response_type),
        ("scope", &q.scope),
        ("state", &q.state),
        ("code_challenge", q.code_challenge.as_ref().unwrap()),
        ("code_challenge_method", q.code_challenge_method.as_ref().unwrap()),
        ("access_type", q.access_type.as_ref().unwrap()),
    ]
    .iter()
    .map(|(k, v)| {
        format!("<input type=\"hidden\" name=\"{k}\" value=\"{}\">", v.replace('&', "&amp;").replace('"', "&quot;"))
    })
    .collect();
    html_page(
        StatusCode::OK,
        format!(
            "<h1>reelfarm wants access to your Google Account</h1><p id=\"scope\">{}</p>\
             <form action=\"/auth/decide\" method=\"get\">{hidden}\
             <button name=\"decision\" value=\"deny\" id=\"deny\">Cancel</button>\
             <button name=\"decision\" value=\"allow\" id=\"allow\">Allow</button></form>",
            q.scope.replace('<', "&lt;")
        ),
    )
}

/// The page's answer: back to the client with a code, or with `access_denied`.
pub(super) async fn decide(query: web::Query<ConsentQuery>, state: Shared) -> HttpResponse {
    let q = query.into_inner();
    let mut back = url::Url::parse(&q.redirect_uri).expect("the client's redirect address");
    if q.decision.as_deref() == Some("allow") {
        let mut state = state.lock().unwrap();
        let code = format!("4/{}", state.id("code"));
        let grant = Grant {
            redirect_uri: q.redirect_uri.clone(),
            challenge: q.code_challenge.unwrap_or_default(),
            scope: q.scope.clone(),
        };
        state.grants.insert(code.clone(), grant);
        back.query_pairs_mut().append_pair("code", &code).append_pair("scope", &q.scope);
    } else {
        back.query_pairs_mut().append_pair("error", "access_denied");
    }
    back.query_pairs_mut().append_pair("state", &q.state);
    HttpResponse::Found().insert_header(("location", back.as_str())).finish()
}

/// A code's exchange: once, by the client it was given to, at the same redirect address,
/// with the verifier of its challenge.
/// The scope granted, or why the code is refused (`invalid_grant`).
fn exchange_code(state: &mut State, form: &TokenForm) -> Result<String, &'static str> {
    let grant = form.code.as_ref().and_then(|c| state.grants.remove(c)).ok_or("Malformed auth code.")?;
    if form.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str()) {
        return Err("Bad Request: redirect_uri_mismatch");
    }
    let verifier = form.code_verifier.as_deref().unwrap_or_default();
    let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    if digest != grant.challenge {
        return Err("Invalid code verifier.");
    }
    state.counts.codes_exchanged += 1;
    Ok(grant.scope)
}

pub(super) async fn token(form: web::Form<TokenForm>, state: Shared) -> HttpResponse {
    let mut state = state.lock().unwrap();
    state.counts.token_requests += 1;
    if form.client_id != CLIENT_ID || form.client_secret != CLIENT_SECRET {
        return HttpResponse::Unauthorized()
            .json(json!({ "error": "invalid_client", "error_description": "The OAuth client was not found." }));
    }
    if form.grant_type == "authorization_code" {
        let scope = match exchange_code(&mut state, &form) {
            Ok(scope) => scope,
            Err(why) => {
                return HttpResponse::BadRequest().json(json!({ "error": "invalid_grant", "error_description": why }))
            }
        };
        let token = format!("ya29.{}", uuid::Uuid::new_v4().simple());
        state.access_tokens.insert(token.clone());
        return HttpResponse::Ok().json(json!({
            "access_token": token,
            "expires_in": 3599,
            "refresh_token": REFRESH_TOKEN,
            "scope": scope,
            "token_type": "Bearer",
        }));
    }
    if form.grant_type != "refresh_token" {
        return HttpResponse::BadRequest().json(json!({ "error": "unsupported_grant_type" }));
    }
    if form.refresh_token.as_deref() != Some(REFRESH_TOKEN) || state.refresh_revoked {
        return HttpResponse::BadRequest()
            .json(json!({ "error": "invalid_grant", "error_description": "Token has been expired or revoked." }));
    }
    let token = format!("ya29.{}", uuid::Uuid::new_v4().simple());
    state.access_tokens.insert(token.clone());
    HttpResponse::Ok().json(json!({
        "access_token": token,
        "expires_in": 3599,
        "token_type": "Bearer",
        "scope": "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/drive.file",
    }))
}
