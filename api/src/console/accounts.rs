//! Linked accounts: YouTube and Google Drive, connected through Google's consent page
//! (the notifier's upload channels then use them) and disconnected.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpResponse, ResponseError};
use askama::Template;
use reelfarm_domain::id::iso8601;
use reelfarm_domain::integration::Provider;
use serde::Deserialize;

use super::pages::CsrfForm;
use super::visitor::SignedIn;
use super::{html, see_other, Chrome, ConsoleError};
use crate::error::ApiError;
use crate::services::consent::TokenEndpoint;
use crate::state::AppState;
use reelfarm_app::consent::{self, Callback};
use reelfarm_app::integrations;

type Answer = Result<HttpResponse, ConsoleError>;

/// A provider as the page shows it.
struct ProviderRow {
    provider: &'static str,
    name: &'static str,
    what: &'static str,
    /// When it was linked, if it is.
    linked: Option<String>,
}

#[derive(Template)]
#[template(path = "console/accounts.html")]
struct AccountsPage {
    chrome: Chrome,
    providers: Vec<ProviderRow>,
    /// Whether the consent flow is set up here.
    available: bool,
    /// The provider just linked.
    linked: Option<&'static str>,
    problem: Option<String>,
}

fn name(provider: Provider) -> &'static str {
    match provider {
        Provider::YouTube => "YouTube",
        Provider::Gdrive => "Google Drive",
    }
}

async fn accounts_page(
    state: &AppState,
    visitor: &SignedIn,
    linked: Option<Provider>,
    problem: Option<ApiError>,
) -> Answer {
    let records = integrations::list(state.backends.store(), &visitor.session.user.id).await?;
    let providers = Provider::ALL
        .into_iter()
        .map(|p| ProviderRow {
            provider: p.as_str(),
            name: name(p),
            what: match p {
                Provider::YouTube => "Notifications of type upload-videosite put finished videos on the channel.",
                Provider::Gdrive => "Notifications of type upload-cloudstorage put finished videos in a folder.",
            },
            linked: records.iter().find(|r| r.provider == p).map(|r| iso8601(r.updated_at)),
        })
        .collect();
    let status = problem.as_ref().map_or(StatusCode::OK, |e| e.status_code());
    let page = AccountsPage {
        chrome: visitor.chrome("accounts"),
        providers,
        available: consent::available(&state.config),
        linked: linked.map(name),
        problem: problem.map(|e| e.body().message.clone()),
    };
    Ok(html(status, &page))
}

#[derive(Deserialize)]
pub struct LinkedQuery {
    linked: Option<String>,
}

#[get("/accounts")]
pub async fn accounts(state: web::Data<AppState>, visitor: SignedIn, query: web::Query<LinkedQuery>) -> Answer {
    accounts_page(&state, &visitor, query.linked.as_deref().and_then(Provider::parse), None).await
}

/// To Google's consent page. A link, not a form: the page is on another site, which the
/// console's `form-action 'self'` would not let a form lead to; the flow's state is tied
/// to this session, so a forged visit here links nothing.
#[get("/accounts/{provider}/connect")]
pub async fn connect(state: web::Data<AppState>, visitor: SignedIn, provider: web::Path<String>) -> Answer {
    let provider = Provider::parse(&provider).ok_or_else(|| ApiError::not_found("Provider"))?;
    let user = &visitor.session.user.id;
    match consent::begin(&state.backends, &state.config, user, &visitor.session.id, provider)
        .await
        .map_err(ApiError::from)
    {
        Ok(consent_page) => Ok(see_other(&consent_page)),
        Err(e) if e.status_code().is_client_error() => accounts_page(&state, &visitor, None, Some(e)).await,
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

/// Where Google sends the user back to.
#[get("/accounts/callback")]
pub async fn callback(state: web::Data<AppState>, visitor: SignedIn, query: web::Query<CallbackQuery>) -> Answer {
    let callback = Callback {
        state: query.state.as_deref().unwrap_or_default(),
        code: query.code.as_deref(),
        error: query.error.as_deref(),
    };
    let deployment = (&state.backends, &state.sealer, &state.config);
    let (endpoint, user) = (TokenEndpoint(&state.config), &visitor.session.user.id);
    match consent::finish(deployment, &endpoint, user, &visitor.session.id, callback).await.map_err(ApiError::from) {
        Ok(provider) => Ok(see_other(&format!("/console/accounts?linked={provider}"))),
        Err(e) if e.status_code().is_client_error() => accounts_page(&state, &visitor, None, Some(e)).await,
        Err(e) => Err(e.into()),
    }
}

#[post("/accounts/{provider}/disconnect")]
pub async fn disconnect(
    state: web::Data<AppState>,
    visitor: SignedIn,
    provider: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Answer {
    visitor.check_csrf(&form.csrf)?;
    let provider = Provider::parse(&provider).ok_or_else(|| ApiError::not_found("Provider"))?;
    integrations::unlink(state.backends.store(), &visitor.session.user.id, provider).await?;
    Ok(see_other("/console/accounts"))
}
