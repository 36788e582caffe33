//! Bus messages: versioned serde types, defined once, inside an envelope.
//!
//! Each message names the queue it is routed to. The routing key is
//! `{queue}.{kind}`; each queue binds `{queue}.#` on the topic exchange.

use serde::{Deserialize, Serialize};

use crate::id::{AssetId, RenderId, TemplateId};

/// The queues of the system. Names are constants so that every process agrees on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Queue {
    /// Uploaded media waiting for conversion into renditions.
    Convert,
    /// Renders waiting for a worker.
    Render,
    /// Events for the notifier (render finished, …).
    Events,
}

impl Queue {
    pub const ALL: [Queue; 3] = [Queue::Convert, Queue::Render, Queue::Events];

    pub fn name(self) -> &'static str {
        match self {
            Queue::Convert => "convert",
            Queue::Render => "render",
            Queue::Events => "events",
        }
    }

    pub fn parse(s: &str) -> Option<Queue> {
        Queue::ALL.into_iter().find(|q| q.name() == s)
    }
}

/// What a message asks for. Variants are versioned: a change of meaning is a new variant,
/// and consumers keep handling old ones until no producer sends them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Message {
    /// Convert the uploaded file of an asset into its renditions.
    #[serde(rename = "convert.v1")]
    ConvertV1 { asset_id: AssetId },
    /// Render one video of a job.
    #[serde(rename = "render.v1")]
    RenderV1 { render_id: RenderId },
    /// A render ended (success or failure); the notifier delivers its notifications.
    #[serde(rename = "render_finished.v1")]
    RenderFinishedV1 { render_id: RenderId },
    /// A template was saved: render the thumb and preview of `version` (dropped when it is
    /// no longer the current one by then).
    #[serde(rename = "template_media.v1")]
    TemplateMediaV1 { template_id: TemplateId, version: i64 },
}

impl Message {
    pub fn queue(&self) -> Queue {
        match self {
            Message::ConvertV1 { .. } => Queue::Convert,
            Message::RenderV1 { .. } => Queue::Render,
            Message::RenderFinishedV1 { .. } => Queue::Events,
            Message::TemplateMediaV1 { .. } => Queue::Render,
        }
    }

    /// The message's kind, as used in routing keys and metrics labels.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::ConvertV1 { .. } => "convert.v1",
            Message::RenderV1 { .. } => "render.v1",
            Message::RenderFinishedV1 { .. } => "render_finished.v1",
            Message::TemplateMediaV1 { .. } => "template_media.v1",
        }
    }

    pub fn routing_key(&self) -> String {
        format!("{}.{}", self.queue().name(), self.kind())
    }
}

/// A message with the data every hop needs: a stable id (the outbox row's id, so a
/// republished message keeps it and consumers can deduplicate), the enqueue time and the
/// trace context of the request that caused it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub id: String,
    /// Unix milliseconds at which the message was written to the outbox.
    pub enqueued_at: i64,
    /// W3C `traceparent` of the causing request, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    pub message: Message,
}

impl Envelope {
    /// A new envelope for `message`, in the trace `traceparent` (W3C) when there is one.
    pub fn new(message: Message, traceparent: Option<String>) -> Envelope {
        Envelope { id: crate::id::new_id(), enqueued_at: crate::id::now_ms(), traceparent, message }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("envelopes always serialize")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Envelope, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips_with_a_tagged_versioned_body() {
        let env = Envelope::new(Message::ConvertV1 { asset_id: AssetId::trusted("a1") }, None);
        let json: serde_json::Value = serde_json::from_slice(&env.to_bytes()).unwrap();
        assert_eq!(json["message"]["type"], "convert.v1");
        assert_eq!(json["message"]["asset_id"], "a1");
        assert_eq!(Envelope::from_bytes(&env.to_bytes()).unwrap(), env);
        assert_eq!(env.message.routing_key(), "convert.convert.v1");
    }
}
