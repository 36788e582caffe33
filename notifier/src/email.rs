//! The e-mail channel (spec §6, `email`): one multipart/alternative message (plain text
//! and HTML) to every address of the notification, sent through the SMTP relay of
//! `REELFARM_SMTP_URL`. A finished render's message carries the download link, the
//! caller's message and logo; a failed render's is a short notice with the error (the
//! scheduler sends none: `crate::guard`).
//!
//! All recipients share one SMTP transaction: a refused recipient fails the whole
//! attempt before anything is delivered, so a retry never sends twice to the others.

use std::error::Error as _;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::Error as SmtpError;
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tracing::instrument;

use askama::Template;
use reelfarm_backends::Config;
use reelfarm_domain::notification::Notification;

use crate::channel::{Attempt, Channel, Delivered, Failed, RenderFacts};

/// Limit on a whole attempt: connecting, every command and reply, the message.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Longest subject excerpt of a render's title, in characters.
const TITLE_IN_SUBJECT: usize = 100;

/// Sends notification e-mails through one SMTP relay.
pub struct EmailChannel {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// `host:port` of the relay, without credentials, for error messages.
    server: String,
    timeout: Duration,
}

impl EmailChannel {
    /// The channel of `config.notifier.smtp_url`, or `None` when e-mail is not configured.
    pub fn new(config: &Config) -> anyhow::Result<Option<EmailChannel>> {
        EmailChannel::with_timeout(config, TIMEOUT)
    }

    /// As [`EmailChannel::new`], giving up an attempt (connection included) after `timeout`.
    ///
    /// `smtp://host:port` speaks plain SMTP, `smtp://…?tls=required` (or `opportunistic`)
    /// upgrades with STARTTLS, `smtps://host:port` is TLS from the start; `user:pass@`
    /// logs in, a path (`smtp://host/client.example`) names our side in `EHLO`.
    pub fn with_timeout(config: &Config, timeout: Duration) -> anyhow::Result<Option<EmailChannel>> {
        let Some(smtp_url) = &config.notifier.smtp_url else { return Ok(None) };
        let server = server_name(smtp_url);
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .with_context(|| format!("REELFARM_SMTP_URL (mail server {server}) is not usable"))?
            .timeout(Some(timeout))
            .build();
        let from: Mailbox =
            config.notifier.smtp_from.parse().with_context(|| {
                format!("REELFARM_SMTP_FROM {:?} is not an e-mail address", config.notifier.smtp_from)
            })?;
        Ok(Some(EmailChannel { transport, from, server, timeout }))
    }

    fn message(&self, attempt: &Attempt<'_>, to: &[String], content: Content) -> Result<Message, Failed> {
        let mut builder = Message::builder()
            .from(self.from.clone())
            .subject(content.subject)
            .message_id(Some(message_id(attempt.delivery_id.as_str(), self.from.email.domain())))
            // RFC 3834: no out-of-office replies to an automated message.
            .raw_header(HeaderValue::new(HeaderName::new_from_ascii_str("Auto-Submitted"), "auto-generated".into()));
        for address in to {
            let address: Address = address
                .trim()
                .parse()
                .map_err(|e| Failed::permanent(format!("{address:?} is not an e-mail address: {e}")))?;
            builder = builder.to(Mailbox::new(None, address));
        }
        builder
            .multipart(MultiPart::alternative_plain_html(content.text, content.html))
            .map_err(|e| Failed::permanent(format!("the e-mail could not be composed: {e}")))
    }

    /// Why an SMTP exchange failed, and whether trying again may help.
    fn failed(&self, error: SmtpError) -> Failed {
        let server = &self.server;
        let status_code = error.status().map(u16::from);
        // The server's own words (lettre keeps every line of the reply as the source).
        let detail = error.source().map(|s| s.to_string()).unwrap_or_else(|| error.to_string());
        let error_text = match status_code {
            Some(code) if error.is_permanent() => {
                format!("mail server {server} refused the message: {code} {detail}")
            }
            Some(code) => format!("mail server {server} deferred the message: {code} {detail}"),
            None if error.is_timeout() => {
                format!("mail server {server} did not accept a connection within {:?}", self.timeout)
            }
            None if error.is_tls() => format!("TLS with mail server {server} failed: {error}"),
            None => format!("sending through mail server {server} failed: {error}"),
        };
        // 5xx replies are final (a refused recipient or sender); 4xx replies, refused or
        // broken connections and timeouts pass.
        Failed { status_code, error: error_text, retryable: !error.is_permanent(), state: None }
    }
}

