//! First run: an api process on an empty store (the embedded SQLite one unless asked,
//! `Config::bootstraps`) sets up what the first request needs, each part only if it is
//! missing, so every later start and every replica starting at the same moment leaves
//! what is there:
//! the user `owner` with credits, a token in `{data_dir}/owner.token` (mode 0600; shown
//! once, on the start that made it) and the example templates, public, under stable ids.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use reelfarm_backends::store::{AccountStore, StoreError, UserStore};
use reelfarm_backends::{Backends, Config, Store};
use reelfarm_domain::account::User;

pub mod examples;

/// The user the first run creates.
pub const OWNER: &str = "owner";
/// The owner's first credits.
const OWNER_CREDITS: i64 = 100;
/// Validity of the owner's token.
const TOKEN_DAYS: u32 = 365;
/// Validity of the owner's first console sign-in link.
const LINK_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// The example the first-run message renders.
pub const FIRST_EXAMPLE: &str = "quote-card";

/// What the bootstrap found or made.
#[derive(Debug)]
pub struct FirstRun {
    /// Where the owner's token is kept.
    pub token_file: PathBuf,
    /// The token, when this start created it (it is shown once).
    pub new_token: Option<String>,
    /// A one-time console sign-in link's token for the owner, made with the API token.
    pub sign_in_link: Option<String>,
    /// The example templates now in the store, by file stem.
    pub examples: Vec<&'static str>,
}

/// Sets up whatever of the owner, its token file and the examples is missing.
pub async fn run(config: &Config, backends: &Backends) -> anyhow::Result<FirstRun> {
    let owner = ensure_owner(backends.store()).await.context("creating the owner")?;
    let examples = examples::import_missing(backends.store(), backends.blobs(), config.worker.job_timeout).await?;
    // Last, after the slow part: a first start stopped before it ends makes no token it
    // did not show, and the next start shows one.
    let token_file = config.storage.data_dir.join("owner.token");
    let new_token = ensure_token_file(backends.store(), &owner, &token_file).await?;
    let sign_in_link = match new_token {
        Some(_) => {
            Some(backends.store().create_sign_in_link(&owner.id, LINK_TTL).await.context("the owner's sign-in link")?)
        }
        None => None,
    };
    Ok(FirstRun { token_file, new_token, sign_in_link, examples })
}

/// The user `owner`, created with credits unless it exists (a replica creating it at the
/// same moment wins without failing this start).
async fn ensure_owner(store: &Store) -> anyhow::Result<User> {
    match store.find_user(OWNER).await {
        Ok(user) => return Ok(user),
        Err(StoreError::NotFound(_)) => {}
        Err(e) => return Err(e.into()),
    }
    match store.create_user(OWNER, None, OWNER_CREDITS).await {
        Ok(user) => {
            store.set_operator(&user.id, true).await?;
            tracing::info!(user = %user.id, credits = OWNER_CREDITS, "first run: user `owner` (operator) created");
            Ok(user)
        }
        Err(StoreError::Conflict(_)) => Ok(store.find_user(OWNER).await?),
        Err(e) => Err(e.into()),
    }
}

/// Creates a token for `owner` into `path` unless the file exists; returns the new token.
/// The file is created with mode 0600 (never widened and narrowed after), and claimed
/// before the token is made, so two processes never both write one. An existing file
/// others may read is narrowed to 0600, with a warning.
async fn ensure_token_file(store: &Store, owner: &User, path: &Path) -> anyhow::Result<Option<String>> {
    let shown = path.display();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let claimed = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
    let mut file = match claimed {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            keep_private(path)?;
            check_token(store, owner, path).await;
            return Ok(None);
        }
        Err(e) => return Err(e).with_context(|| format!("creating {shown}")),
    };
    let written = async {
        let (_, token) = store.create_token(&owner.id, TOKEN_DAYS).await?;
        file.write_all(format!("{token}\n").as_bytes())?;
        file.sync_all()?;
        anyhow::Ok(token)
    }
    .await;
    match written {
        Ok(token) => Ok(Some(token)),
        Err(e) => {
            // An empty file would stop every later start from making a token.
            let _ = std::fs::remove_file(path);
            Err(e.context(format!("writing the owner's token to {shown}")))
        }
    }
}

