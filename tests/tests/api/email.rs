//! The e-mail channel against a real SMTP server on loopback (aiosmtpd): what the
//! recipients get, and how the server's refusals reach the scheduler.

use std::time::Duration;

use reelfarm_backends::Config;
use reelfarm_domain::id::{DeliveryId, JobId, RenderId, TemplateId, UserId};
use reelfarm_domain::notification::Notification;
use reelfarm_domain::status::RenderStatus;
use reelfarm_notifier::channel::{Attempt, Channel, Delivered, Failed, RenderFacts};
use reelfarm_notifier::email::EmailChannel;
use reelfarm_tests::smtp::SmtpServer;
use reelfarm_tests::{test_env, Mode};

const VIDEO_URL: &str = "https://farm.example/files/renders/j1/r1-abc/video.mp4";

/// The configuration of a deployment sending through `smtp_url`.
async fn config(smtp_url: Option<&str>, extra: &[(&str, &str)]) -> (Config, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut env = test_env(Mode::Embedded, dir.path(), 0).await;
    if let Some(url) = smtp_url {
        env.push(("REELFARM_SMTP_URL".into(), url.into()));
    }
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    (Config::from_sources(None, env).unwrap(), dir)
}

async fn channel(smtp_url: &str) -> EmailChannel {
    let (config, _dir) = config(Some(smtp_url), &[]).await;
    EmailChannel::new(&config).unwrap().expect("SMTP is configured")
}

fn finished(title: &str) -> RenderFacts {
    RenderFacts {
        render_id: RenderId::trusted("r1"),
        job_id: JobId::trusted("j1"),
        template_id: TemplateId::trusted("t1"),
        user_id: UserId::trusted("u1"),
        external_id: "e1".into(),
        title: title.into(),
        status: RenderStatus::Success,
        error: None,
        project_id: None,
        video_url: Some(VIDEO_URL.into()),
        thumbnail_url: Some(VIDEO_URL.replace("video.mp4", "thumb.jpg")),
        video_key: Some("renders/j1/r1-abc/video.mp4".into()),
    }
}

fn email(to: &[&str], subject: Option<&str>, message: Option<&str>, logo: Option<&str>) -> Notification {
    Notification::Email {
        email: to.iter().map(|a| a.to_string()).collect(),
        subject: subject.map(Into::into),
        message: message.map(Into::into),
        logo: logo.map(Into::into),
    }
}

async fn attempt(
    channel: &EmailChannel,
    notification: &Notification,
    render: &RenderFacts,
) -> Result<Delivered, Failed> {
    let attempt = Attempt {
        delivery_id: &DeliveryId::trusted("d-0001"),
        number: 1,
        notification,
        render,
        state: None,
        body: None,
    };
    channel.attempt(&attempt).await
}

#[tokio::test]
async fn finished_render_is_mailed_to_every_address_with_link_message_and_logo() {
    let smtp = SmtpServer::start().await;
    let (config, _dir) = config(Some(&smtp.url()), &[("REELFARM_SMTP_FROM", "Render Farm <farm@example.com>")]).await;
    let channel = EmailChannel::new(&config).unwrap().unwrap();
    let notification = email(
        &["ann@example.com", "bob@example.org"],
        None,
        Some("Here is your spring promo.\nEnjoy!"),
        Some("https://cdn.example.com/logo.png"),
    );

    let delivered = attempt(&channel, &notification, &finished("Spring promo")).await.unwrap();
    assert_eq!(delivered, Delivered { status_code: Some(250), result: None });

    let mail = &smtp.wait_for(1).await[0];
    assert_eq!(mail.rcpt_tos, ["ann@example.com", "bob@example.org"]);
    assert_eq!(mail.mail_from, "farm@example.com");
    assert_eq!(mail.header("From").unwrap(), "\"Render Farm\" <farm@example.com>");
    assert_eq!(mail.header("To").unwrap(), "ann@example.com, bob@example.org");
    assert_eq!(mail.subject(), "Your video \"Spring promo\" is ready");
    assert_eq!(mail.header("Message-ID").unwrap(), "<reelfarm.d-0001@example.com>");
    assert_eq!(mail.header("Auto-Submitted").unwrap(), "auto-generated");
    assert!(mail.parsed().ctype.mimetype.eq_ignore_ascii_case("multipart/alternative"));

    let text = mail.text();
    assert!(text.contains(VIDEO_URL), "{text}");
    assert!(text.contains("Here is your spring promo.\nEnjoy!"), "{text}");
    let html = mail.html();
    assert!(html.contains(&format!("<a href=\"{VIDEO_URL}\">")), "{html}");
    assert!(html.contains("Here is your spring promo.<br>\nEnjoy!"), "{html}");
    assert!(html.contains("<img src=\"https://cdn.example.com/logo.png\""), "{html}");
}

#[tokio::test]
async fn custom_subject_is_used_and_user_text_is_escaped_in_html() {
    let smtp = SmtpServer::start().await;
    let channel = channel(&smtp.url()).await;
    let notification = email(
        &["ann@example.com"],
        Some("Hello\r\nBcc: eve@example.net"),
        Some("<script>alert('x')</script> & more"),
        None,
    );

    attempt(&channel, &notification, &finished("<b>Bold</b> title")).await.unwrap();

    let mail = &smtp.wait_for(1).await[0];
    // CR/LF cannot start a header: the subject stays one line, nobody else receives it.
    assert_eq!(mail.subject(), "Hello Bcc: eve@example.net");
    assert_eq!(mail.rcpt_tos, ["ann@example.com"]);
    assert_eq!(mail.header("Bcc"), None);
    // The default sender.
    assert_eq!(mail.mail_from, "noreply@localhost");
    assert_eq!(mail.header("From").unwrap(), "reelfarm <noreply@localhost>");

    let html = mail.html();
    assert!(html.contains("&#60;script&#62;alert(&#39;x&#39;)&#60;/script&#62; &#38; more"), "{html}");
    assert!(html.contains("&#34;&#60;b&#62;Bold&#60;/b&#62; title&#34;"), "{html}");
    assert!(!html.contains("<script>") && !html.contains("<b>"), "{html}");
    assert!(!html.contains("<img"), "no logo, no image: {html}");
    assert!(mail.text().contains("<script>alert('x')</script> & more"));
}

