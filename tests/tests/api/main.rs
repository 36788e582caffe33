//! The API suite, end to end against the real service in embedded and distributed mode:
//! one test binary (one link of libav* and everything else) with a module per area.

mod abuse;
mod animations;
mod assets;
mod batches;
mod cancel;
mod captions;
mod console;
mod console_accounts;
mod console_admin;
mod console_jobs;
mod console_studio;
mod drafts;
mod email;
mod email_abuse;
mod farm;
mod formats;
mod foundation;
mod fuzz;
mod integrations;
mod jobs;
mod mcp;
mod notifications;
mod previews;
mod snapshot;
mod sound;
mod split;
mod template_edit;
mod templates;
mod tts;
mod upload_safety;
mod uploads;
mod workers;
