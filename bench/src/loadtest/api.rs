//! The deployment's public API, as the load test calls it.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

/// Longest one API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    base: String,
    token: String,
}

/// Why a job was not created: the error key of the answer (the service's error shape), or
/// `http.<status>` / `transport` when there was none.
#[derive(Debug, Clone)]
pub struct Refused {
    pub key: String,
    pub message: String,
}

impl Api {
    pub fn new(base: &str, token: &str) -> anyhow::Result<Api> {
        let client = reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build()?;
        Ok(Api { client, base: base.to_string(), token: token.to_string() })
    }

    async fn get(&self, path: &str) -> Result<Value, Refused> {
        answer(self.client.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await).await
    }

    /// The caller's remaining credits (also checks the address and the token).
    pub async fn credits(&self) -> anyhow::Result<i64> {
        let body = self
            .get("/generator/v1/users/me/credits")
            .await
            .map_err(|r| r.into_error(&format!("reading the credits at {}", self.base)))?;
        body["credits"].as_i64().context("the credits answer has no `credits` number")
    }

    /// Fails unless the caller can see template `id`.
    pub async fn check_template(&self, id: &str) -> anyhow::Result<()> {
        self.get(&format!("/generator/v1/templates/{id}"))
            .await
            .map(drop)
            .map_err(|r| r.into_error(&format!("template {id}")))
    }

    pub async fn create_job(&self, body: &Value) -> Result<Value, Refused> {
        let sent = self.client.post(format!("{}/generator/v1/jobs", self.base)).bearer_auth(&self.token).json(body);
        answer(sent.send().await).await
    }

    pub async fn job(&self, id: &str) -> Result<Value, Refused> {
        self.get(&format!("/generator/v1/jobs/{id}")).await
    }
}

impl Refused {
    fn into_error(self, what: &str) -> anyhow::Error {
        anyhow::anyhow!("{what}: {} ({})", self.message, self.key)
    }
}

async fn answer(sent: reqwest::Result<reqwest::Response>) -> Result<Value, Refused> {
    let transport = |e: reqwest::Error| Refused { key: "transport".into(), message: e.to_string() };
    let response = sent.map_err(transport)?;
    let status = response.status();
    let body = response.bytes().await.map_err(transport)?;
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    if status.is_success() {
        return json.ok_or_else(|| Refused { key: "invalid_json".into(), message: "the answer is not JSON".into() });
    }
    let field = |name: &str| json.as_ref().and_then(|j| j[name].as_str()).map(str::to_string);
    Err(Refused {
        key: field("key").unwrap_or_else(|| format!("http.{}", status.as_u16())),
        message: field("message").unwrap_or_else(|| format!("HTTP {status}")),
    })
}
