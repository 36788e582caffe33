//! `reelfarm bench console`: server time of the console's pages in a separate `serve api`
//! process over the configured backends, with a store holding 10,000 assets and 1,000
//! jobs of the signed-in user. Baselines measured in the same run: the JSON API reading
//! the same data (a page of a library's assets, a page of jobs). Bar: every
//! page p95 ≤ 100 ms.
//!
//! The requests come one at a time from this process on loopback, so a latency is the
//! page's server time plus a loopback round trip. The bench's user, assets and jobs stay
//! in the configured database; its queues (own namespace) are deleted at the end.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use reelfarm_backends::{Blobs, Config, Store};
use reelfarm_domain::asset::{AssetKind, Conversion};
use reelfarm_domain::id::{now_ms, JobId, LibraryId, RenderId, TemplateId, UserId};
use reelfarm_domain::job::{NewJob, NewRender, RenderOutcome};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::token::random_base62;

use crate::stats::Percentiles;
use reelfarm_backends::store::{AccountStore, AssetStore, JobStore, LibraryStore, RenderStore, UserStore};
use reelfarm_server::admin::template::{import, ImportOptions};

/// The bar: p95 of every page.
const BAR_P95_MS: f64 = 100.0;
/// Requests before measuring each page (connections, caches, the template's decoding).
const WARM_UP: u32 = 10;
/// Seeding writes at once.
const SEEDERS: usize = 8;

/// Counts of what the store holds.
pub struct Sizes {
    pub assets: u32,
    pub jobs: u32,
    /// Requests measured per page.
    pub requests: u32,
}

pub async fn run(config: &Config, sizes: Sizes) -> anyhow::Result<()> {
    let namespace = format!("bench{}", random_base62(8).to_lowercase());
    let dir = tempfile::tempdir()?;
    let store = Store::connect(&config.storage.database_url).await?;
    let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await?;
    let password = random_base62(24);
    let email = format!("{namespace}@bench.example");
    let user = store.create_user(&format!("bench-{namespace}"), None, i64::from(sizes.jobs) + 1).await?;
    store.set_sign_in(&user.id, &email, &reelfarm_domain::password::hash(&password)?).await?;
    store.set_operator(&user.id, true).await?;
    let token = store.create_token(&user.id, 1).await?.1;
    let library = store.personal_library(&user.id).await?.id;
    let template = dir.path().join("bench.json");
    std::fs::write(&template, serde_json::to_vec(&super::jobs::bench_template())?)?;
    let options = ImportOptions {
        owner: Some(user.name.clone()),
        public: false,
        time_limit: Duration::from_secs(120),
        limits: Default::default(),
    };
    let template = import(&store, &blobs, &template, &options).await?.id;
    seed_assets(&store, &library, &user.id, sizes.assets).await?;
    let job = seed_jobs(&store, &user.id, &template, sizes.jobs).await?;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = super::serve("api", port, &namespace)?
        .env("REELFARM_IP_RATE_LIMIT", "0")
        .spawn()
        .context("starting `reelfarm serve api`")?;
    let target = Target { base: format!("http://127.0.0.1:{port}"), library, template, job, token };
    let result = measure(port, &target, &email, &password, &sizes).await;
    let _ = child.kill();
    let _ = child.wait();
    if let Some(url) = &config.bus.amqp_url {
        reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    }
    result
}

/// A progress bar of `len` steps named `what`.
fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    let style = format!("  {what:<8} {{bar:30}} {{pos}}/{{len}}");
    bar.set_style(indicatif::ProgressStyle::with_template(&style).expect("progress template"));
    bar
}

