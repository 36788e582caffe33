//! deploy/ against the binary: every `REELFARM_*` variable the deployment files (and the
//! README and docs/) use is one the binary reads, `deploy/.env.example` lists every key, and the
//! configurations of compose and Kubernetes pass the binary's own validation as a
//! distributed deployment. `reelfarm migrate` migrates and exits.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use reelfarm_backends::config::{BlobLocation, ENV_PREFIX, KEYS};
use reelfarm_backends::Config;

use super::reelfarm;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The configuration's variables: `REELFARM_` + each key.
fn keys() -> BTreeSet<String> {
    KEYS.iter().map(|k| format!("{ENV_PREFIX}{}", k.name.to_ascii_uppercase())).collect()
}

/// Every variable the binary reads: the keys, and the two the command line reads
/// (`REELFARM_CONFIG`, the file; `REELFARM_LOADTEST_TOKEN`, `loadtest`'s token).
fn accepted() -> BTreeSet<String> {
    let mut names = keys();
    names.insert(format!("{ENV_PREFIX}CONFIG"));
    // Read by tools and tests, not by the service (docs name them).
    for tool in ["BUNDLE_FFMPEG", "FUZZ_CASES", "FUZZ_SEED", "LOADTEST_TOKEN", "UPDATE_SNAPSHOTS", "WRITE_SCHEMA"] {
        names.insert(format!("{ENV_PREFIX}{tool}"));
    }
    names
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out)
        } else {
            out.push(path)
        }
    }
}

/// The `REELFARM_*` names in a text.
fn variables_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(ENV_PREFIX) {
        let tail = &rest[at..];
        let end =
            tail.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap_or(tail.len());
        let name = tail[..end].trim_end_matches('_');
        if name.len() > ENV_PREFIX.len() {
            found.insert(name.to_string());
        }
        rest = &tail[end.max(1)..];
    }
    found
}

