//! Every route of the API. Handlers registered here through `service` are collected into
//! the OpenAPI document automatically.

use utoipa_actix_web::service_config::ServiceConfig;

pub(crate) mod bodies;
mod files;
pub(crate) mod integrations;
pub(crate) mod jobs;
pub(crate) mod libraries;
mod notifications;
pub(crate) mod objects;
pub(crate) mod ops;
mod templates;
mod tts;
mod uploads;
mod users;

/// Every route; `/readyz` and `/metrics` only when `with_ops` (no operations port of its
/// own: they are not for the public behind an ingress).
pub(crate) fn configure(cfg: &mut ServiceConfig, with_ops: bool) {
    cfg.service(ops::healthz);
    if with_ops {
        cfg.service(ops::readyz).service(ops::metrics);
    }
    cfg.service(libraries::list)
        .service(libraries::create)
        .service(libraries::personal)
        .service(users::me)
        .service(users::webhook_secret)
        .service(users::rotate_webhook_secret)
        .service(integrations::list)
        .service(integrations::link)
        .service(integrations::get)
        .service(integrations::unlink)
        .service(objects::add)
        .service(objects::get)
        .service(objects::remove)
        .service(objects::list)
        .service(templates::list)
        .service(templates::get)
        .service(jobs::create)
        .service(jobs::get)
        .service(jobs::list)
        .service(jobs::of_template)
        .service(jobs::project)
        .service(jobs::credits)
        .service(tts::voices)
        .service(notifications::of_job)
        .service(uploads::upload)
        .service(files::get);
}
