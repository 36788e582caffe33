//! Video-site and cloud-drive uploads, channel by channel against a fake
//! Google on loopback: the video read from the blob store goes up in chunks by Google's
//! resumable protocol, resumes after interruptions within an attempt and across
//! attempts, and fails for good when there is nothing to upload or no account to use.

use std::time::Duration;

use reelfarm_backends::integration::{link_account, Sealer};
use reelfarm_domain::id::{DeliveryId, JobId, RenderId, TemplateId};
use reelfarm_domain::integration::{LinkedAccount, Provider};
use reelfarm_domain::notification::Notification;
use reelfarm_domain::status::RenderStatus;
use reelfarm_notifier::channel::{Attempt, Channel, Delivered, Failed, RenderFacts};
use reelfarm_notifier::google::{DriveChannel, UploadOptions, YouTubeChannel, CHUNK_UNIT};
use reelfarm_tests::google::{self, FakeGoogle, Fault, Kind};
use reelfarm_tests::{both_modes, Mode, TestApp};
use serde_json::Value;

both_modes!(
    a_video_goes_up_to_youtube_privately_in_chunks,
    a_video_goes_up_to_google_drive_as_the_named_file_in_the_folder,
    an_attempt_that_gives_up_keeps_the_session_and_the_next_attempt_resumes_it,
);

/// Five full chunks and a short one at the tests' 256 KiB chunk size.
const VIDEO_SIZE: usize = 5 * CHUNK_UNIT as usize + 12_345;

struct Setup {
    app: TestApp,
    google: FakeGoogle,
    video: Vec<u8>,
    facts: RenderFacts,
}

/// A service pointed at a fresh fake Google, a user with both accounts linked (unless
/// `link` is false), and a rendered video in the blob store.
async fn setup(mode: Mode, link: bool) -> Setup {
    let google = FakeGoogle::start().await;
    let oauth = google.oauth_url();
    let extra = [("REELFARM_GOOGLE_API_URL", google.address.as_str()), ("REELFARM_GOOGLE_OAUTH_URL", oauth.as_str())];
    let app = TestApp::spawn_with(mode, &extra).await;
    let user = app.create_user("uploader", None, 0).await;
    if link {
        let account = LinkedAccount {
            client_id: google::CLIENT_ID.into(),
            client_secret: google::CLIENT_SECRET.into(),
            refresh_token: google::REFRESH_TOKEN.into(),
        };
        let sealer = Sealer::new(&app.config);
        for provider in Provider::ALL {
            link_account(app.service.backends.store(), &sealer, &user.id, provider, &account).await.unwrap();
        }
    }
    // Not a multiple of anything, so a misplaced byte shows.
    let video: Vec<u8> = (0..VIDEO_SIZE as u64).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let key = "renders/job1/render1-abcdefghijklmnop/video.mp4";
    let body = Box::pin(std::io::Cursor::new(video.clone()));
    app.service.backends.blobs().put(key, body, "video/mp4").await.unwrap();
    let facts = RenderFacts {
        render_id: RenderId::trusted("render1"),
        job_id: JobId::trusted("job1"),
        template_id: TemplateId::trusted("template1"),
        user_id: user.id.clone(),
        external_id: "ext-1".into(),
        title: "Render one".into(),
        status: RenderStatus::Success,
        error: None,
        project_id: None,
        video_url: Some(app.service.backends.blobs().public_url(key)),
        thumbnail_url: None,
        video_key: Some(key.into()),
    };
    Setup { app, google, video, facts }
}

impl Setup {
    fn youtube(&self) -> YouTubeChannel {
        YouTubeChannel::with_options(&self.app.config, self.app.service.backends.clone(), options()).unwrap()
    }

    fn drive(&self) -> DriveChannel {
        DriveChannel::with_options(&self.app.config, self.app.service.backends.clone(), options()).unwrap()
    }
}

