//! Bearer-token authentication (spec §5) and per-token rate limits, as an
//! extractor: a handler that takes a [`Caller`] is authenticated.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};
use reelfarm_domain::account::User;

use crate::error::ApiError;
use crate::limits::client_ip;
use crate::state::AppState;
use reelfarm_backends::store::UserStore;

/// The authenticated user of a request.
pub struct Caller {
    pub user: User,
    pub token_id: String,
}

/// The token of an `Authorization: Bearer …` header.
fn bearer(req: &HttpRequest) -> Result<&str, ApiError> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("Missing Authorization header; send `Authorization: Bearer <token>`"))?;
    let value = value.to_str().map_err(|_| ApiError::unauthorized("Malformed Authorization header"))?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::unauthorized("Authorization must use the Bearer scheme"));
    }
    Ok(token.trim())
}

async fn authenticate(req: HttpRequest) -> Result<Caller, ApiError> {
    let state = req.app_data::<web::Data<AppState>>().expect("AppState is registered").clone();
    let client = client_ip(&req, &state.config.api.trusted_proxies);
    // An address past its limit of failed attempts is refused before any lookup.
    state.limits.refused_before("authfail", client)?;
    let found = match bearer(&req) {
        Ok(token) => state
            .backends
            .store()
            .authenticate(token)
            .await?
            .ok_or_else(|| ApiError::unauthorized("Invalid, revoked or expired access token")),
        Err(e) => Err(e),
    };
    let (user, record) = match found {
        Ok(found) => found,
        Err(refusal) => {
            // Failed attempts count per client address: past the limit they answer 429.
            state.limits.check_client(&state, "authfail", client).await?;
            return Err(refusal);
        }
    };
    let config = &state.config;
    let key = format!("rate:{}", record.id);
    state.limits.check(state.backends.cache(), &key, config.api.rate_limit, config.api.rate_limit_burst).await?;
    Ok(Caller { user, token_id: record.id })
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Caller, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        Box::pin(authenticate(req.clone()))
    }
}
