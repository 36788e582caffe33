//! Google's resumable upload protocol, shared by YouTube and Drive.
//!
//! 1. `POST` the file's metadata to the API's `/upload/…?uploadType=resumable` address
//!    with `X-Upload-Content-Type` and `X-Upload-Content-Length`; the answer's `Location`
//!    is the session URI.
//! 2. `PUT` the file to the session URI in chunks with `Content-Range: bytes a-b/total`,
//!    each a multiple of 256 KiB but the last. `308` means "resume incomplete": its
//!    `Range: bytes=0-N` says the server holds bytes up to N (no `Range`: none yet), and
//!    the next chunk starts at N + 1. `200`/`201` carries the created resource.
//! 3. After a network error or 5xx, an empty `PUT` with `Content-Range: bytes */total`
//!    asks where the upload stands (`308` + `Range`, or `200`/`201` when it is complete).
//!    `404`/`410` means the session expired: the upload starts over.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use reelfarm_backends::blob::ByteRange;

use super::oauth::Auth;
use super::{blob_failure, passing, refusal, Google};
use crate::channel::Failed;

/// The file to upload: its blob, size and media type.
pub(crate) struct Source {
    pub key: String,
    pub size: u64,
    pub content_type: String,
}

/// The request that opens a session: the upload address (with `uploadType=resumable`)
/// and the resource's metadata.
pub(crate) struct Initiation {
    /// What the API is called in messages (`YouTube`).
    pub what: &'static str,
    pub url: String,
    pub metadata: Value,
}

/// A completed upload.
pub(crate) struct Uploaded {
    pub status: u16,
    /// The created resource (a YouTube video, a Drive file).
    pub resource: Value,
    pub session_uri: String,
}

/// The session URI kept in a delivery's state between attempts.
pub(crate) fn kept_session(state: Option<&Value>) -> Option<String> {
    state?.get("session_uri")?.as_str().map(str::to_string)
}

/// Uploads `source`, continuing the session `resume` when given (asking the server where
/// it stands first). A retryable failure once a session exists keeps it in its state.
pub(crate) async fn upload(
    auth: &mut Auth<'_>,
    source: &Source,
    init: &Initiation,
    resume: Option<String>,
) -> Result<Uploaded, Failed> {
    let mut session = resume;
    run(auth, source, init, &mut session).await.map_err(|mut failed| {
        if failed.retryable && failed.state.is_none() {
            failed.state = session.map(|uri| json!({ "session_uri": uri }));
        }
        failed
    })
}

/// What the session's server said.
enum Reply {
    /// It holds the first `n` bytes.
    Holds(u64),
    /// The upload is complete.
    Done(u16, Value),
    /// The session expired or was cancelled.
    Gone,
    /// No answer, or one that asks to try again later.
    Interrupted(Option<u16>, String),
}

enum Step {
    Ask,
    Send(u64),
}

async fn run(
    auth: &mut Auth<'_>,
    source: &Source,
    init: &Initiation,
    session: &mut Option<String>,
) -> Result<Uploaded, Failed> {
    let options = auth.google.options.clone();
    let mut step = Step::Ask;
    let uri = match session.clone() {
        Some(uri) => {
            tracing::info!(what = init.what, "resuming the upload session kept by the last attempt");
            uri
        }
        None => {
            step = Step::Send(0);
            open(auth, source, init).await?
        }
    };
    *session = Some(uri);
    let mut interruptions = 0;
    let mut restarted = false;
    loop {
        let uri = session.clone().unwrap_or_default();
        let (reply, sent_from) = match step {
            Step::Ask => (put(auth, &uri, source, None).await?, None),
            Step::Send(offset) => {
                let end = (offset + options.chunk_size).min(source.size) - 1;
                let chunk = read_chunk(auth.google, source, offset, end).await?;
                (put(auth, &uri, source, Some((offset, end, chunk))).await?, Some(offset))
            }
        };
        step = match reply {
            Reply::Done(status, resource) => return Ok(Uploaded { status, resource, session_uri: uri }),
            // A chunk the server kept nothing of would be sent forever.
            Reply::Holds(n) if sent_from.is_some_and(|from| n <= from) => {
                interrupted(&mut interruptions, &options, Some(308), "the upload session kept none of a chunk").await?
            }
            Reply::Holds(n) if n < source.size => Step::Send(n),
            // Everything is there but the resource is not: ask again.
            Reply::Holds(_) => {
                interrupted(&mut interruptions, &options, None, "the upload is not complete yet").await?
            }
            Reply::Gone if restarted => {
                return Err(Failed::transient(format!("{} ended the upload session twice", init.what)))
            }
            Reply::Gone => {
                tracing::warn!(what = init.what, "the upload session is gone; starting over");
                restarted = true;
                *session = None;
                *session = Some(open(auth, source, init).await?);
                Step::Send(0)
            }
            Reply::Interrupted(status, why) => interrupted(&mut interruptions, &options, status, &why).await?,
        };
    }
}

/// Counts an interruption: waits and asks the server where the upload stands, or gives
/// the rest up to the next attempt once the attempt's allowance is spent.
async fn interrupted(
    count: &mut u32,
    options: &super::UploadOptions,
    status: Option<u16>,
    why: &str,
) -> Result<Step, Failed> {
    *count += 1;
    if *count > options.interruptions {
        return Err(Failed { status_code: status, ..Failed::transient(why) });
    }
    tracing::warn!(interruption = *count, error = why, "upload interrupted; asking where it stands");
    let wait = reelfarm_backends::backoff::exponential(options.backoff, *count, Duration::MAX);
    if wait > Duration::ZERO {
        tokio::time::sleep(wait).await;
    }
    Ok(Step::Ask)
}

