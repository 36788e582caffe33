//! A real browser for the console's tests: Debian's headless Chromium driven over
//! WebDriver (chromedriver, started per test on a port the system picks) with
//! fantoccini. Every page a test opens is checked against WCAG 2.2 A and AA with
//! axe-core (installed by scripts/setup) the first time its path is shown.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A chromedriver and one browser session in it; both end when dropped.
pub struct Browser {
    pub client: Client,
    /// The paths whose pages passed axe-core's check.
    checked: Mutex<HashSet<String>>,
    _driver: Child,
    _profile: tempfile::TempDir,
}

/// axe-core's script, as scripts/setup installs it.
static AXE: LazyLock<String> = LazyLock::new(|| {
    let home = std::env::var("HOME").unwrap_or_default();
    let path = format!("{home}/.cache/reelfarm/npm/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e} (scripts/setup installs axe-core)"))
});

/// axe-core's tags for the success criteria of WCAG 2.0, 2.1 and 2.2 at levels A and AA.
const WCAG_AA: [&str; 5] = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"];

impl Browser {
    /// Starts chromedriver (port 0: it reports the one it got) and a headless Chromium.
    pub async fn start() -> Browser {
        let mut driver = Command::new("chromedriver")
            .args(["--port=0", "--allowed-ips=127.0.0.1", "--log-level=WARNING"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver runs (scripts/setup installs chromium-driver)");
        let port = driver_port(&mut driver).await;
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".to_string(),
            "--disable-gpu".to_string(),
            "--disable-dev-shm-usage".to_string(),
            "--disable-quic".to_string(),
            "--no-first-run".to_string(),
            "--disable-background-networking".to_string(),
            "--disable-component-update".to_string(),
            "--disable-sync".to_string(),
            "--window-size=1280,900".to_string(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), json!({"binary": "/usr/bin/chromium", "args": args}));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session starts");
        Browser { client, checked: Mutex::default(), _driver: driver, _profile: profile }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap_or_else(|e| panic!("opening {url}: {e}"));
        self.check_once().await;
    }

    /// Checks the page shown against WCAG 2.2 AA with axe-core, unless a page of its path
    /// passed before.
    async fn check_once(&self) {
        let path = self.client.current_url().await.unwrap().path().to_string();
        if self.checked.lock().unwrap().contains(&path) {
            return;
        }
        self.assert_accessible().await;
        self.checked.lock().unwrap().insert(path);
    }

    /// Fails the test with axe-core's findings if the page as it is now (after the
    /// swaps so far) violates a success criterion of WCAG 2.2 at level A or AA.
    pub async fn assert_accessible(&self) {
        let ready = "return document.readyState === 'complete'";
        until(Duration::from_secs(10), || async move {
            let loaded = self.client.execute(ready, vec![]).await.is_ok_and(|v| v == json!(true));
            loaded.then_some(()).ok_or_else(|| "the page does not finish loading".to_string())
        })
        .await;
        if self.client.execute("return typeof axe === 'undefined'", vec![]).await.unwrap() == json!(true) {
            self.client.execute(&format!("{}\nreturn null;", *AXE), vec![]).await.expect("axe-core loads");
        }
        let run = "const done = arguments[arguments.length - 1]; \
                   axe.run(document, { runOnly: { type: 'tag', values: arguments[0] }, resultTypes: ['violations'] }) \
                     .then((r) => done(r.violations.map((v) => `${v.id} (${v.impact}): ${v.help}: ` + \
                       v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', '))), \
                       (e) => done([`axe-core failed: ${e}`]));";
        let found = self.client.execute_async(run, vec![json!(WCAG_AA)]).await.expect("axe-core runs");
        let violations: Vec<String> = serde_json::from_value(found).unwrap();
        assert!(violations.is_empty(), "WCAG 2.2 AA violations on {}:\n{}", self.path().await, violations.join("\n"));
    }

    /// Types `text` into the field `css`.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Clicks `css`, a link or a form's button, and waits up to 10 s for the page that
    /// answers (whatever its address: it may be the same page again). A plain click would
    /// let the next step read the page it left while the new one loads.
    pub async fn click_to_page(&self, css: &str) {
        self.client.execute("window.reelfarmBefore = true", vec![]).await.unwrap();
        self.click(css).await;
        let script = "return window.reelfarmBefore === undefined && document.readyState === 'complete'";
        until(Duration::from_secs(10), || async move {
            let loaded = self.client.execute(script, vec![]).await.is_ok_and(|v| v == json!(true));
            loaded.then_some(()).ok_or_else(|| format!("no new page after clicking {css}"))
        })
        .await;
        self.check_once().await;
    }

    /// The first `css`, waiting up to 10 s for one to appear (the page may still be
    /// loading after a click).
    async fn find(&self, css: &str) -> fantoccini::elements::Element {
        let found = self.client.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css(css)).await;
        match found {
            Ok(element) => element,
            Err(e) => panic!("no {css} on {}: {e}", self.path().await),
        }
    }

