//! `reelfarm admin …`: operator commands against the configured metadata store.

use anyhow::Context;
use reelfarm_backends::store::{
    AccountShare, Credits, LibraryKind, LibraryOwner, ShareTarget, StoreError, User, WorkerRecord,
};
use reelfarm_backends::{Blobs, Config, Store};
use reelfarm_domain::id::{iso8601, now_ms, JobId, TemplateId};
use reelfarm_domain::password;

use crate::cli::{
    Admin, CreditsCommand, JobCommand, LibraryCommand, LibraryKindArg, ShareCommand, TemplateCommand, TokenCommand,
    UserCommand, WorkerCommand,
};

pub mod template;
pub mod usage;

pub async fn run(command: Admin, config: Config) -> anyhow::Result<()> {
    let store = Store::connect(&config.database_url).await.context("metadata store")?;
    let result = execute(command, &store, &config).await;
    store.close().await;
    println!("{}", result?);
    Ok(())
}

/// Validity of the sign-in link `user create --sign-in-link` prints.
const LINK_HOURS: u32 = 24;

/// A one-time console sign-in link for `user`, valid for `hours`.
pub async fn link(store: &Store, config: &Config, user: &User, hours: u32) -> anyhow::Result<String> {
    let token = store.create_sign_in_link(&user.id, std::time::Duration::from_secs(u64::from(hours) * 3600)).await?;
    Ok(config.sign_in_link(&token))
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
    Ok(match command {
        Admin::Template(TemplateCommand::Import { file, owner, public }) => {
            let blobs = Blobs::connect(&config.blob, &config.public_url).await.context("blob store")?;
            let options =
                template::ImportOptions { owner, public, time_limit: config.job_timeout, limits: config.render_limits };
            template::import(store, &blobs, &file, &options).await?.id.into()
        }
        Admin::Template(TemplateCommand::Share { template_id, user_or_group }) => {
            let template_id = TemplateId::parse(&template_id).ok_or(StoreError::NotFound("template"))?;
            let template = store.template(&template_id).await?;
            let (target, shown) = match store.find_user(&user_or_group).await {
                Ok(user) => (ShareTarget::User(user.id), format!("user {}", user.name)),
                Err(StoreError::NotFound(_)) => {
                    let group = store.find_group(&user_or_group).await.map_err(|e| match e {
                        StoreError::NotFound(_) => StoreError::NotFound("user or group"),
                        e => e,
                    })?;
                    (ShareTarget::Group(group.id), format!("group {}", group.name))
                }
                Err(e) => return Err(e.into()),
            };
            store.share_template(&template.id, &target).await?;
            format!("template {} shared with {shown}", template.id)
        }
        Admin::User(UserCommand::Create { name, group, credits, email, operator, sign_in_link }) => {
            anyhow::ensure!(!name.trim().is_empty(), "user name must not be empty");
            anyhow::ensure!(credits >= 0, "credits must not be negative");
            let email = match email {
                Some(e) => Some(password::normalize_email(&e).context("--email is not an e-mail address")?),
                None => None,
            };
            if let Some(email) = &email {
                anyhow::ensure!(store.sign_in_of(email).await?.is_none(), "another user signs in as {email}");
            }
            let user = store.create_user(name.trim(), group.as_deref(), credits).await?;
            if operator {
                store.set_operator(&user.id, true).await?;
            }
            if let Some(email) = &email {
                store.set_sign_in(&user.id, email, password::unusable_hash()).await?;
            }
            match sign_in_link {
                true => format!("{}\n{}", user.id, link(store, config, &user, LINK_HOURS).await?),
                false => user.id.into(),
            }
        }
        Admin::User(UserCommand::Link { user, hours }) => {
            anyhow::ensure!((1..=24 * 30).contains(&hours), "--hours must be 1 to 720");
            let user = store.find_user(&user).await?;
            link(store, config, &user, hours).await?
        }
        Admin::User(UserCommand::Operator { user, off }) => {
            let user = store.find_user(&user).await?;
            store.set_operator(&user.id, !off).await?;
            format!("{} is {} operator", user.name, if off { "no longer an" } else { "an" })
        }
        Admin::User(UserCommand::Password { user, email }) => {
            let email = password::normalize_email(&email).context("--email is not an e-mail address")?;
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).context("reading the password from standard input")?;
            let hash = password::hash(line.trim_end_matches(['\r', '\n']))?;
            let user = store.find_user(&user).await?;
            store.set_sign_in(&user.id, &email, &hash).await?;
            format!("{} signs in to the console as {email}", user.name)
        }
        Admin::Token(TokenCommand::Create { user, days }) => {
            anyhow::ensure!(days > 0, "--days must be at least 1");
            let user = store.find_user(&user).await?;
            store.create_token(&user.id, days).await?.1
        }
        Admin::Token(TokenCommand::Revoke { token_id_or_prefix }) => {
            let record = store.revoke_token(&token_id_or_prefix).await?;
            format!("revoked token {} ({}…)", record.id, record.prefix)
        }
        Admin::Credits(CreditsCommand::Set { user_or_group, credits }) => {
            anyhow::ensure!(credits >= 0, "credits must not be negative");
            match store.set_credits(&user_or_group, credits).await? {
                Credits::User { name, credits, .. } => format!("user {name}: {credits} credits"),
                Credits::Group { name, credits, .. } => format!("group {name}: {credits} credits"),
            }
        }
        Admin::Job(JobCommand::Cancel { job_id }) => {
            let id = JobId::parse(&job_id).ok_or(StoreError::NotFound("job"))?;
            let renders = store.cancel_job(&id).await?;
            let job = store.job_alone(&id).await?;
            format!("job {id}: {renders} videos cancelled; the job is {}", job.status.as_str())
        }
        Admin::Share(ShareCommand::List) => shares_table(&store.shares().await?),
        Admin::Share(ShareCommand::Set { user_or_group, weight, max_priority }) => {
            anyhow::ensure!(weight.is_some() || max_priority.is_some(), "give --weight, --max-priority or both");
            let cap = max_priority.map(|p| p.parse()).transpose().map_err(anyhow::Error::msg)?;
            shares_table(&[store.set_share(&user_or_group, weight, cap).await?])
        }
        Admin::Worker(WorkerCommand::List) => workers_table(&store.workers(now_ms() - 3_600_000).await?),
        Admin::Worker(WorkerCommand::Disable { worker }) => {
            workers_table(&[store.set_rotation(&worker, Some("taken out by an operator")).await?])
        }
        Admin::Worker(WorkerCommand::Enable { worker }) => workers_table(&[store.set_rotation(&worker, None).await?]),
        Admin::Usage { user } => usage::report(store, user.as_deref(), config.upload_quota_bytes).await?,
        Admin::Library(LibraryCommand::Create { name, kind, group }) => {
            anyhow::ensure!(!name.trim().is_empty(), "library name must not be empty");
            let (kind, owner) = match kind {
                LibraryKindArg::Public => (LibraryKind::Public, LibraryOwner::Operator),
                LibraryKindArg::Stock => (LibraryKind::Stock, LibraryOwner::Operator),
                LibraryKindArg::Group => {
                    let group = store.find_group(group.as_deref().unwrap_or_default()).await?;
                    (LibraryKind::Group, LibraryOwner::Group(group.id))
                }
            };
            store.create_library(name.trim(), kind, owner).await?.id.into()
        }
    })
}
