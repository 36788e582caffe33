//! The store's interface, one narrow trait per aggregate, grouped here by concern. Each
//! is implemented by [`Store`](super::Store) in the module named beside it, which holds
//! its SQL. A use case imports the traits of the aggregates it works on, so what it may
//! touch is written at its head.

mod accounts;
mod assets;
mod deliveries;
mod jobs;
mod operations;
mod templates;

pub use accounts::{AccountStore, UserStore};
pub use assets::{AssetStore, LibraryStore};
pub use deliveries::{DeliveryStore, IntegrationStore};
pub use jobs::{CreditStore, JobStore, PartStore, RenderStore, SchedulerStore, ShareStore};
pub use operations::{HousekeepingStore, OutboxStore, UsageStore, WorkerStore};
pub use templates::{StudioStore, TemplateStore, TemplateVersionStore};