#[async_trait]
impl Channel for EmailChannel {
    #[instrument(skip_all, fields(
        render_id = %attempt.render.render_id,
        delivery_id = %attempt.delivery_id,
        attempt = attempt.number,
    ))]
    async fn attempt(&self, attempt: &Attempt<'_>) -> Result<Delivered, Failed> {
        let Notification::Email { email, subject, message, logo } = attempt.notification else {
            return Err(Failed::permanent(format!(
                "the e-mail channel cannot deliver a {} notification",
                attempt.notification.kind()
            )));
        };
        if email.is_empty() {
            return Err(Failed::permanent("the notification has no e-mail address"));
        }
        let content = Content::of(attempt.render, subject.as_deref(), message.as_deref(), logo.as_deref())?;
        let message = self.message(attempt, email, content)?;
        // lettre bounds the connection only; this bounds the whole exchange.
        match tokio::time::timeout(self.timeout, self.transport.send(message)).await {
            Ok(Ok(response)) => {
                let code = u16::from(response.code());
                tracing::debug!(code, recipients = email.len(), "e-mail accepted");
                Ok(Delivered { status_code: Some(code), result: None })
            }
            Ok(Err(error)) => Err(self.failed(error)),
            Err(_) => Err(Failed::transient(format!(
                "mail server {} did not take the message within {:?}",
                self.server, self.timeout
            ))),
        }
    }
}

/// What a message says.
#[derive(Debug)]
struct Content {
    subject: String,
    text: String,
    html: String,
}

impl Content {
    /// A finished render's message (the caller's subject, message and logo, and the link),
    /// or a failed render's notice (a fixed subject, the error; the caller's subject and
    /// message are written for a delivered video and left out, the logo kept).
    fn of(
        render: &RenderFacts,
        subject: Option<&str>,
        message: Option<&str>,
        logo: Option<&str>,
    ) -> Result<Content, Failed> {
        let title = one_line(&render.title);
        // ` "TITLE"` or nothing, to follow "Your video".
        let quoted = match excerpt(&title, TITLE_IN_SUBJECT) {
            t if t.is_empty() => t,
            t => format!(" \"{t}\""),
        };
        let logo = logo.filter(|l| is_web_address(l)).map(str::trim);
        if !render.succeeded() {
            let error = render.error.as_deref().map(str::trim).filter(|e| !e.is_empty()).unwrap_or("unknown error");
            return Ok(Content {
                subject: format!("Your video{quoted} could not be created"),
                text: render_template(&FailedText { quoted: &quoted, error })?,
                html: render_template(&FailedHtml { logo, quoted: &quoted, error })?,
            });
        }
        let Some(url) = render.video_url.as_deref().filter(|u| !u.is_empty()) else {
            return Err(Failed::permanent("the render has no video to link to"));
        };
        let subject = subject.map(one_line).filter(|s| !s.is_empty());
        let subject = subject.unwrap_or_else(|| format!("Your video{quoted} is ready"));
        let message = message.map(|m| m.replace("\r\n", "\n"));
        let message = message.as_deref().map(str::trim).filter(|m| !m.is_empty());
        Ok(Content {
            subject,
            text: render_template(&ReadyText { message, quoted: &quoted, url })?,
            html: render_template(&ReadyHtml { logo, message, quoted: &quoted, url })?,
        })
    }
}

/// The message of a finished render (`templates/email/`; HTML escaped by askama).
#[derive(Template)]
#[template(path = "email/ready.html")]
struct ReadyHtml<'a> {
    logo: Option<&'a str>,
    message: Option<&'a str>,
    /// ` "TITLE"` or nothing, to follow "Your video".
    quoted: &'a str,
    url: &'a str,
}

#[derive(Template)]
#[template(path = "email/ready.txt")]
struct ReadyText<'a> {
    message: Option<&'a str>,
    quoted: &'a str,
    url: &'a str,
}