#[tokio::test]
async fn default_subject_leaves_out_an_empty_title() {
    let smtp = SmtpServer::start().await;
    let channel = channel(&smtp.url()).await;

    attempt(&channel, &email(&["ann@example.com"], None, None, None), &finished("")).await.unwrap();

    let mail = &smtp.wait_for(1).await[0];
    assert_eq!(mail.subject(), "Your video is ready");
    assert!(mail.text().contains(VIDEO_URL));
    assert!(mail.html().contains(VIDEO_URL));

    // Titles outside ASCII reach the subject intact.
    attempt(&channel, &email(&["ann@example.com"], None, None, None), &finished("Frühling – Ωmega")).await.unwrap();
    assert_eq!(smtp.wait_for(2).await[1].subject(), "Your video \"Frühling – Ωmega\" is ready");
}

#[tokio::test]
async fn failed_render_gets_a_short_notice_without_link() {
    let smtp = SmtpServer::start().await;
    let channel = channel(&smtp.url()).await;
    let failed = RenderFacts {
        status: RenderStatus::Failed,
        error: Some("the value of <logo> is not an image".into()),
        video_url: None,
        thumbnail_url: None,
        video_key: None,
        ..finished("Spring promo")
    };
    let notification = email(
        &["ann@example.com"],
        Some("Your promo!"),
        Some("Enjoy the video"),
        Some("https://cdn.example.com/logo.png"),
    );

    let delivered = attempt(&channel, &notification, &failed).await.unwrap();
    assert_eq!(delivered.status_code, Some(250));

    let mail = &smtp.wait_for(1).await[0];
    assert_eq!(mail.rcpt_tos, ["ann@example.com"]);
    assert_eq!(mail.subject(), "Your video \"Spring promo\" could not be created");
    let (text, html) = (mail.text(), mail.html());
    assert!(text.contains("the value of <logo> is not an image"), "{text}");
    assert!(html.contains("the value of &#60;logo&#62; is not an image"), "{html}");
    assert!(html.contains("<img src=\"https://cdn.example.com/logo.png\""), "{html}");
    for part in [&text, &html] {
        assert!(!part.contains("farm.example") && !part.contains("href"), "no link: {part}");
        assert!(!part.contains("Enjoy the video"), "the message is for a finished video: {part}");
    }
}

#[tokio::test]
async fn refused_recipient_fails_for_good_with_the_reply_code() {
    let smtp = SmtpServer::start().await;
    let channel = channel(&smtp.url()).await;
    let notification = email(&["ann@example.com", "reject-me@example.com"], None, None, None);

    let failed = attempt(&channel, &notification, &finished("T")).await.unwrap_err();
    assert!(!failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, Some(550));
    assert!(failed.error.contains("550") && failed.error.contains("recipient address rejected"), "{failed:?}");
    // One transaction: the other recipient got nothing either, so a later retry sends once.
    assert!(smtp.received().is_empty());
}

#[tokio::test]
async fn deferred_recipient_may_be_retried_with_the_reply_code() {
    let smtp = SmtpServer::start().await;
    let channel = channel(&smtp.url()).await;

    let failed = attempt(&channel, &email(&["busy@example.com"], None, None, None), &finished("T")).await.unwrap_err();
    assert!(failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, Some(451));
    assert!(failed.error.contains("try again later"), "{failed:?}");
}

#[tokio::test]
async fn closed_port_may_be_retried() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let channel = channel(&format!("smtp://127.0.0.1:{port}")).await;

    let failed = attempt(&channel, &email(&["ann@example.com"], None, None, None), &finished("T")).await.unwrap_err();
    assert!(failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, None);
    assert!(failed.error.contains(&format!("127.0.0.1:{port}")), "{failed:?}");
}

#[tokio::test]
async fn silent_server_times_out_and_may_be_retried() {
    // Accepts connections and never greets.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let (config, _dir) = config(Some(&format!("smtp://127.0.0.1:{port}")), &[]).await;
    let channel = EmailChannel::with_timeout(&config, Duration::from_millis(300)).unwrap().unwrap();

    let failed = attempt(&channel, &email(&["ann@example.com"], None, None, None), &finished("T")).await.unwrap_err();
    assert!(failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, None);
    assert!(failed.error.contains("within"), "{failed:?}");
    silent.abort();
}

#[tokio::test]
async fn other_notifications_are_refused_and_no_smtp_url_means_no_channel() {
    let smtp = SmtpServer::start().await;
    let channel = channel(&smtp.url()).await;
    let callback = Notification::Callback { url: "https://example.com/hook".into() };

    let failed = attempt(&channel, &callback, &finished("T")).await.unwrap_err();
    assert!(!failed.retryable, "{failed:?}");

    let (config, _dir) = config(None, &[]).await;
    assert!(EmailChannel::new(&config).unwrap().is_none());
}