    /// The text of the first `css`, waiting up to 10 s for one to appear.
    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// The text content of every `css` now on the page, trimmed (as in the document:
    /// before CSS transforms it, whether shown or not).
    pub async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.unwrap() {
            // An element htmx swapped out meanwhile is skipped.
            if let Ok(Some(text)) = element.prop("textContent").await {
                texts.push(text.trim().to_string());
            }
        }
        texts
    }

    /// Waits up to `limit` for the texts of `css` to be `expected` (in any order).
    pub async fn wait_for_texts(&self, css: &str, expected: &[&str], limit: Duration) {
        let mut want: Vec<&str> = expected.to_vec();
        want.sort_unstable();
        let want = &want;
        until(limit, || async move {
            let mut shown = self.texts(css).await;
            shown.sort_unstable();
            (shown == *want).then_some(()).ok_or_else(|| format!("{css}: {shown:?}, not {want:?}"))
        })
        .await
    }

    /// Waits up to 10 s for every image `css` to be loaded and decoded (none broken).
    pub async fn wait_for_images(&self, css: &str) {
        let script = "return [...document.querySelectorAll(arguments[0])].map(i => [i.currentSrc, i.naturalWidth])";
        until(Duration::from_secs(10), || async move {
            let shown = self.client.execute(script, vec![json!(css)]).await.unwrap();
            let images: Vec<(String, u32)> = serde_json::from_value(shown).unwrap();
            let loaded = !images.is_empty() && images.iter().all(|(_, width)| *width > 0);
            loaded.then_some(()).ok_or_else(|| format!("images not shown: {images:?}"))
        })
        .await
    }

    /// Chooses the option `value` of the select `css`.
    pub async fn choose(&self, css: &str, value: &str) {
        let select = self.find(css).await;
        select.select_by_value(value).await.unwrap_or_else(|e| panic!("no option {value:?} in {css}: {e}"));
    }

    /// The current value of the form field `css` (what a person sees in it).
    pub async fn value(&self, css: &str) -> String {
        self.find(css).await;
        let script = "const f = document.querySelector(arguments[0]); return f ? f.value : null";
        let value = self.client.execute(script, vec![json!(css)]).await.unwrap();
        value.as_str().unwrap_or_else(|| panic!("no field {css}")).to_string()
    }

    /// Waits up to `limit` for the video `css` to have its current frame (`readyState` ≥
    /// 2, HAVE_CURRENT_DATA): the browser fetched and decoded it.
    pub async fn wait_for_playable(&self, css: &str, limit: Duration) {
        let script = "const v = document.querySelector(arguments[0]); \
                      if (v && v.readyState < 2 && !v.dataset.asked) { v.dataset.asked = '1'; v.preload = 'auto'; v.load(); } \
                      return v ? [v.readyState, v.error ? v.error.code : 0, v.duration || 0] : null";
        until(limit, || async move {
            let state = self.client.execute(script, vec![json!(css)]).await.unwrap();
            match serde_json::from_value::<Option<(u32, u32, f64)>>(state).unwrap() {
                Some((ready, 0, _)) if ready >= 2 => Ok(()),
                other => Err(format!("{css} not playable: [readyState, error, duration] = {other:?}")),
            }
        })
        .await
    }

    /// Chooses `files` in the file input `css`.
    pub async fn choose_files(&self, css: &str, files: &[&std::path::Path]) {
        let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let input = self.find(css).await;
        input.send_keys(&paths.join("\n")).await.unwrap();
    }

    /// The path of the page shown, with its query.
    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        }
    }

    /// Waits up to 10 s for the page at `path` to be shown.
    pub async fn wait_for_path(&self, path: &str) {
        until(Duration::from_secs(10), || async move {
            let shown = self.path().await;
            (shown == path).then_some(()).ok_or_else(|| format!("still on {shown}, not {path}"))
        })
        .await;
        self.check_once().await;
    }

    /// Waits up to 10 s for a page whose path `wanted` accepts; that path.
    pub async fn path_when(&self, wanted: impl Fn(&str) -> bool) -> String {
        let wanted = &wanted;
        until(Duration::from_secs(10), || async move {
            let shown = self.path().await;
            wanted(&shown).then_some(()).ok_or_else(|| format!("still on {shown}"))
        })
        .await;
        self.check_once().await;
        self.path().await
    }

    /// The attribute `name` of the first `css`.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.find(css).await;
        element.attr(name).await.unwrap()
    }

    /// A PNG of the window.
    pub async fn screenshot(&self) -> Vec<u8> {
        self.client.screenshot().await.unwrap()
    }
}

impl Drop for Browser {
    /// Ends the browser's processes with chromedriver's: a test that panics never quits
    /// its session, and a Chromium left running (its pages still polling) slows every
    /// test after it. They are known by their profile directory, which is this browser's
    /// alone.
    fn drop(&mut self) {
        let profile = format!("--user-data-dir={}", self._profile.path().display());
        let _ = std::process::Command::new("pkill").args(["-KILL", "-f", "--", &profile]).status();
    }
}

/// Tries `probe` every 100 ms until it succeeds; after `limit`, fails with its last
/// complaint.
async fn until<F, Fut>(limit: Duration, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match probe().await {
            Ok(()) => return,
            Err(complaint) => assert!(Instant::now() < deadline, "{complaint}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads chromedriver's start line for the port it listens on.
async fn driver_port(driver: &mut Child) -> u16 {
    let stdout = driver.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.ok().flatten() {
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                return rest.trim_end_matches('.').trim().parse().ok();
            }
        }
        None
    })
    .await;
    let port = found.ok().flatten().expect("chromedriver reports its port");
    // Its output must be read on, or chromedriver blocks once the pipe is full.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    port
}