/// The notice of a failed render.
#[derive(Template)]
#[template(path = "email/failed.html")]
struct FailedHtml<'a> {
    logo: Option<&'a str>,
    quoted: &'a str,
    error: &'a str,
}

#[derive(Template)]
#[template(path = "email/failed.txt")]
struct FailedText<'a> {
    quoted: &'a str,
    error: &'a str,
}

fn render_template(template: &impl Template) -> Result<String, Failed> {
    template.render().map_err(|e| Failed::permanent(format!("the e-mail could not be written: {e}")))
}

/// `s` on one line: control characters (CR, LF, tabs …) and line separators become
/// spaces, runs of white space one space. What goes into a header goes through here.
fn one_line(s: &str) -> String {
    let spaced: String =
        s.chars().map(|c| if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') { ' ' } else { c }).collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `s`, with an ellipsis when cut.
fn excerpt(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Only `http(s)://` addresses become an `<img>` (the notification's parser allows no
/// other; this keeps it so).
fn is_web_address(s: &str) -> bool {
    url::Url::parse(s.trim()).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// A Message-ID stable across the attempts of one delivery, so that a receiving system
/// can recognise a message sent again after a lost reply.
fn message_id(delivery_id: &str, domain: &str) -> String {
    let id: String =
        delivery_id.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')).collect();
    format!("<reelfarm.{id}@{domain}>")
}

/// `host:port` of an SMTP address, without credentials.
fn server_name(smtp_url: &str) -> String {
    match url::Url::parse(smtp_url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or_default();
            match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            }
        }
        Err(_) => "(unparsable address)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelfarm_domain::id::{JobId, RenderId, TemplateId, UserId};
    use reelfarm_domain::status::RenderStatus;

    fn render(status: RenderStatus) -> RenderFacts {
        RenderFacts {
            render_id: RenderId::trusted("r1"),
            job_id: JobId::trusted("j1"),
            template_id: TemplateId::trusted("t1"),
            user_id: UserId::trusted("u1"),
            external_id: "e1".into(),
            title: "Spring\r\nBcc: x@evil.example".into(),
            status,
            error: (status == RenderStatus::Failed).then(|| "font <b> missing".into()),
            project_id: None,
            video_url: (status == RenderStatus::Success).then(|| "https://farm.example/v.mp4?a=1&b=2".into()),
            thumbnail_url: None,
            video_key: None,
        }
    }

    #[test]
    fn header_text_is_kept_on_one_line() {
        assert_eq!(one_line(" a\r\nb\tc\u{2028}d  e \n"), "a b c d e");
        let content =
            Content::of(&render(RenderStatus::Success), Some("Hi\r\nBcc: x@evil.example"), None, None).unwrap();
        assert_eq!(content.subject, "Hi Bcc: x@evil.example");
        let content = Content::of(&render(RenderStatus::Success), None, None, None).unwrap();
        assert_eq!(content.subject, "Your video \"Spring Bcc: x@evil.example\" is ready");
    }

    #[test]
    fn user_text_is_escaped_in_html_and_addresses_checked() {
        let content =
            Content::of(&render(RenderStatus::Success), None, Some("<script>x</script>"), Some("javascript:alert(1)"))
                .unwrap();
        assert!(content.html.contains("&#60;script&#62;x&#60;/script&#62;"), "{}", content.html);
        assert!(!content.html.contains("<img"));
        assert!(content.html.contains("href=\"https://farm.example/v.mp4?a=1&#38;b=2\""), "{}", content.html);
        let failed = Content::of(&render(RenderStatus::Failed), Some("ignored"), None, None).unwrap();
        assert!(failed.html.contains("font &#60;b&#62; missing"), "{}", failed.html);
        assert!(failed.text.contains("font <b> missing"));
    }

    #[test]
    fn long_titles_are_cut_and_ids_sanitised() {
        assert_eq!(excerpt("abcdef", 4), "abc…");
        assert_eq!(message_id("d-1>\r\n", "example.com"), "<reelfarm.d-1@example.com>");
        assert_eq!(server_name("smtps://u:secret@mail.example:465"), "mail.example:465");
        "reelfarm <noreply@localhost>".parse::<Mailbox>().unwrap();
    }
}