/// Opens a session; returns its URI.
async fn open(auth: &mut Auth<'_>, source: &Source, init: &Initiation) -> Result<String, Failed> {
    let http = auth.google.http.clone();
    let body = Bytes::from(init.metadata.to_string());
    let answer = auth
        .send(true, |token| {
            http.post(&init.url)
                .bearer_auth(token.unwrap_or_default())
                .header("content-type", "application/json; charset=UTF-8")
                .header("x-upload-content-type", &source.content_type)
                .header("x-upload-content-length", source.size.to_string())
                .body(body.clone())
        })
        .await?;
    let res = answer.map_err(|e| Failed::transient(format!("{} did not answer: {e}", init.what)))?;
    let status = res.status().as_u16();
    if status != 200 && status != 201 {
        let body = res.text().await.unwrap_or_default();
        return Err(refusal(init.what, status, &body));
    }
    let location = res.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
    let uri = location
        .and_then(|l| url::Url::parse(&init.url).ok()?.join(l).ok())
        .ok_or_else(|| Failed::transient(format!("{} opened an upload session without a Location", init.what)))?;
    tracing::info!(what = init.what, size = source.size, "upload session opened");
    Ok(uri.to_string())
}

/// Reads bytes `start..=end` of the source.
async fn read_chunk(google: &Google, source: &Source, start: u64, end: u64) -> Result<Bytes, Failed> {
    let range = ByteRange { start, end: Some(end) };
    let read = google.backends.blobs().get(&source.key, Some(range)).await.map_err(blob_failure)?;
    let len = end - start + 1;
    let mut chunk = Vec::with_capacity(len as usize);
    read.body
        .take(len)
        .read_to_end(&mut chunk)
        .await
        .map_err(|e| Failed::transient(format!("reading the rendered video: {e}")))?;
    if chunk.len() as u64 != len {
        return Err(Failed::transient(format!("the blob store returned {} of {len} bytes at {start}", chunk.len())));
    }
    Ok(Bytes::from(chunk))
}

/// PUTs a chunk (`start`, `end`, bytes) to the session, or asks where it stands (`None`).
async fn put(
    auth: &mut Auth<'_>,
    uri: &str,
    source: &Source,
    chunk: Option<(u64, u64, Bytes)>,
) -> Result<Reply, Failed> {
    let http = auth.google.http.clone();
    // The session URI authorises the upload by itself: the token goes only to Google's
    // own origin, never to another host a Location might name.
    let authorize = same_origin(uri, &auth.google.api_url);
    let (range, body) = match chunk {
        Some((start, end, bytes)) => (format!("bytes {start}-{end}/{}", source.size), bytes),
        None => (format!("bytes */{}", source.size), Bytes::new()),
    };
    let answer = auth
        .send(authorize, |token| {
            let mut req = http.put(uri).header("content-range", &range).body(body.clone());
            if let Some(token) = token {
                req = req.bearer_auth(token);
            }
            req
        })
        .await?;
    let res = match answer {
        Ok(res) => res,
        Err(e) => return Ok(Reply::Interrupted(None, format!("the upload was interrupted: {e}"))),
    };
    let status = res.status().as_u16();
    match status {
        308 => {
            let range = res.headers().get(reqwest::header::RANGE).and_then(|v| v.to_str().ok());
            match range {
                None => Ok(Reply::Holds(0)),
                Some(r) => held(r, source.size)
                    .map(Reply::Holds)
                    .ok_or_else(|| Failed::transient(format!("the upload session answered an unreadable Range `{r}`"))),
            }
        }
        200 | 201 => match res.json::<Value>().await {
            Ok(resource) => Ok(Reply::Done(status, resource)),
            Err(e) => Ok(Reply::Interrupted(Some(status), format!("the completed upload's answer was cut: {e}"))),
        },
        404 | 410 => Ok(Reply::Gone),
        _ => {
            let body = res.text().await.unwrap_or_default();
            let failed = refusal("the upload session", status, &body);
            if passing(status, None) || failed.retryable {
                Ok(Reply::Interrupted(Some(status), failed.error))
            } else {
                Err(failed)
            }
        }
    }
}

/// The bytes a `Range: bytes=0-N` says the server holds (N + 1).
fn held(range: &str, size: u64) -> Option<u64> {
    let (first, last) = range.trim().strip_prefix("bytes=")?.split_once('-')?;
    let last: u64 = last.trim().parse().ok()?;
    (first.trim() == "0" && last < size).then_some(last + 1)
}

fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_says_how_many_bytes_the_server_holds() {
        assert_eq!(held("bytes=0-262143", 1_000_000), Some(262_144));
        assert_eq!(held("bytes=0-0", 10), Some(1));
        assert_eq!(held("bytes=0-10", 10), None);
        assert_eq!(held("bytes=5-10", 100), None);
        assert_eq!(held("items=0-10", 100), None);
    }

    #[test]
    fn tokens_go_to_the_api_origin_only() {
        assert!(same_origin("https://www.googleapis.com/upload/x?upload_id=1", "https://www.googleapis.com"));
        assert!(!same_origin("https://evil.example/upload", "https://www.googleapis.com"));
        assert!(!same_origin("http://www.googleapis.com/upload", "https://www.googleapis.com"));
    }

    #[test]
    fn the_session_is_kept_in_the_state() {
        let state = json!({ "session_uri": "https://h/u?upload_id=1" });
        assert_eq!(kept_session(Some(&state)).as_deref(), Some("https://h/u?upload_id=1"));
        assert_eq!(kept_session(None), None);
        assert_eq!(kept_session(Some(&json!({}))), None);
    }
}