/// `n` converted videos in the library, named `clip-00000` on.
async fn seed_assets(store: &Store, library: &LibraryId, owner: &UserId, n: u32) -> anyhow::Result<()> {
    let bar = progress(u64::from(n), "assets");
    let mut seeded = futures::stream::iter(0..n)
        .map(|i| async move {
            let asset = store.create_asset(library, owner, &format!("clip-{i:05}.mp4")).await?;
            let attempt = store.begin_upload(&asset.id).await?;
            let key = format!("{}/original.mp4", asset.blob_prefix);
            store.finish_upload(&asset.id, &attempt, &key, "video/mp4", 1_000_000 + u64::from(i)).await?;
            let conversion = Conversion {
                kind: AssetKind::Video,
                duration_ms: Some(5_000),
                alpha: false,
                thumb_key: format!("{}/thumb.jpg", asset.blob_prefix),
                renditions: Vec::new(),
                worker: "bench".into(),
            };
            store.finish_conversion(&asset.id, 0, &conversion).await?;
            anyhow::Ok(())
        })
        .buffer_unordered(SEEDERS);
    while let Some(done) = seeded.next().await {
        done?;
        bar.inc(1);
    }
    bar.finish();
    Ok(())
}

/// `n` jobs of one video each, nine in ten ended (successful), the rest pending; the
/// last one's id.
async fn seed_jobs(store: &Store, user: &UserId, template: &TemplateId, n: u32) -> anyhow::Result<JobId> {
    let bar = progress(u64::from(n), "jobs");
    let mut last = None;
    let mut seeded = futures::stream::iter(0..n)
        .map(|i| async move {
            let job = NewJob {
                id: JobId::generate(),
                user_id: user.clone(),
                template_id: template.clone(),
                template_version: 1,
                draft: false,
                quality: Quality::P480,
                priority: reelfarm_domain::priority::Priority::Normal,
                create_render: true,
                create_project: false,
                notifications: Vec::new(),
                output: Default::default(),
                renders: vec![NewRender {
                    id: RenderId::generate(),
                    external_id: format!("bench-{i}"),
                    title: format!("Video {i}"),
                    metadata: Default::default(),
                    template_variables: serde_json::Map::from_iter([(
                        super::jobs::VARIABLE.to_string(),
                        serde_json::Value::from(format!("Title {i}")),
                    )]),
                    project: None,
                    credits: 1,
                    cost_ms: 1000,
                    video_ms: 5000,
                    long_unit: false,
                }],
                created_at: now_ms(),
            };
            store.create_job(&job, None).await?;
            if i % 10 != 0 {
                let outcome = RenderOutcome::Success {
                    video_key: format!("renders/{}/video.mp4", job.renders[0].id),
                    thumb_key: format!("renders/{}/thumb.jpg", job.renders[0].id),
                    width: 854,
                    height: 480,
                    duration_ms: 5_000,
                    captions_key: None,
                    sound_level: None,
                };
                store.end_render(&job.renders[0].id, &outcome).await?;
            }
            anyhow::Ok(job.id)
        })
        .buffer_unordered(SEEDERS);
    while let Some(done) = seeded.next().await {
        last = Some(done?);
        bar.inc(1);
    }
    bar.finish();
    last.context("no jobs were made")
}

/// What the pages are about.
struct Target {
    base: String,
    library: LibraryId,
    template: TemplateId,
    job: JobId,
    token: String,
}

/// Signs in as a browser does; the session cookie.
async fn sign_in(client: &reqwest::Client, base: &str, email: &str, password: &str) -> anyhow::Result<String> {
    let form = client.get(format!("{base}/console/sign-in")).send().await?;
    let cookie = set_cookie(&form, "reelfarm_sign_in").context("the sign-in form's cookie")?;
    let page = form.text().await?;
    let marker = r#"name="csrf" value=""#;
    let start = page.find(marker).context("the sign-in form's token")? + marker.len();
    let csrf = page[start..].split('"').next().unwrap_or_default().to_string();
    let signed = client
        .post(format!("{base}/console/sign-in"))
        .header("cookie", format!("reelfarm_sign_in={cookie}"))
        .form(&[("email", email), ("password", password), ("csrf", &csrf)])
        .send()
        .await?;
    set_cookie(&signed, "reelfarm_session").context("signing in gave no session")
}

fn set_cookie(res: &reqwest::Response, name: &str) -> Option<String> {
    res.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
        let (pair, _) = v.split_once(';').unwrap_or((v, ""));
        pair.strip_prefix(name)?.strip_prefix('=').map(str::to_string)
    })
}

