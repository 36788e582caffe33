//! The `preview` call: the frame of a template version at a time, with a
//! job's values applied, asked by the api and drawn by a worker with the renderer's own
//! compositor. Calls are JSON; answers are one tag byte and the payload (a JPEG needs no
//! encoding that way).

use serde::{Deserialize, Serialize};

use crate::id::TemplateId;
use crate::quality::Quality;

/// Seconds of a template's preview video, made when it is saved or imported: the first
/// seconds of the video, never all of a long one.
pub const TEMPLATE_PREVIEW_SECONDS: f64 = 10.0;

/// Longest the api waits for a worker's frame; a worker stops drawing a frame a little
/// after it, when nobody waits for it any more.
pub const PREVIEW_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// What to draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreviewCall {
    pub template_id: TemplateId,
    pub version: i64,
    /// Seconds from the start of the video (the frame `round(at × fps)`).
    pub at: f64,
    pub quality: Quality,
    /// The values of the template's variables, as in a job's `template_variables`,
    /// already checked by the api.
    pub values: serde_json::Map<String, serde_json::Value>,
    /// A document to draw instead of the version's own (the studio's unsaved working
    /// copy, already checked by the api as a save is); it may use the stored files of
    /// `version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
}

impl PreviewCall {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("preview calls serialize")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<PreviewCall, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// What the worker answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewAnswer {
    /// The frame, as a JPEG.
    Frame(Vec<u8>),
    /// The template cannot be drawn with these values (media that does not decode, a
    /// source that cannot be fetched); the message says why, for the user.
    Refused(String),
    /// It was not drawn within the preview's time limit (a busy worker); worth asking
    /// again. The message is for the logs.
    Busy(String),
    /// It failed on our side; the message is for the logs.
    Failed(String),
}

impl PreviewAnswer {
    pub fn to_bytes(&self) -> Vec<u8> {
        let (tag, payload) = match self {
            PreviewAnswer::Frame(jpeg) => (b'F', jpeg.as_slice()),
            PreviewAnswer::Refused(message) => (b'R', message.as_bytes()),
            PreviewAnswer::Busy(message) => (b'B', message.as_bytes()),
            PreviewAnswer::Failed(message) => (b'X', message.as_bytes()),
        };
        [&[tag][..], payload].concat()
    }

    /// `None` for bytes no worker sends.
    pub fn from_bytes(bytes: &[u8]) -> Option<PreviewAnswer> {
        let (tag, payload) = bytes.split_first()?;
        let text = || String::from_utf8_lossy(payload).into_owned();
        match tag {
            b'F' => Some(PreviewAnswer::Frame(payload.to_vec())),
            b'R' => Some(PreviewAnswer::Refused(text())),
            b'B' => Some(PreviewAnswer::Busy(text())),
            b'X' => Some(PreviewAnswer::Failed(text())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_answers_round_trip() {
        let call = PreviewCall {
            template_id: TemplateId::trusted("t1"),
            version: 3,
            at: 1.5,
            quality: Quality::P720,
            values: serde_json::from_str(r#"{"a": "b"}"#).unwrap(),
            document: Some(r#"{"version": 1}"#.into()),
        };
        assert_eq!(PreviewCall::from_bytes(&call.to_bytes()).unwrap(), call);
        for answer in [
            PreviewAnswer::Frame(vec![0xff, 0xd8, 0]),
            PreviewAnswer::Refused("no".into()),
            PreviewAnswer::Busy("slow".into()),
            PreviewAnswer::Failed("oops".into()),
        ] {
            assert_eq!(PreviewAnswer::from_bytes(&answer.to_bytes()), Some(answer));
        }
        assert_eq!(PreviewAnswer::from_bytes(b""), None);
        assert_eq!(PreviewAnswer::from_bytes(b"Q"), None);
    }
}
