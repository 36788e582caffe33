//! A real SMTP server on loopback for the e-mail tests: `tests/smtp_server.py` on
//! aiosmtpd (Debian's `python3-aiosmtpd`, installed by `scripts/setup`), one per test.
//! It records every accepted message with its envelope; recipients whose local part
//! starts with `reject` are refused with 550, with `busy` deferred with 451.
//!
//! ```ignore
//! let smtp = SmtpServer::start().await;
//! let app = TestApp::spawn_with(mode, &[("REELFARM_SMTP_URL", &smtp.url())]).await;
//! // … a job with an `email` notification …
//! let mail = &smtp.wait_for(1).await[0];
//! assert_eq!(mail.rcpt_tos, ["ann@example.com"]);
//! assert!(mail.text().contains(&video_url));
//! ```

use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use mailparse::{MailHeaderMap, ParsedMail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// How long [`SmtpServer::wait_for`] waits before failing the test.
const WAIT: Duration = Duration::from_secs(30);

/// The running server; stopped when dropped.
pub struct SmtpServer {
    port: u16,
    received: watch::Receiver<Vec<ReceivedMail>>,
    /// Killed on drop; the script also exits when its standard input closes.
    _child: Child,
}

/// One accepted message, as the server received it.
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    /// Envelope sender (`MAIL FROM`).
    pub mail_from: String,
    /// Envelope recipients (`RCPT TO`) the server accepted.
    pub rcpt_tos: Vec<String>,
    /// The message, headers and body, as sent.
    pub raw: Vec<u8>,
}

impl SmtpServer {
    /// Starts a server on a free port of 127.0.0.1.
    pub async fn start() -> SmtpServer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/smtp_server.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg("-u")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs (scripts/setup installs python3-aiosmtpd)");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("the SMTP server starts in time")
            .unwrap()
            .expect("the SMTP server starts (is python3-aiosmtpd installed? see scripts/setup)");
        let port = first.strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("the SMTP server prints its port");
        let (sender, received) = watch::channel(Vec::new());
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mail = ReceivedMail::from_line(&line);
                sender.send_modify(|all| all.push(mail));
            }
        });
        SmtpServer { port, received, _child: child }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `smtp://127.0.0.1:PORT`, for `REELFARM_SMTP_URL`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The messages received so far, in order.
    pub fn received(&self) -> Vec<ReceivedMail> {
        self.received.borrow().clone()
    }

    /// Waits until at least `count` messages have arrived (panics after 30 s) and returns
    /// all received so far, in order.
    pub async fn wait_for(&self, count: usize) -> Vec<ReceivedMail> {
        let mut received = self.received.clone();
        let waited = tokio::time::timeout(WAIT, received.wait_for(|all| all.len() >= count)).await;
        match waited {
            Ok(Ok(all)) => all.clone(),
            Ok(Err(_)) => panic!("the SMTP server stopped with {} of {count} messages", self.received().len()),
            Err(_) => panic!("{} of {count} messages arrived within {WAIT:?}", self.received().len()),
        }
    }
}

impl ReceivedMail {
    fn from_line(line: &str) -> ReceivedMail {
        let value: serde_json::Value = serde_json::from_str(line).expect("the SMTP server writes JSON lines");
        let data = value["data"].as_str().expect("data");
        ReceivedMail {
            mail_from: value["mail_from"].as_str().expect("mail_from").to_string(),
            rcpt_tos: value["rcpt_tos"]
                .as_array()
                .expect("rcpt_tos")
                .iter()
                .map(|r| r.as_str().unwrap().to_string())
                .collect(),
            raw: base64::engine::general_purpose::STANDARD.decode(data).expect("base64"),
        }
    }

    /// The message, parsed.
    pub fn parsed(&self) -> ParsedMail<'_> {
        mailparse::parse_mail(&self.raw).expect("the message parses")
    }

    /// The first header `name`, decoded (RFC 2047), or `None`.
    pub fn header(&self, name: &str) -> Option<String> {
        self.parsed().headers.get_first_value(name)
    }

    /// The decoded `Subject`.
    pub fn subject(&self) -> String {
        self.header("Subject").expect("the message has a subject")
    }

    /// The decoded body of the first part of type `mimetype` (`text/plain` …), if any,
    /// with SMTP's CRLF line ends as `\n`.
    pub fn part(&self, mimetype: &str) -> Option<String> {
        let parsed = self.parsed();
        let part = parsed.parts().find(|p| p.ctype.mimetype.eq_ignore_ascii_case(mimetype))?;
        Some(part.get_body().expect("the part decodes").replace("\r\n", "\n"))
    }

    /// The plain-text part.
    pub fn text(&self) -> String {
        self.part("text/plain").expect("the message has a text/plain part")
    }

    /// The HTML part.
    pub fn html(&self) -> String {
        self.part("text/html").expect("the message has a text/html part")
    }
}