/// Latencies of `requests` GETs of `path`, one at a time, after a warm-up; fails on any
/// answer but 200.
async fn time(client: &reqwest::Client, url: &str, auth: (&str, &str), requests: u32) -> anyhow::Result<Percentiles> {
    let mut latencies = Vec::with_capacity(requests as usize);
    for i in 0..WARM_UP + requests {
        let sent = Instant::now();
        let res = client.get(url).header(auth.0, auth.1).send().await?;
        let status = res.status();
        res.bytes().await?;
        anyhow::ensure!(status.is_success(), "{url} answered {status}");
        if i >= WARM_UP {
            latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
        }
    }
    Ok(Percentiles::of(latencies))
}

async fn measure(port: u16, target: &Target, email: &str, password: &str, sizes: &Sizes) -> anyhow::Result<()> {
    super::wait_for_api(port).await?;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let base = &target.base;
    let session = format!("reelfarm_session={}", sign_in(&client, base, email, password).await?);
    let bearer = format!("Bearer {}", target.token);
    let api = ("authorization", bearer.as_str());
    let page = ("cookie", session.as_str());
    let (library, template, job) = (&target.library, &target.template, &target.job);
    println!(
        "console bench: {} assets and {} jobs in the store, {} requests per page, one at a time, against `serve api` on port {port}",
        sizes.assets, sizes.jobs, sizes.requests
    );
    println!("  {:<34} {:>8} {:>8} {:>8} {:>9}", "page", "p50 ms", "p95 ms", "p99 ms", "p95 ratio");
    let assets_api =
        time(&client, &format!("{base}/api2/v1/libraries/{library}/assets?limit=48"), api, sizes.requests).await?;
    let jobs_api = time(&client, &format!("{base}/generator/v1/jobs?limit=25"), api, sizes.requests).await?;
    let row = |name: &str, p: &Percentiles, baseline: &Percentiles| {
        println!("  {name:<34} {:>8.1} {:>8.1} {:>8.1} {:>8.2}×", p.p50, p.p95, p.p99, p.p95 / baseline.p95.max(0.001));
    };
    row("baseline: API assets page (JSON)", &assets_api, &assets_api);
    row("baseline: API jobs page (JSON)", &jobs_api, &jobs_api);
    let deep = sizes.assets / 48;
    let pages: Vec<(String, String, &Percentiles)> = vec![
        ("libraries".into(), "/console/libraries".into(), &assets_api),
        ("library, first page".into(), format!("/console/libraries/{library}"), &assets_api),
        (format!("library, page {deep}"), format!("/console/libraries/{library}?page={deep}"), &assets_api),
        ("library, search".into(), format!("/console/libraries/{library}?q=clip-0999"), &assets_api),
        ("templates".into(), "/console/templates".into(), &assets_api),
        ("template with its form".into(), format!("/console/templates/{template}"), &assets_api),
        ("jobs".into(), "/console/jobs".into(), &jobs_api),
        ("jobs, filtered".into(), format!("/console/jobs?status=started&template={template}"), &jobs_api),
        ("job".into(), format!("/console/jobs/{job}"), &jobs_api),
        ("account (usage this month)".into(), "/console/account".into(), &jobs_api),
        ("developer".into(), "/console/developer".into(), &jobs_api),
        ("admin".into(), "/console/admin".into(), &jobs_api),
    ];
    let mut worst: f64 = 0.0;
    for (name, path, baseline) in &pages {
        let measured = time(&client, &format!("{base}{path}"), page, sizes.requests).await?;
        row(name, &measured, baseline);
        worst = worst.max(measured.p95);
    }
    let pass = worst <= BAR_P95_MS;
    println!(
        "  bar      every page p95 ≤ {BAR_P95_MS:.0} ms: {} (slowest p95 {worst:.1} ms, {:.2}× the bar)",
        if pass { "PASS" } else { "FAIL" },
        worst / BAR_P95_MS
    );
    Ok(())
}