/// The configuration tables (docs/configuration.md) show every key under the heading of
/// its section, with the default the binary has (`KEYS` declares each once):
/// `` `DEFAULT` `` first in its column, or `empty`.
#[test]
fn the_configuration_tables_show_every_key_in_its_section_with_its_default() {
    let readme = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let mut wrong = Vec::new();
    for key in KEYS {
        let variable = format!("`{ENV_PREFIX}{}`", key.name.to_ascii_uppercase());
        let mut section = "";
        let row = readme.lines().find(|l| {
            if let Some(heading) = l.strip_prefix("### `[").and_then(|h| h.strip_suffix("]`")) {
                section = heading;
            }
            l.starts_with(&format!("| {variable} |"))
        });
        let Some(row) = row else {
            wrong.push(format!("{variable}: no row"));
            continue;
        };
        if section != key.section {
            wrong.push(format!("{variable}: shown under [{section}], read from [{}]", key.section));
        }
        let shown = row.split('|').nth(2).unwrap_or_default().trim();
        let expected = match key.default {
            Some("") => "empty".to_string(),
            Some(default) => format!("`{default}`"),
            None => continue,
        };
        if !shown.starts_with(&expected) {
            wrong
                .push(format!("{variable}: docs/configuration.md shows {shown:?}, the binary's default is {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn deploy_files_and_the_readme_use_only_variables_the_binary_reads() {
    let mut files = Vec::new();
    files_under(&root().join("deploy"), &mut files);
    files.push(root().join("README.md"));
    let mut docs = Vec::new();
    files_under(&root().join("docs"), &mut docs);
    files.extend(docs.into_iter().filter(|f| f.extension().is_some_and(|e| e == "md")));
    files.push(root().join(".dockerignore"));
    assert!(files.len() > 10, "deploy/ holds the Dockerfile, compose and k8s files: {files:?}");
    let accepted = accepted();
    let mut unknown = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for name in variables_in(&text) {
            if !accepted.contains(&name) {
                unknown.push(format!("{} in {}", name, file.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "variables the binary does not read (shared/backends/src/config/mod.rs KEYS): {unknown:#?}"
    );
}

/// `KEY=VALUE` lines of an env file; commented-out keys (`# KEY=…`) are returned apart.
fn env_file(path: &Path) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut set, mut mentioned) = (BTreeMap::new(), BTreeSet::new());
    for line in text.lines().map(str::trim) {
        if let Some(commented) = line.strip_prefix('#') {
            if let Some((key, _)) = commented.trim().split_once('=') {
                mentioned.insert(key.to_string());
            }
        } else if let Some((key, value)) = line.split_once('=') {
            assert!(
                set.insert(key.to_string(), value.to_string()).is_none(),
                "{key} is set twice in {}",
                path.display()
            );
        }
    }
    (set, mentioned)
}

/// Asserts that `env` is a valid distributed configuration: the binary's validation
/// accepts it and it names PostgreSQL, RabbitMQ, Redis and an S3 bucket.
/// What the one-liner of docs/deploy.md makes (`head -c 32 /dev/urandom | base64`).
const GENERATED_KEY: &str = "kQ3v9Zp1Xw7Lr2Bt5Nc8Md4Hf6Jg0SaYe+T1uWcQ7a8=";

fn assert_distributed(env: &BTreeMap<String, String>, what: &str) {
    for required in ["SECRET_KEY", "DATABASE_URL", "BUS_URL", "BLOB_URL", "REDIS_URL"] {
        let name = format!("{ENV_PREFIX}{required}");
        assert!(env.get(&name).is_some_and(|v| !v.is_empty()), "{what} must set {name}");
    }
    let config = Config::from_sources(None, env.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(config.storage.database_url.starts_with("postgres://"), "{what}: {}", config.storage.database_url);
    assert!(
        config.bus.amqp_url.is_some() && config.storage.redis_url.is_some(),
        "{what}: bus and cache are distributed"
    );
    assert!(matches!(config.storage.blob, BlobLocation::S3 { .. }), "{what}: blobs in S3");
    assert_eq!(config.api.listen.ip().to_string(), "0.0.0.0", "{what}: listens on every interface of the container");
    for aws in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
        assert!(env.contains_key(aws), "{what} must give the S3 credentials ({aws})");
    }
}

#[test]
fn compose_env_file_lists_every_key_and_is_a_valid_distributed_configuration() {
    let path = root().join("deploy/.env.example");
    let (set, mentioned) = env_file(&path);
    let missing: Vec<String> = keys().into_iter().filter(|n| !set.contains_key(n) && !mentioned.contains(n)).collect();
    assert!(missing.is_empty(), "deploy/.env.example must list every key (set or commented out): {missing:?}");
    // The example's key is a placeholder the binary refuses; with a generated key (the
    // one-liner of docs/deploy.md) it is a valid distributed configuration.
    let mut generated = set.clone();
    assert!(Config::from_sources(None, generated.clone()).is_err(), "the placeholder key is refused");
    generated.insert("REELFARM_SECRET_KEY".into(), GENERATED_KEY.into());
    assert_distributed(&generated, "deploy/.env.example with a generated key");

    let compose = std::fs::read_to_string(root().join("deploy/compose.yaml")).unwrap();
    assert!(compose.contains("env_file: ${ENV_FILE:-.env}"), "compose reads deploy/.env");
    for role in ["[\"serve\", \"api\"]", "[\"serve\", \"worker\"]", "[\"serve\", \"notifier\"]", "[\"migrate\"]"] {
        assert!(compose.contains(role), "compose runs {role}");
    }
}

/// `KEY: value` entries of the flat maps (`data:`, `stringData:`) of a manifest, and the
/// `- KEY=value` literals of a kustomize generator.
fn manifest_env(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut env = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        let entry = line
            .strip_prefix("- ")
            .and_then(|l| l.split_once('='))
            .or_else(|| line.split_once(": "))
            .filter(|(k, _)| k.starts_with(ENV_PREFIX) || k.starts_with("AWS_") || *k == "RUST_LOG");
        if let Some((key, value)) = entry {
            env.insert(key.to_string(), value.trim().trim_matches('"').to_string());
        }
    }
    env
}

#[test]
fn kubernetes_config_map_and_secrets_are_valid_distributed_configurations() {
    let k8s = root().join("deploy/k8s");
    let config_map = manifest_env(&k8s.join("base/configmap.yaml"));
    // Production: the base ConfigMap, the prod overlay's changes and the Secret template.
    let mut prod = config_map.clone();
    prod.extend(manifest_env(&k8s.join("overlays/prod/patches.yaml")));
    prod.extend(manifest_env(&k8s.join("secret.template.yaml")));
    assert!(Config::from_sources(None, prod.clone()).is_err(), "the template's placeholder key is refused");
    prod.insert("REELFARM_SECRET_KEY".into(), GENERATED_KEY.into());
    assert_distributed(&prod, "base ConfigMap + prod overlay + secret.template.yaml with a generated key");
    // Development: the dev overlay's ConfigMap changes and generated Secret.
    let mut dev = config_map;
    dev.extend(manifest_env(&k8s.join("overlays/dev/patches.yaml")));
    dev.extend(manifest_env(&k8s.join("overlays/dev/kustomization.yaml")));
    assert_distributed(&dev, "base ConfigMap + dev overlay");
}

#[test]
fn readme_deploy_instructions_name_files_that_exist() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut named = BTreeSet::new();
    for (at, _) in readme.match_indices("deploy/") {
        let start = readme[..at].rfind(|c: char| c.is_whitespace() || "`([".contains(c)).map_or(0, |i| i + 1);
        let tail = &readme[start..];
        let end = tail.find(|c: char| c.is_whitespace() || "`)]".contains(c)).unwrap_or(tail.len());
        named.insert(tail[..end].trim_end_matches(['.', ',', ':']).to_string());
    }
    let docs: BTreeSet<String> =
        named.iter().filter(|p| p.starts_with("deploy/") || p.starts_with("docs/")).cloned().collect();
    assert!(docs.contains("deploy/compose.yaml"), "README names the compose file: {named:?}");
    // deploy/.env is the file the README has the reader make (git-ignored).
    for path in docs.iter().filter(|p| *p != "deploy/.env") {
        let path = path.split_once('#').map_or(path.as_str(), |(p, _)| p);
        assert!(root().join(path).exists(), "README names {path}, which does not exist");
    }
}

#[test]
fn migrate_applies_the_migrations_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let out = reelfarm(dir.path(), 0).arg("migrate").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "metadata store migrated");
    }
    assert!(dir.path().join("reelfarm.db").exists(), "the embedded database was created");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let database = runtime.block_on(reelfarm_backends::testing::fresh_postgres_database());
    let out = reelfarm(dir.path(), 0)
        .env("REELFARM_DATABASE_URL", &database)
        .env("REELFARM_SECRET_KEY", "a-secret-key-of-at-least-32-characters")
        .arg("migrate")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let applied = std::process::Command::new("psql")
        .args([database.as_str(), "-Atc", "SELECT count(*) FROM _sqlx_migrations WHERE success"])
        .output()
        .expect("psql is installed (scripts/setup)");
    let count: u32 = String::from_utf8_lossy(&applied.stdout).trim().parse().unwrap();
    let files = std::fs::read_dir(root().join("shared/backends/migrations"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sql"))
        .count() as u32;
    assert_eq!(count, files, "every migration applied");

    let out = reelfarm(dir.path(), 0)
        .env("REELFARM_DATABASE_URL", "postgres://postgres@127.0.0.1:1/nowhere")
        .env("REELFARM_SECRET_KEY", "a-secret-key-of-at-least-32-characters")
        .arg("migrate")
        .output()
        .unwrap();
    assert!(!out.status.success(), "an unreachable database fails the migration");
}
