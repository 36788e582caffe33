//! Test harness shared by the end-to-end tests: the real service started in process on a
//! free loopback port, in embedded mode (SQLite, local files, in-process bus, in-memory
//! cache) or distributed mode (PostgreSQL, RabbitMQ, Redis, Garage), each test with its
//! own database, queue namespace, cache namespace and bucket prefix.

pub mod browser;
pub mod files;
pub mod google;
pub mod google_tts;
pub mod loopback;
pub mod media;
pub mod polly;
pub mod smtp;

use std::time::Duration;

use reelfarm_backends::store::UserStore;
use reelfarm_backends::Config;
use reelfarm_domain::account::User;
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_server::admin::template::{import, ImportOptions};
pub use reelfarm_server::cli::Role;
use reelfarm_server::serve::Service;
use serde_json::Value;

/// Which backends a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Embedded,
    Distributed,
}

/// Generates, for each named `async fn NAME(mode: Mode)`, a module `NAME` with the tests
/// `embedded` and `distributed`: the same suite against both modes.
#[macro_export]
macro_rules! both_modes {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                super::$name($crate::Mode::Embedded).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn distributed() {
                super::$name($crate::Mode::Distributed).await
            }
        }
    )*};
}

/// A running service and a client for it.
pub struct TestApp {
    pub mode: Mode,
    /// `http://127.0.0.1:PORT`
    pub address: String,
    pub client: reqwest::Client,
    pub service: Service,
    pub config: Config,
    _data_dir: tempfile::TempDir,
    /// Declared last: dropped after the service.
    _namespace: NamespaceGuard,
}

/// Deletes a distributed test deployment's RabbitMQ queues and exchanges when dropped
/// (also when the test panics).
struct NamespaceGuard(Option<String>);

impl Drop for NamespaceGuard {
    fn drop(&mut self) {
        let Some(namespace) = self.0.take() else { return };
        // Drop cannot await, and the test's runtime may be the one dropping us: clean up on
        // a thread with a runtime of its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(reelfarm_backends::testing::delete_amqp_namespace(&namespace));
        });
        let _ = cleanup.join();
    }
}

/// The `reelfarm` binary of this build (`target/<profile>/reelfarm`, beside the `deps/`
/// directory this test binary is in), which `cargo nextest run --workspace` builds.
pub fn reelfarm_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let binary = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps").join("reelfarm");
    assert!(binary.exists(), "{} is missing: build it first (cargo build --bin reelfarm)", binary.display());
    binary
}

/// The `REELFARM_*` settings of a fresh isolated deployment in `mode`.
pub async fn test_env(mode: Mode, data_dir: &std::path::Path, port: u16) -> Vec<(String, String)> {
    let mut env = vec![
        ("REELFARM_LISTEN".to_string(), format!("127.0.0.1:{port}")),
        ("REELFARM_DATA_DIR".to_string(), data_dir.display().to_string()),
        ("REELFARM_OUTBOUND_ALLOW".to_string(), "127.0.0.1".to_string()),
        ("REELFARM_WEBHOOK_RETRY_SCHEDULE".to_string(), "0s,200ms,200ms,200ms".to_string()),
        ("REELFARM_RETRY_DELAY".to_string(), "50ms".to_string()),
        // No owner, token file or example templates: each test makes what it needs.
        ("REELFARM_BOOTSTRAP".to_string(), "off".to_string()),
        // The service runs in this test process; its sandboxed children are the binary's.
        ("REELFARM_SANDBOX_PROGRAM".to_string(), reelfarm_binary().display().to_string()),
    ];
    if mode == Mode::Distributed {
        let namespace = format!("t{}", uuid::Uuid::new_v4().simple());
        let mut s3 = url::Url::parse(&reelfarm_backends::testing::s3_url()).expect("REELFARM_TEST_S3_URL is a URL");
        s3.set_path(&namespace);
        env.extend([
            ("REELFARM_DATABASE_URL".to_string(), reelfarm_backends::testing::fresh_postgres_database().await),
            ("REELFARM_BUS_URL".to_string(), reelfarm_backends::testing::amqp_url()),
            ("REELFARM_REDIS_URL".to_string(), reelfarm_backends::testing::redis_url()),
            ("REELFARM_BLOB_URL".to_string(), s3.to_string()),
            ("REELFARM_NAMESPACE".to_string(), namespace),
            ("REELFARM_SECRET_KEY".to_string(), "test-secret-key-for-every-replica-0123456789".to_string()),
        ]);
    }
    env
}

