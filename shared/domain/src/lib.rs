//! reelfarm's domain: what the service is about, without any I/O. The template format and
//! rich text, the values a job gives and their validation, the entities (accounts,
//! libraries, assets, jobs, renders, deliveries) with their rules (who sees a library, what
//! a job charges, how its renders rank), ids and tokens, qualities, statuses,
//! notifications and the messages on the bus. No tokio, no database, no broker, no HTTP:
//! the test script checks that with `cargo tree`.

pub mod account;
pub mod asset;
pub mod captions;
pub mod cost;
pub mod delivery;
pub mod error_key;
pub mod html;
pub mod id;
pub mod integration;
pub mod job;
pub mod library;
pub mod message;
pub mod notification;
pub mod output;
pub mod password;
pub mod preview;
pub mod priority;
pub mod quality;
pub mod status;
pub mod template;
pub mod text;
pub mod token;
pub mod tts;
