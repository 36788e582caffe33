//! The `reelfarm` binary's composition: serving each role, the admin CLI, local renders,
//! the first run's set-up and telemetry. A library so that the tests start the same
//! service in process, and so that the benches (`reelfarm-bench`) import templates as the
//! binary does.

pub mod admin;
pub mod bootstrap;
pub mod cli;
pub mod previews;
pub mod render;
/// `reelfarm sandbox`: the child that runs media work on users' bytes.
pub use reelfarm_worker::sandbox;
pub mod serve;
pub mod sources;
pub mod telemetry;
