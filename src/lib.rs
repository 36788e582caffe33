//! The `reelfarm` binary's composition, as a library so that tests start the same
//! service in process.

pub mod admin;
pub mod bench;
pub mod bootstrap;
pub mod cli;
pub mod loadtest;
pub mod previews;
pub mod render;
pub mod serve;
pub mod sources;
pub mod stats;
pub mod telemetry;