/// Narrows an existing token file to 0600 when its group or others may read it.
fn keep_private(path: &Path) -> anyhow::Result<()> {
    let mode = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("narrowing {} to mode 0600", path.display()))?;
        tracing::warn!(file = %path.display(), mode = format!("{:o}", mode & 0o777), "the token file was readable by others: now 0600");
    }
    Ok(())
}

/// Warns when the kept token no longer opens the owner's account (revoked, expired, or a
/// data directory kept while the store was replaced): deleting the file makes a new one.
async fn check_token(store: &Store, owner: &User, path: &Path) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let valid = matches!(store.authenticate(text.trim()).await, Ok(Some((user, _))) if user.id == owner.id);
    if !valid {
        tracing::warn!(
            file = %path.display(),
            "the token in this file does not open the `owner` account (revoked, expired or from another store); \
             delete the file and restart for a new one"
        );
    }
}

impl FirstRun {
    /// What `serve` prints once the api is ready at `base` (`http://host:port`): on the
    /// start that made the token, the token and ready `curl` lines; later, where it is.
    pub fn message(&self, base: &str) -> String {
        let file = shell_word(&absolute(&self.token_file).display().to_string());
        let auth = format!("-H \"Authorization: Bearer $(cat {file})\"");
        let mut out = format!("\nreelfarm is ready: {base}\n");
        let Some(token) = &self.new_token else {
            out.push_str(&format!("The owner's API token is in {file}\n"));
            return out;
        };
        out.push_str(&format!(
            "\nFirst run: user `{OWNER}` ({OWNER_CREDITS} credits) can call the API with this token, shown once \
             and kept in {file} (mode 0600):\n  {token}\n"
        ));
        if let Some(link) = &self.sign_in_link {
            out.push_str(&format!(
                "Open the console (a one-time sign-in link, valid 24 hours; then set an e-mail address and a \
                 password on the account page):\n  {base}/console/sign-in/link/{link}\n"
            ));
        }
        if !self.examples.is_empty() {
            out.push_str(&format!(
                "{} example templates are public to every user: curl {auth} {base}/generator/v1/templates\n",
                self.examples.len()
            ));
        }
        if self.examples.contains(&FIRST_EXAMPLE) {
            let body = format!(
                r#"{{"template_id": "{}", "options": {{"quality": "720p"}}, "values": [{{"external_id": "first"}}]}}"#,
                examples::template_id(FIRST_EXAMPLE)
            );
            out.push_str(&format!(
                "\nRender the {FIRST_EXAMPLE} example (prints the job; its \"id\" is JOB_ID):\n  \
                 curl {auth} -H 'Content-Type: application/json' \\\n    -d '{body}' \\\n    {base}/generator/v1/jobs\n\
                 Poll the job until \"status\" is \"finished\"; the video's \"url\" is the MP4:\n  \
                 curl {auth} {base}/generator/v1/jobs/JOB_ID\n"
            ));
        }
        out
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `s` as one shell word: as it is when that is safe, else single-quoted.
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(shell_word("/srv/reelfarm-data/owner.token"), "/srv/reelfarm-data/owner.token");
        assert_eq!(shell_word("/home/ann/my data/owner.token"), "'/home/ann/my data/owner.token'");
        assert_eq!(shell_word("/tmp/it's"), r"'/tmp/it'\''s'");
    }

    #[test]
    fn the_token_is_shown_on_the_first_run_only() {
        let first = FirstRun {
            token_file: PathBuf::from("/d/owner.token"),
            new_token: Some("rf_secret".into()),
            sign_in_link: Some("link-token".into()),
            examples: examples::EXAMPLES.iter().map(|e| e.stem).collect(),
        };
        let shown = first.message("http://127.0.0.1:8080");
        assert!(
            shown.contains("rf_secret") && shown.contains(examples::template_id(FIRST_EXAMPLE).as_str()),
            "{shown}"
        );
        assert!(shown.contains("$(cat /d/owner.token)"), "{shown}");
        assert!(shown.contains("http://127.0.0.1:8080/console/sign-in/link/link-token"), "{shown}");
        let later = FirstRun { new_token: None, sign_in_link: None, ..first };
        let shown = later.message("http://127.0.0.1:8080");
        assert!(!shown.contains("rf_secret") && shown.contains("/d/owner.token"), "{shown}");
        assert!(!shown.contains("sign-in/link"), "{shown}");
    }
}
