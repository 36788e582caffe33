//! `reelfarm bench upload`: streams a large generated body through the signed-upload PUT
//! of a separate `serve api` process and reports that process's peak resident memory.
//! Bar (issue: asset libraries): ≤ 64 MiB resident while streaming 4 GiB into S3.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures::StreamExt;
use reelfarm_backends::{Config, Store};

use super::{mib, rss_of};
use reelfarm_backends::store::UserStore;

/// Memory bar of the upload path.
const BAR: u64 = 64 * 1024 * 1024;

pub async fn run(config: &Config, size_mib: u64) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let database_url = format!("sqlite://{}/bench.db", dir.path().display());
    // The api under test: same configuration (blob store!), its own port and database.
    let mut child = super::this_binary()?
        .args(["serve", "api"])
        .env("REELFARM_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("REELFARM_PUBLIC_URL")
        .env("REELFARM_DATA_DIR", dir.path())
        .env("REELFARM_DATABASE_URL", &database_url)
        .env("REELFARM_BUS_URL", "local")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("starting `reelfarm serve api`")?;
    let result = measure(config, &database_url, port, child.id(), size_mib).await;
    let _ = child.kill();
    let _ = child.wait();
    result
}

async fn measure(config: &Config, database_url: &str, port: u16, pid: u32, size_mib: u64) -> anyhow::Result<()> {
    let base = format!("http://127.0.0.1:{port}");
    super::wait_for_api(port).await?;
    let store = Store::connect(database_url).await?;
    let user = store.create_user("bench", None, 0).await?;
    let (_, token) = store.create_token(&user.id, 1).await?;
    let client = reqwest::Client::new();
    let added: serde_json::Value = client
        .post(format!("{base}/api2/v1/objects"))
        .bearer_auth(&token)
        .form(&[("filename", "bench.bin")])
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let url = added["url"].as_str().context("upload url")?.to_string();

    let blob = match &config.storage.blob {
        reelfarm_backends::config::BlobLocation::S3 { bucket, endpoint, .. } => {
            format!("s3 bucket {bucket} at {}", endpoint.as_deref().unwrap_or("AWS"))
        }
        reelfarm_backends::config::BlobLocation::Dir(dir) => format!("local directory {}", dir.display()),
    };
    let size = size_mib * 1024 * 1024;
    println!("upload bench: streaming {} through PUT /uploads into the {blob}", mib(size));
    let baseline = rss_of(pid).context("reading the api's memory")?.1;

    // 1 MiB of varied bytes, sent `size_mib` times: constant memory on the client too.
    let chunk: bytes::Bytes = (0..1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let body = futures::stream::iter(0..size_mib).map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        while let Some((_, rss)) = rss_of(pid) {
            peak = peak.max(rss);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        peak
    });
    let started = Instant::now();
    let res = client.put(&url).body(reqwest::Body::wrap_stream(body)).send().await?;
    let elapsed = started.elapsed();
    let status = res.status();
    let text = res.text().await?;
    let (hwm, _) = rss_of(pid).context("reading the api's memory")?;
    sampler.abort();
    if !status.is_success() {
        bail!("upload failed: {status} {text}");
    }
    println!("  time        {:.1} s ({:.0} MiB/s)", elapsed.as_secs_f64(), size_mib as f64 / elapsed.as_secs_f64());
    println!(
        "  api RSS     idle {}, peak {} (the upload path's own: {})",
        mib(baseline),
        mib(hwm),
        mib(hwm.saturating_sub(baseline))
    );
    println!("  bar         peak ≤ {}: {}", mib(BAR), if hwm <= BAR { "PASS" } else { "FAIL" });
    Ok(())
}
