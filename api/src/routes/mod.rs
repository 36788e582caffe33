//! Every route of the API. Handlers registered here through `service` are collected into
//! the OpenAPI document automatically.

use utoipa_actix_web::service_config::ServiceConfig;

pub(crate) mod bodies;
mod files;
pub(crate) mod integrations;
pub(crate) mod jobs;
pub(crate) mod libraries;
pub(crate) mod notifications;
pub(crate) mod objects;
pub(crate) mod ops;
pub(crate) mod template_edit;
pub(crate) mod templates;
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
        .service(template_edit::create)
        .service(template_edit::save)
        .service(template_edit::duplicate)
        .service(template_edit::remove)
        .service(template_edit::versions)
        .service(template_edit::version)
        .service(template_edit::restore)
        .service(templates::preview)
        .service(templates::draft)
        .service(templates::fonts)
        .service(jobs::create)
        .service(jobs::create_from_csv)
        .service(jobs::get)
        .service(jobs::cancel)
        .service(jobs::list)
        .service(jobs::of_template)
        .service(jobs::project)
        .service(jobs::credits)
        .service(tts::voices)
        .service(notifications::of_job)
        .service(notifications::redeliver)
        .service(uploads::upload)
        .service(files::get);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Longest handler, in lines (signature to closing brace).
    const MAX_HANDLER_LINES: usize = 40;

    /// Every handler, of the API and of the console, only parses, calls a service and
    /// maps its result: it is short and reaches no backend itself (`services` does). Nor
    /// do the helpers beside the handlers: outside the tests, a route or page file only
    /// names the blob store to make a stored file's public address (no I/O).
    #[test]
    fn handlers_are_short_and_leave_the_backends_to_the_services() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut found = 0;
        let mut problems = Vec::new();
        let mut files = Vec::new();
        let mut dirs = vec![root.join("src/routes"), root.join("src/console")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path)
                } else {
                    files.push(path)
                }
            }
        }
        for path in files {
            let source = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = source.lines().collect();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let code = source.split("#[cfg(test)]").next().unwrap_or_default();
            for (at, line) in code.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//")) {
                let backend = [".store", ".bus", ".cache"].into_iter().find(|b| line.contains(&format!("{b}.")));
                let blobs = line.contains(".blobs.") && !line.contains(".blobs.public_url(");
                if let Some(backend) = backend.or(blobs.then_some(".blobs")) {
                    problems
                        .push(format!("{file}:{}: calls `{backend}` beside the handlers (a service's work)", at + 1));
                }
            }
            let routes = lines.iter().enumerate().filter(|(_, l)| {
                let l = l.trim_start();
                ["#[get(", "#[post(", "#[put(", "#[delete(", "#[route("].iter().any(|a| l.starts_with(a))
            });
            for (at, _) in routes {
                let start = (at..lines.len()).find(|&i| lines[i].contains("async fn ")).expect("a handler follows");
                let mut depth = 0i32;
                let end = (start..lines.len())
                    .find(|&i| {
                        depth += lines[i].matches('{').count() as i32 - lines[i].matches('}').count() as i32;
                        depth == 0 && lines[start..=i].iter().any(|l| l.contains('{'))
                    })
                    .expect("the handler ends");
                let body = lines[start..=end].join("\n");
                let name = format!("{file}:{}", start + 1);
                found += 1;
                if end - start + 1 > MAX_HANDLER_LINES {
                    problems.push(format!("{name}: {} lines", end - start + 1));
                }
                for backend in [".store", ".blobs", ".bus", ".cache"] {
                    if body.contains(&format!("{backend}.")) || body.contains(&format!("{backend}\n")) {
                        problems.push(format!("{name}: calls `{backend}` (a service's work)"));
                    }
                }
            }
        }
        assert!(found > 30, "handlers found: {found}");
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
