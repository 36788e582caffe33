//! The admin area, for operators only (anyone else finds nothing there): every user with
//! their e-mail address, groups and credits, every group with its members and credits;
//! new users, credits, memberships and one-time sign-in links.

use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use askama::Template;
use reelfarm_backends::store::{Account, GroupSummary};
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::{GroupId, UserId};
use serde::Deserialize;

use super::pages::CsrfForm;
use super::visitor::{Operator, SignedIn};
use super::{html, see_other, Chrome, ConsoleError};
use crate::error::ApiError;
use crate::ids;
use crate::pagination::Page;
use crate::services::accounts::{self, NewAccount};
use crate::state::AppState;

/// Users per page.
const USERS_PER_PAGE: u32 = 50;

type Answer = Result<HttpResponse, ConsoleError>;

#[derive(Template)]
#[template(path = "console/admin.html")]
struct AdminPage {
    chrome: Chrome,
    accounts: Vec<Account>,
    groups: Vec<GroupSummary>,
    page: u32,
    more: bool,
    /// A sign-in link just made, for the user named: shown this once.
    link: Option<(String, String)>,
    problems: Vec<String>,
    /// The new-user form as last sent, when it was refused.
    draft: Draft,
}

/// The new-user form's fields.
#[derive(Default)]
struct Draft {
    name: String,
    email: String,
    credits: String,
    group: String,
    operator: bool,
}

/// What the page shows besides the lists.
#[derive(Default)]
struct Outcome {
    page: Option<u32>,
    link: Option<(String, String)>,
    problems: Vec<String>,
    draft: Draft,
}

async fn admin_page(state: &AppState, visitor: &SignedIn, outcome: Outcome) -> Answer {
    let page = Page { limit: USERS_PER_PAGE, page: outcome.page.unwrap_or(1).max(1) };
    let (accounts, groups) = accounts::overview(state, &visitor.caller(), page).await?;
    let status = if outcome.problems.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    let link = outcome.link.map(|(name, token)| (name, state.config.api.sign_in_link(&token)));
    Ok(html(
        status,
        &AdminPage {
            chrome: visitor.chrome("admin"),
            more: accounts.len() == USERS_PER_PAGE as usize,
            accounts,
            groups,
            page: page.page,
            link,
            problems: outcome.problems,
            draft: outcome.draft,
        },
    ))
}

/// The problems of a refused form, one sentence each; other errors pass.
fn problems(e: ApiError) -> Result<Vec<String>, ConsoleError> {
    if e.key() == ErrorKey::ValidationFailed {
        Ok(e.body().errors.iter().map(|f| format!("{}: {}", f.field, f.message)).collect())
    } else {
        Err(e.into())
    }
}

#[derive(Deserialize)]
pub struct PageNumber {
    page: Option<u32>,
}

#[get("/admin")]
pub async fn admin(state: web::Data<AppState>, visitor: Operator, query: web::Query<PageNumber>) -> Answer {
    admin_page(&state, &visitor, Outcome { page: query.page, ..Outcome::default() }).await
}

#[derive(Deserialize)]
pub struct NewUserForm {
    csrf: String,
    name: String,
    email: String,
    credits: String,
    group: String,
    operator: Option<String>,
}

/// Creates a user and shows a one-time sign-in link for them.
#[post("/admin/users")]
pub async fn create_user(
    state: web::Data<AppState>,
    visitor: Operator,
    req: HttpRequest,
    body: web::Payload,
) -> Answer {
    let form: NewUserForm = crate::form::read(&req, body).await?;
    visitor.check_csrf(&form.csrf)?;
    let new = NewAccount {
        name: &form.name,
        email: &form.email,
        credits: &form.credits,
        group: &form.group,
        operator: form.operator.is_some(),
    };
    let outcome = match accounts::create(&state, &visitor.caller(), &new).await {
        Ok((user, token)) => Outcome { link: Some((user.name, token)), ..Outcome::default() },
        Err(e) => {
            let draft = Draft {
                name: form.name,
                email: form.email,
                credits: form.credits,
                group: form.group,
                operator: form.operator.is_some(),
            };
            Outcome { problems: problems(e)?, draft, ..Outcome::default() }
        }
    };
    admin_page(&state, &visitor, outcome).await
}

#[derive(Deserialize)]
pub struct CreditsForm {
    csrf: String,
    credits: String,
}

/// Sets the credits of a user or a group (by id).
#[post("/admin/credits/{id}")]
pub async fn set_credits(
    state: web::Data<AppState>,
    visitor: Operator,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Answer {
    let form: CreditsForm = crate::form::read(&req, body).await?;
    visitor.check_csrf(&form.csrf)?;
    match accounts::set_credits(&state, &visitor.caller(), &id, &form.credits).await {
        Ok(()) => Ok(see_other("/console/admin")),
        Err(e) => admin_page(&state, &visitor, Outcome { problems: problems(e)?, ..Outcome::default() }).await,
    }
}

#[derive(Deserialize)]
pub struct JoinForm {
    csrf: String,
    group: String,
}

#[post("/admin/users/{id}/groups")]
pub async fn join_group(
    state: web::Data<AppState>,
    visitor: Operator,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Answer {
    let form: JoinForm = crate::form::read(&req, body).await?;
    visitor.check_csrf(&form.csrf)?;
    let user = ids::in_path::<UserId>(&id)?;
    match accounts::join(&state, &visitor.caller(), &user, &form.group).await {
        Ok(()) => Ok(see_other("/console/admin")),
        Err(e) => admin_page(&state, &visitor, Outcome { problems: problems(e)?, ..Outcome::default() }).await,
    }
}

#[post("/admin/users/{id}/groups/{group}/leave")]
pub async fn leave_group(
    state: web::Data<AppState>,
    visitor: Operator,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Payload,
) -> Answer {
    let form: CsrfForm = crate::form::read(&req, body).await?;
    visitor.check_csrf(&form.csrf)?;
    let user = ids::in_path::<UserId>(&path.0)?;
    let group = ids::in_path::<GroupId>(&path.1)?;
    accounts::leave(&state, &visitor.caller(), &user, &group).await?;
    Ok(see_other("/console/admin"))
}

/// Makes a one-time sign-in link for a user and shows it, once.
#[post("/admin/users/{id}/link")]
pub async fn sign_in_link(
    state: web::Data<AppState>,
    visitor: Operator,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Answer {
    let form: CsrfForm = crate::form::read(&req, body).await?;
    visitor.check_csrf(&form.csrf)?;
    let user = ids::in_path::<UserId>(&id)?;
    let (name, token) = accounts::sign_in_link(&state, &visitor.caller(), &user).await?;
    admin_page(&state, &visitor, Outcome { link: Some((name, token)), ..Outcome::default() }).await
}