impl TestApp {
    /// Starts `serve all` in `mode`.
    pub async fn spawn(mode: Mode) -> TestApp {
        TestApp::spawn_with(mode, &[]).await
    }

    /// Starts `serve all` in `mode` with extra `REELFARM_*` settings.
    pub async fn spawn_with(mode: Mode, extra: &[(&str, &str)]) -> TestApp {
        TestApp::spawn_role(mode, Role::All, extra).await
    }

    /// Starts `role` (which must serve the api) in `mode` with extra settings.
    pub async fn spawn_role(mode: Mode, role: Role, extra: &[(&str, &str)]) -> TestApp {
        log_warnings();
        let data_dir = tempfile::tempdir().unwrap();
        // Port 0: the system picks a free port as the api binds it (no race with another
        // test for a port found free a moment before).
        let mut env = test_env(mode, data_dir.path(), 0).await;
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let config = Config::from_sources(None, env).expect("test configuration is valid");
        let service = Service::start(role, config).await.expect("service starts");
        // What it bound: a restart binds the same address again.
        let config = service.config.clone();
        let address = format!("http://127.0.0.1:{}", service.api_port.expect("serve all serves the api"));
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let namespace = NamespaceGuard((mode == Mode::Distributed).then(|| config.bus.namespace.clone()));
        TestApp { mode, address, client, service, config, _data_dir: data_dir, _namespace: namespace }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// Creates a user (as `reelfarm admin user create` does).
    pub async fn create_user(&self, name: &str, group: Option<&str>, credits: i64) -> User {
        self.service.backends.store().create_user(name, group, credits).await.unwrap()
    }

    /// A fresh token for `user` (as `reelfarm admin token create` does).
    pub async fn token_for(&self, user: &User) -> String {
        self.service.backends.store().create_token(&user.id, 365).await.unwrap().1
    }

    /// A new user `name` with `credits` and a token, owning `template` (a template document
    /// whose files are in `dir`), imported as `reelfarm admin template import` does.
    pub async fn maker(
        &self,
        name: &str,
        credits: i64,
        dir: &std::path::Path,
        template: &Value,
    ) -> (String, TemplateRecord) {
        let file = dir.join("template.json");
        std::fs::write(&file, serde_json::to_vec_pretty(template).unwrap()).unwrap();
        let user = self.create_user(name, None, credits).await;
        let token = self.token_for(&user).await;
        (token, self.import_template(&file, Some(&user), false).await)
    }

    /// A new user with a token.
    pub async fn user_with_token(&self, name: &str) -> (User, String) {
        let user = self.create_user(name, None, 0).await;
        let token = self.token_for(&user).await;
        (user, token)
    }

    pub async fn get(&self, path: &str, token: &str) -> reqwest::Response {
        self.client.get(self.url(path)).bearer_auth(token).send().await.unwrap()
    }

    pub async fn post_form(&self, path: &str, token: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.client.post(self.url(path)).bearer_auth(token).form(form).send().await.unwrap()
    }

    /// Imports a template file as `reelfarm admin template import` does.
    pub async fn import_template(&self, file: &std::path::Path, owner: Option<&User>, public: bool) -> TemplateRecord {
        let options = ImportOptions {
            owner: owner.map(|u| u.name.clone()),
            public,
            time_limit: Duration::from_secs(120),
            limits: self.config.render,
        };
        let backends = &self.service.backends;
        import(backends.store(), backends.blobs(), file, &options).await.unwrap_or_else(|e| panic!("import: {e:#}"))
    }

    /// POSTs `body` as JSON, with extra headers.
    pub async fn post_json(
        &self,
        path: &str,
        token: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self.client.post(self.url(path)).bearer_auth(token).json(body);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        req.send().await.unwrap()
    }

    /// Polls the job until it is no longer `started` (120 s at most).
    pub async fn wait_for_job(&self, token: &str, id: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let job = json(self.get(&format!("/generator/v1/jobs/{id}"), token).await, 200).await;
            if job["status"] != "started" {
                return job;
            }
            assert!(std::time::Instant::now() < deadline, "job {id} still started after 120 s: {job}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Adds an object and uploads `file` to its signed address; returns the PUT's record.
    pub async fn upload(
        &self,
        token: &str,
        library_id: Option<&str>,
        file: &std::path::Path,
        content_type: &str,
    ) -> Value {
        let filename = file.file_name().unwrap().to_str().unwrap();
        let mut form = vec![("filename", filename)];
        if let Some(id) = library_id {
            form.push(("library_id", id));
        }
        let added = json(self.post_form("/api2/v1/objects", token, &form).await, 200).await;
        assert_eq!(added["data"]["status"], "created", "{added}");
        let body = std::fs::read(file).unwrap();
        let res = self.client.put(added["url"].as_str().unwrap()).header("content-type", content_type).body(body);
        json(res.send().await.unwrap(), 200).await
    }

    /// Polls the object until it is `finished` or `failed` (60 s at most).
    pub async fn wait_for_asset(&self, token: &str, id: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let asset = json(self.get(&format!("/api2/v1/objects/{id}"), token).await, 200).await;
            if asset["status"] == "finished" || asset["status"] == "failed" {
                return asset;
            }
            assert!(std::time::Instant::now() < deadline, "asset {id} still {} after 60 s", asset["status"]);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts another worker on the same backends, with its own data (work) directory,
    /// returned with that directory.
    pub async fn start_worker(&self) -> (Service, tempfile::TempDir) {
        self.start_role(Role::Worker).await
    }

    /// Starts another process of `role` on the same backends, with its own data
    /// directory, returned with that directory.
    pub async fn start_role(&self, role: Role) -> (Service, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = self.config.clone();
        config.storage.data_dir = dir.path().to_path_buf();
        (Service::start(role, config).await.expect("the role starts"), dir)
    }

    /// Stops the service and starts it again on the same backends, data and address, as
    /// a restart of the process would.
    pub async fn restart(self) -> TestApp {
        let TestApp { mode, address, client, service, config, _data_dir, _namespace } = self;
        service.stop();
        tokio::time::timeout(Duration::from_secs(30), service.wait())
            .await
            .expect("service stops within 30 s")
            .expect("service stops cleanly");
        let service = Service::start(Role::All, config.clone()).await.expect("service starts again");
        TestApp { mode, address, client, service, config, _data_dir, _namespace }
    }

    /// Stops the service and waits for it to drain.
    pub async fn stop(self) {
        self.service.stop();
        tokio::time::timeout(Duration::from_secs(30), self.service.wait())
            .await
            .expect("service stops within 30 s")
            .expect("service stops cleanly");
    }
}

/// The JSON body of a response whose status must be `status`.
pub async fn json(res: reqwest::Response, status: u16) -> Value {
    let actual = res.status().as_u16();
    let text = res.text().await.unwrap();
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
}

/// Asserts the service's error shape with `key`, and returns the body.
pub async fn error(res: reqwest::Response, status: u16, key: &str) -> Value {
    let body = json(res, status).await;
    assert_eq!(body["key"], key, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    body
}

/// Sends the service's warnings and errors (or what `RUST_LOG` asks for) to the test's
/// captured output, which the runner shows when the test fails.
fn log_warnings() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
}
