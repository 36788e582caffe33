//! `reelfarm admin …`: operator commands against the configured metadata store.

use anyhow::Context;
use reelfarm_app::operations::{self, SharedLibrary};
use reelfarm_app::{accounts, Actor, AppError};
use reelfarm_backends::store::{AccountShare, WorkerRecord};
use reelfarm_backends::{Blobs, Config, Store};
use reelfarm_domain::account::Credits;
use reelfarm_domain::id::iso8601;

use crate::cli::{
    Admin, CreditsCommand, JobCommand, LibraryCommand, LibraryKindArg, ShareCommand, TemplateCommand, TokenCommand,
    UserCommand, WorkerCommand,
};

pub mod template;
pub mod usage;

pub async fn run(command: Admin, config: Config) -> anyhow::Result<()> {
    let store = Store::connect(&config.storage.database_url).await.context("metadata store")?;
    let result = execute(command, &store, &config).await;
    store.close().await;
    println!("{}", result?);
    Ok(())
}

/// Validity of the sign-in link `user create --sign-in-link` prints.
const LINK_HOURS: u32 = 24;

/// A one-time console sign-in link for `user` (name or id), valid for `hours`.
pub async fn link(store: &Store, config: &Config, user: &str, hours: u32) -> anyhow::Result<String> {
    let user = accounts::find_user(store, user).await.map_err(cli_error)?;
    let ttl = std::time::Duration::from_secs(u64::from(hours) * 3600);
    let (_, token) = accounts::sign_in_link(store, Actor::Cli, &user.id, ttl).await.map_err(|e| match e {
        AppError::Invalid(_) => anyhow::anyhow!("--hours must be 1 to 720"),
        e => cli_error(e),
    })?;
    Ok(config.api.sign_in_link(&token))
}

/// Accounts' shares as a tab-separated table under a header.
fn shares_table(shares: &[AccountShare]) -> String {
    let mut out = String::from("account\tname\tweight\tmax_priority\trunning\twaiting");
    for s in shares {
        out += &format!("\n{}\t{}\t{}\t{}\t{}\t{}", s.account, s.name, s.weight, s.max_priority, s.running, s.waiting);
    }
    out
}

/// Workers as a tab-separated table under a header.
fn workers_table(workers: &[WorkerRecord]) -> String {
    let mut out = String::from("worker\tstatus\tseen\trenders_ok\trenders_failed\treason");
    for w in workers {
        let status = if w.out_since.is_some() { "out of rotation" } else { "in rotation" };
        out += &format!(
            "\n{}\t{status}\t{}\t{}\t{}\t{}",
            w.id,
            iso8601(w.seen_at),
            w.renders_ok,
            w.renders_failed,
            w.out_reason.as_deref().unwrap_or("")
        );
    }
    out
}

/// Runs one command; returns what to print.
async fn execute(command: Admin, store: &Store, config: &Config) -> anyhow::Result<String> {
    let cli = Actor::Cli;
    Ok(match command {
        Admin::Template(TemplateCommand::Import { file, owner, public }) => {
            let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await.context("blob store")?;
            let options =
                template::ImportOptions { owner, public, time_limit: config.worker.job_timeout, limits: config.render };
            template::import(store, &blobs, &file, &options).await?.id.into()
        }
        Admin::Template(TemplateCommand::Share { template_id, user_or_group }) => {
            let (id, shown) =
                operations::share_template(store, cli, &template_id, &user_or_group).await.map_err(cli_error)?;
            format!("template {id} shared with {shown}")
        }
        Admin::User(UserCommand::Create { name, group, credits, email, operator, sign_in_link }) => {
            let new = accounts::CreateUser { name, group, credits, email, operator };
            let user = accounts::create_user(store, cli, &new).await.map_err(cli_error)?;
            match sign_in_link {
                true => format!("{}\n{}", user.id, link(store, config, &user.name, LINK_HOURS).await?),
                false => user.id.into(),
            }
        }
        Admin::User(UserCommand::Link { user, hours }) => link(store, config, &user, hours).await?,
        Admin::User(UserCommand::Operator { user, off }) => {
            let user = accounts::find_user(store, &user).await.map_err(cli_error)?;
            accounts::set_operator(store, cli, &user.id, !off).await.map_err(cli_error)?;
            format!("{} is {} operator", user.name, if off { "no longer an" } else { "an" })
        }
        Admin::User(UserCommand::Password { user, email }) => {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).context("reading the password from standard input")?;
            let found = accounts::find_user(store, &user).await.map_err(cli_error)?;
            let password = line.trim_end_matches(['\r', '\n']);
            let email = accounts::set_password(store, cli, &found.id, &email, password).await.map_err(cli_error)?;
            format!("{} signs in to the console as {email}", found.name)
        }
        Admin::Token(TokenCommand::Create { user, days }) => {
            operations::create_token(store, cli, &user, days).await.map_err(cli_error)?.1
        }
        Admin::Token(TokenCommand::Revoke { token_id_or_prefix }) => {
            let record = operations::revoke_token(store, cli, &token_id_or_prefix).await.map_err(cli_error)?;
            format!("revoked token {} ({}…)", record.id, record.prefix)
        }
        Admin::Credits(CreditsCommand::Set { user_or_group, credits }) => {
            match accounts::set_credits(store, cli, &user_or_group, credits).await.map_err(cli_error)? {
                Credits::User { name, credits, .. } => format!("user {name}: {credits} credits"),
                Credits::Group { name, credits, .. } => format!("group {name}: {credits} credits"),
            }
        }
        Admin::Job(JobCommand::Cancel { job_id }) => {
            let (id, renders, status) = operations::cancel_job(store, cli, &job_id).await.map_err(cli_error)?;
            format!("job {id}: {renders} videos cancelled; the job is {}", status.as_str())
        }
        Admin::Share(ShareCommand::List) => shares_table(&operations::shares(store, cli).await.map_err(cli_error)?),
        Admin::Share(ShareCommand::Set { user_or_group, weight, max_priority }) => {
            let share = operations::set_share(store, cli, &user_or_group, weight, max_priority.as_deref())
                .await
                .map_err(cli_error)?;
            shares_table(&[share])
        }
        Admin::Worker(WorkerCommand::List) => workers_table(&operations::workers(store, cli).await.map_err(cli_error)?),
        Admin::Worker(WorkerCommand::Disable { worker }) => {
            workers_table(&[operations::set_rotation(store, cli, &worker, false).await.map_err(cli_error)?])
        }
        Admin::Worker(WorkerCommand::Enable { worker }) => {
            workers_table(&[operations::set_rotation(store, cli, &worker, true).await.map_err(cli_error)?])
        }
        Admin::Usage { user } => usage::report(store, user.as_deref(), config.api.upload_quota_bytes).await?,
        Admin::Library(LibraryCommand::Create { name, kind, group }) => {
            let kind = match kind {
                LibraryKindArg::Public => SharedLibrary::Public,
                LibraryKindArg::Stock => SharedLibrary::Stock,
                LibraryKindArg::Group => SharedLibrary::Group(group.as_deref().unwrap_or_default()),
            };
            operations::create_library(store, cli, &name, kind).await.map_err(cli_error)?.id.into()
        }
    })
}

/// A use case's error as the command line says it: each invalid field on a line of its
/// own (`name: must be at most 100 characters`), else the error's message.
pub fn cli_error(e: AppError) -> anyhow::Error {
    match e {
        AppError::Invalid(errors) => {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::anyhow!("{}", lines.join("\n"))
        }
        e => anyhow::Error::new(e),
    }
}