/// 256 KiB chunks, three interruptions per attempt, no waiting between them.
fn options() -> UploadOptions {
    UploadOptions {
        chunk_size: CHUNK_UNIT,
        interruptions: 3,
        backoff: Duration::ZERO,
        request_timeout: Duration::from_secs(30),
    }
}

fn videosite(playlist_id: Option<&str>) -> Notification {
    Notification::UploadVideosite {
        title: "Spring <launch>".into(),
        description: "Our new product, in 30 seconds.".into(),
        playlist_id: playlist_id.map(str::to_string),
        callback: None,
    }
}

fn cloudstorage(folder: &str) -> Notification {
    Notification::UploadCloudstorage { title: "spring-launch.mp4".into(), path: folder.into() }
}

/// One attempt of `channel` at `notification`.
async fn attempt(
    channel: &dyn Channel,
    notification: &Notification,
    facts: &RenderFacts,
    number: u32,
    state: Option<&Value>,
) -> Result<Delivered, Failed> {
    let attempt = Attempt {
        delivery_id: &DeliveryId::trusted("delivery1"),
        number,
        notification,
        render: facts,
        state,
        body: None,
    };
    channel.attempt(&attempt).await
}

async fn a_video_goes_up_to_youtube_privately_in_chunks(mode: Mode) {
    let s = setup(mode, true).await;
    let delivered = attempt(&s.youtube(), &videosite(None), &s.facts, 1, None).await.unwrap();

    let uploads = s.google.uploads();
    assert_eq!(uploads.len(), 1);
    let video = &uploads[0];
    assert_eq!(delivered.status_code, Some(200));
    assert_eq!(delivered.result, Some(serde_json::json!({ "video_id": video.id })));
    assert_eq!(video.kind, Kind::Video);
    assert!(video.bytes == s.video, "the uploaded bytes differ from the blob");
    assert_eq!(video.content_type, "video/mp4");
    assert_eq!(video.metadata["snippet"]["title"], "Spring launch");
    assert_eq!(video.metadata["snippet"]["description"], "Our new product, in 30 seconds.");
    assert_eq!(video.metadata["status"]["privacyStatus"], "private");
    let counts = s.google.counts();
    assert_eq!((counts.token_requests, counts.sessions_opened, counts.chunk_puts), (1, 1, 6));
    assert_eq!(counts.playlist_inserts, 0);
    let starts: Vec<u64> = (0..6).map(|i| i * CHUNK_UNIT).collect();
    assert_eq!(s.google.chunk_starts(), starts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_video_with_a_playlist_id_is_added_to_the_playlist() {
    let s = setup(Mode::Embedded, true).await;
    let delivered = attempt(&s.youtube(), &videosite(Some(google::PLAYLIST_ID)), &s.facts, 1, None).await.unwrap();
    let id = s.google.uploads()[0].id.clone();
    assert_eq!(delivered.result, Some(serde_json::json!({ "video_id": id })));
    assert_eq!(s.google.playlist_items(), vec![(google::PLAYLIST_ID.to_string(), id)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_playlist_keeps_the_upload_and_says_what_failed() {
    let s = setup(Mode::Embedded, true).await;
    let delivered = attempt(&s.youtube(), &videosite(Some("PLmissing")), &s.facts, 1, None).await.unwrap();
    let result = delivered.result.unwrap();
    assert_eq!(result["video_id"], s.google.uploads()[0].id.as_str());
    let error = result["playlist_error"].as_str().unwrap();
    assert!(error.contains("PLmissing") && error.contains("playlistNotFound"), "{error}");
    assert!(s.google.playlist_items().is_empty());
}

async fn a_video_goes_up_to_google_drive_as_the_named_file_in_the_folder(mode: Mode) {
    let s = setup(mode, true).await;
    let delivered = attempt(&s.drive(), &cloudstorage(google::FOLDER_ID), &s.facts, 1, None).await.unwrap();

    let uploads = s.google.uploads();
    assert_eq!(uploads.len(), 1);
    let file = &uploads[0];
    assert_eq!(delivered.status_code, Some(200));
    assert_eq!(delivered.result, Some(serde_json::json!({ "file_id": file.id })));
    assert_eq!(file.kind, Kind::File);
    assert!(file.bytes == s.video, "the uploaded bytes differ from the blob");
    assert_eq!(
        file.metadata,
        serde_json::json!({ "name": "spring-launch.mp4", "parents": [google::FOLDER_ID], "mimeType": "video/mp4" })
    );
    assert_eq!(s.google.counts().chunk_puts, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_drive_folder_fails_for_good_with_googles_message() {
    let s = setup(Mode::Embedded, true).await;
    let failed = attempt(&s.drive(), &cloudstorage("nofolder"), &s.facts, 1, None).await.unwrap_err();
    assert!(!failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, Some(404));
    assert!(failed.error.contains("File not found: nofolder."), "{}", failed.error);
    assert_eq!(s.google.counts().chunk_puts, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_and_a_503_are_resumed_within_the_attempt() {
    let s = setup(Mode::Embedded, true).await;
    // The third chunk's connection drops after the server kept 100,000 of its bytes;
    // the fifth chunk PUT meets a 503.
    s.google.fail_chunk(3, Fault::Drop { keep: 100_000 });
    s.google.fail_chunk(5, Fault::Status(503));
    let delivered = attempt(&s.drive(), &cloudstorage(google::FOLDER_ID), &s.facts, 1, None).await.unwrap();

    let file = &s.google.uploads()[0];
    assert_eq!(delivered.result, Some(serde_json::json!({ "file_id": file.id })));
    assert!(file.bytes == s.video, "the uploaded bytes differ from the blob");
    let counts = s.google.counts();
    assert_eq!((counts.sessions_opened, counts.status_queries), (1, 2));
    // After the drop the upload continues where the server said it stopped.
    let resumed = 2 * CHUNK_UNIT + 100_000;
    let u = CHUNK_UNIT;
    assert_eq!(s.google.chunk_starts(), vec![0, u, 2 * u, resumed, resumed + u, resumed + u, resumed + 2 * u]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_first_chunk_is_sent_again_from_the_start() {
    let s = setup(Mode::Embedded, true).await;
    // The server holds nothing after the 503: its status answer is a 308 without Range.
    s.google.fail_chunk(1, Fault::Status(503));
    attempt(&s.youtube(), &videosite(None), &s.facts, 1, None).await.unwrap();
    assert!(s.google.uploads()[0].bytes == s.video, "the uploaded bytes differ from the blob");
    let u = CHUNK_UNIT;
    assert_eq!(s.google.chunk_starts(), vec![0, 0, u, 2 * u, 3 * u, 4 * u, 5 * u]);
    assert_eq!(s.google.counts().status_queries, 1);
}

async fn an_attempt_that_gives_up_keeps_the_session_and_the_next_attempt_resumes_it(mode: Mode) {
    let s = setup(mode, true).await;
    let channel = s.youtube();
    let notification = videosite(None);
    // From the third chunk on, four PUTs in a row meet a 503: one more than an attempt
    // recovers from.
    for n in 3..=6 {
        s.google.fail_chunk(n, Fault::Status(503));
    }
    let failed = attempt(&channel, &notification, &s.facts, 1, None).await.unwrap_err();
    assert!(failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, Some(503));
    let state = failed.state.expect("the session is kept for the next attempt");
    assert!(state["session_uri"].as_str().is_some_and(|u| u.starts_with(&s.google.address)), "{state}");
    assert!(s.google.uploads().is_empty());
    assert_eq!(s.google.session_progress(), vec![2 * CHUNK_UNIT]);

    let delivered = attempt(&channel, &notification, &s.facts, 2, Some(&state)).await.unwrap();
    let video = &s.google.uploads()[0];
    assert_eq!(delivered.result, Some(serde_json::json!({ "video_id": video.id })));
    assert!(video.bytes == s.video, "the uploaded bytes differ from the blob");
    let counts = s.google.counts();
    assert_eq!(counts.sessions_opened, 1, "the second attempt opened a new session");
    // Attempt 1: chunks 0 and 1, four tries at chunk 2; attempt 2: a status query, then
    // chunk 2 onwards; nothing before it is sent again.
    let u = CHUNK_UNIT;
    assert_eq!(s.google.chunk_starts(), vec![0, u, 2 * u, 2 * u, 2 * u, 2 * u, 2 * u, 3 * u, 4 * u, 5 * u]);
    assert_eq!(counts.status_queries, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_session_that_expired_starts_over() {
    let s = setup(Mode::Embedded, true).await;
    let channel = s.drive();
    let notification = cloudstorage(google::FOLDER_ID);
    s.google.set_outage(true);
    let failed = attempt(&channel, &notification, &s.facts, 1, None).await.unwrap_err();
    let state = failed.state.expect("the session is kept");
    s.google.set_outage(false);
    s.google.expire_sessions();

    let delivered = attempt(&channel, &notification, &s.facts, 2, Some(&state)).await.unwrap();
    let file = &s.google.uploads()[0];
    assert_eq!(delivered.result, Some(serde_json::json!({ "file_id": file.id })));
    assert!(file.bytes == s.video, "the uploaded bytes differ from the blob");
    assert_eq!(s.google.counts().sessions_opened, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_access_token_is_renewed_within_the_attempt() {
    let s = setup(Mode::Embedded, true).await;
    s.google.fail_chunk(2, Fault::ExpireTokens);
    let delivered = attempt(&s.youtube(), &videosite(None), &s.facts, 1, None).await.unwrap();
    assert!(s.google.uploads()[0].bytes == s.video);
    assert_eq!(delivered.status_code, Some(200));
    let counts = s.google.counts();
    assert_eq!((counts.token_requests, counts.sessions_opened, counts.chunk_puts), (2, 1, 7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_linked_account_the_upload_fails_for_good() {
    let s = setup(Mode::Embedded, false).await;
    let failed = attempt(&s.youtube(), &videosite(None), &s.facts, 1, None).await.unwrap_err();
    assert_eq!(
        failed,
        Failed::permanent("no YouTube account is linked: link one with PUT /api2/v1/users/me/integrations/youtube")
    );
    let failed = attempt(&s.drive(), &cloudstorage(google::FOLDER_ID), &s.facts, 1, None).await.unwrap_err();
    assert_eq!(
        failed,
        Failed::permanent("no Google Drive account is linked: link one with PUT /api2/v1/users/me/integrations/gdrive")
    );
    assert_eq!(s.google.counts(), Default::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_refresh_token_fails_for_good_asking_to_relink() {
    let s = setup(Mode::Embedded, true).await;
    s.google.revoke_refresh_token();
    let failed = attempt(&s.youtube(), &videosite(None), &s.facts, 1, None).await.unwrap_err();
    assert!(!failed.retryable, "{failed:?}");
    assert_eq!(failed.status_code, Some(400));
    assert!(failed.error.contains("invalid_grant") && failed.error.contains("re-link"), "{}", failed.error);
    let failed = attempt(&s.drive(), &cloudstorage(google::FOLDER_ID), &s.facts, 1, None).await.unwrap_err();
    assert!(!failed.retryable && failed.error.contains("re-link"), "{failed:?}");
    assert_eq!(s.google.counts().sessions_opened, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_render_has_nothing_to_upload() {
    let s = setup(Mode::Embedded, true).await;
    let facts = RenderFacts {
        status: RenderStatus::Failed,
        error: Some("boom".into()),
        video_key: None,
        video_url: None,
        ..s.facts.clone()
    };
    let expected = Failed::permanent("the render failed; there is no video to upload");
    assert_eq!(attempt(&s.youtube(), &videosite(None), &facts, 1, None).await.unwrap_err(), expected);
    assert_eq!(attempt(&s.drive(), &cloudstorage(google::FOLDER_ID), &facts, 1, None).await.unwrap_err(), expected);
    assert_eq!(s.google.counts(), Default::default());
}
