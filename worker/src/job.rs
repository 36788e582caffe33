//! The work queues: one video of a job, rendered from its template with the job's
//! values, and (`conversion`) an upload converted into its renditions.
//!
//! A render's sources become local files first: the template's placeholder files and
//! assets from the blob store (an asset's converted rendition that fits the layer, never
//! re-processed), addresses through the guarded outbound client (private addresses
//! refused, size and time limits, the bytes sniffed against the variable's type). The
//! renderer opens only those files. Text-to-speech values become speech files last, once
//! every other source was fetched and checked (`crate::tts`: synthesised once, cached in
//! the blob store, fitted to the layer); characters sent to paid providers are counted
//! per user.
//! Progress goes to the cache as the frames are done. A template's encoded sound is kept
//! for the whole fleet in the blob store (`sounds`).
//!
//! Scheduling: a `render.v1` or `template_media.v1` message (`convert.v1` for
//! conversions) is a token for one claim, not an order to make what it names. Its handler
//! claims whichever unit of its pool the scheduler puts first (`SchedulerStore::claim_work`:
//! fair between accounts by what their work takes, by priority within one, drafts,
//! template media and conversions ahead), so the broker's order does not matter and one
//! account's batch does not hold up another's video. Every unit made one token, and a
//! token is acknowledged only once a unit ended by its hand (or when no unit of its pool
//! is open at all), so there are never fewer tokens than open units.
//!
//! Idempotent and crash-safe: a claimed render holds a lease its worker extends every
//! [`claim::HEARTBEAT`]; one whose lease ran out was interrupted (its worker died) and is claimed
//! again by whichever token looks next; at the delivery limit such a render is failed
//! instead of risking another crash. A
//! failure on our side is retried (the render goes back to `pending` until its retry
//! time) up to the delivery limit, then the render fails. A failed render's credit is
//! refunded in the same transaction that records the failure. Only the attempt holding
//! the render may end it.
//!
//! Cancel: the heartbeat finds a cancelled render's attempt over; the work stops —
//! fetching or synthesising at once, the renderer before its next frame — and what it
//! uploaded is removed. A render that finishes as its job is cancelled finds it so when
//! recording the outcome, and removes its upload too.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reelfarm_backends::consumer::{Handler, Outcome};
use reelfarm_backends::store::{JobStore, PartKind, Pool, TemplateVersionStore, UsageStore};
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::cost::Estimate;
use reelfarm_domain::id::UserId;
use reelfarm_domain::job::{RenderOutcome, RenderRecord};
use reelfarm_domain::message::{Envelope, Message};
use reelfarm_domain::output::Format;
use reelfarm_domain::template::stored::TemplateRecord;
use reelfarm_domain::template::values::{apply_values_with, speech_values};
use reelfarm_domain::template::{Content, Source, Template};
use reelfarm_outbound::Outbound;
use secrecy::ExposeSecret;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::failure::Failure;
use crate::media::Limits;
use crate::render::{self, Progress, Quality, RenderError, RenderSettings};
use crate::rotation::Rotation;
use crate::sandbox::{Piece, RenderPlan, RenderServices, Sandbox};
use crate::tts::Tts;

mod claim;
mod conversion;
mod parts;
mod preview;
mod sounds;
mod sources;
mod template_media;

/// Frame rate and x264 quality of drafts: enough to judge timing and layout.
const DRAFT_FPS: u32 = 15;
const DRAFT_CRF: u8 = 28;
/// Least time between two progress updates of one render.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

pub struct RenderHandler {
    backends: Backends,
    outbound: Outbound,
    tts: Tts,
    work_dir: PathBuf,
    time_limit: Duration,
    media_limits: Limits,
    encoder_threads: u16,
    /// Renders longer than this are split (zero: never), into chunks this long, where
    /// that makes them `split_gain` times sooner.
    split_after: Duration,
    split_chunk: Duration,
    split_gain: f64,
    delivery_limit: u32,
    worker_id: String,
    /// Keys the names of the renders' files (see [`RenderHandler::output_prefix`]).
    secret: Vec<u8>,
    /// Where renders run.
    sandbox: Sandbox,
    /// Sources fetched for previews, by template version.
    previews: preview::PreviewCache,
    /// What a preview child may keep of what it decoded: pictures, video readers (bytes).
    preview_caches: (usize, usize),
    /// The worker's: a token waiting for a render to claim hands itself on.
    shutdown: CancellationToken,
    /// Whether this worker claims renders, and its failures counted.
    rotation: Arc<Rotation>,
    /// The render queue's slots, and how many of them hold long units of work.
    slots: u16,
    long_units: std::sync::atomic::AtomicU16,
    /// Wake-ups heard on the bus: a unit of work may have become claimable.
    woken: tokio::sync::Notify,
}

impl RenderHandler {
    /// `limits` are the process's, shared with the conversions (see [`Limits::memory`]).
    pub fn new(
        config: &Config,
        backends: Backends,
        limits: Limits,
        worker_id: String,
        rotation: Arc<Rotation>,
        shutdown: CancellationToken,
    ) -> anyhow::Result<RenderHandler> {
        let work_dir = crate::work_dir(config)?;
        Ok(RenderHandler {
            tts: Tts::new(config, backends.blobs().clone())?,
            backends,
            outbound: Outbound::new(&config.ops.outbound_allow),
            work_dir,
            time_limit: config.worker.job_timeout,
            media_limits: limits,
            encoder_threads: config.worker.encoder_threads,
            split_after: config.worker.split_after,
            split_chunk: config.worker.split_chunk,
            split_gain: config.worker.split_gain,
            delivery_limit: config.bus.delivery_limit,
            worker_id,
            secret: config.storage.secret_key.expose_secret().as_bytes().to_vec(),
            sandbox: Sandbox::new(config.worker.sandbox_program.clone())?,
            previews: std::sync::Mutex::new(lru::LruCache::new(preview::PREVIEW_CACHE)),
            preview_caches: (config.caches.still_cache, config.caches.video_cache),
            shutdown,
            rotation,
            slots: config.worker.worker_slots,
            long_units: Default::default(),
            woken: tokio::sync::Notify::new(),
        })
    }

    /// What every attempt at `render` (whole or a part) starts from.
    async fn prepare(&self, render: &RenderRecord) -> Result<Prepared, Failure> {
        let store = self.backends.store();
        let job = store.job(&render.job_id).await?;
        let record = store.template_at(&job.template_id, job.template_version).await?;
        let template: Template = serde_json::from_str(&record.json)
            .map_err(|e| Failure::Transient(format!("template {} document: {e}", record.id)))?;
        let values = render.template_variables.clone();
        let mut template = apply_values_with(&template, &values, &self.tts.voices).map_err(|problems| {
            let lines: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
            Failure::Permanent(format!("the values no longer fit the template: {}", lines.join("; ")))
        })?;
        let quality =
            if job.draft { Quality::of_preview(template.canvas.width, template.canvas.height) } else { job.quality };
        // Checked when the template was saved, but the limits may have been lowered since.
        if let Err(problems) = self.media_limits.template.check(&template, quality, &|_| None) {
            let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
            let message = format!("the template asks more than this farm renders: {}", lines.join("; "));
            return Err(Failure::Permanent(message));
        }
        let settings = if job.draft {
            // As fast as it goes: at most 480p and 15 fps, x264's fastest preset.
            template.canvas.fps = template.canvas.fps.min(DRAFT_FPS);
            RenderSettings { quality, preset: "ultrafast", crf: DRAFT_CRF, ..RenderSettings::default() }
        } else {
            RenderSettings { quality, output: job.output, ..RenderSettings::default() }
        };
        let dir = tempfile::Builder::new().prefix("render-").tempdir_in(&self.work_dir)?;
        let deadline = self.unit_deadline(&template, &settings);
        Ok(Prepared { user_id: job.user_id, record, template, values, settings, dir, deadline })
    }

    /// When a unit of work rendering `template` with `settings` must be done, counted from
    /// now: its fetches ([`sources::FETCH_TIME`] at most) and its render's time limit, which comes
    /// from its estimate (a render far slower than estimated is stopped long before the
    /// job timeout; a render of the first seconds only is bounded by them).
    fn unit_deadline(&self, template: &Template, settings: &RenderSettings) -> Instant {
        Instant::now() + sources::FETCH_TIME + self.render_limit(template, settings)
    }

    fn render_limit(&self, template: &Template, settings: &RenderSettings) -> Duration {
        let estimate = Estimate::of(template, settings.quality, &settings.output, &|_| None);
        let estimate = settings.max_seconds.map_or(estimate, |seconds| estimate.first(seconds));
        estimate.time_limit(self.time_limit)
    }

    /// Renders `render` whole, or, when it is longer than the split threshold, says into
    /// which parts to split it.
    async fn run(&self, render: &RenderRecord, stop: &CancellationToken) -> Result<Made, Failure> {
        let mut p = self.prepare(render).await?;
        if let Some(parts) = self.parts_of(&p).await {
            return Ok(Made::Split(parts));
        }
        let quality = p.settings.quality;
        let dir = p.dir.path();
        // Speech is synthesised (and paid for) last: a render whose other sources fail
        // (a refused or unreachable address, media that does not decode) costs nothing.
        let speeches = self.plan_speech(&mut p.template, &p.values, dir);
        let ready = speeches.iter().map(|s| (s.source.clone(), s.file.clone())).collect();
        let wanted = render::sources(&p.template);
        let fetched = self.fetch_sources(&p.template, wanted, &p.record, quality, dir, ready, p.deadline).await?;
        let speech = self.speak(&speeches, &p.user_id).await?;
        let format = p.settings.output.format;
        let (video, jpg) = (dir.join(format!("video.{format}")), dir.join("thumb.jpg"));
        let settings = RenderSettings { stop: stop.clone(), speech, ..p.settings.clone() };
        let settings = settings.until(p.deadline);
        let piece = Piece::Whole { out: video.clone(), thumb: jpg.clone() };
        let output = self
            .render(&p.template, fetched, settings, Some(render), dir, piece, p.user_id.as_str())
            .await?
            .ok_or_else(|| Failure::Transient("the render made no video".into()))?;

        let prefix = self.output_prefix(render);
        self.backends.blobs().put_file(&format!("{prefix}/thumb.jpg"), &jpg, "image/jpeg").await?;
        self.upload_video(&prefix, &video, format, &output).await
    }

    /// Uploads the render's `video` file of `format` (its thumbnail is there already) and
    /// its captions as a WebVTT sidecar when it has captions layers, under `prefix`: the
    /// render's successful outcome.
    async fn upload_video(
        &self,
        prefix: &str,
        video: &Path,
        format: Format,
        output: &render::RenderOutput,
    ) -> Result<Made, Failure> {
        let blobs = self.backends.blobs();
        let (video_key, thumb_key) = (format!("{prefix}/video.{format}"), format!("{prefix}/thumb.jpg"));
        blobs.put_file(&video_key, video, format.content_type()).await?;
        let captions_key = match &output.captions {
            Some(cues) => {
                let key = format!("{prefix}/captions.vtt");
                let vtt = reelfarm_domain::captions::to_vtt(cues).into_bytes();
                blobs.put(&key, Box::pin(std::io::Cursor::new(vtt)), "text/vtt; charset=utf-8").await?;
                Some(key)
            }
            None => None,
        };
        Ok(Made::Render(RenderOutcome::Success {
            video_key,
            thumb_key,
            width: i64::from(output.width),
            height: i64::from(output.height),
            duration_ms: (output.duration * 1000.0).round() as i64,
            captions_key,
            sound_level: output.sound_level,
        }))
    }

    /// Renders `piece` of `template` in a sandboxed child with the worker's limits, its
    /// sources the `fetched` files (all in `dir`, the only directory the child sees),
    /// within `output.time_limit` (what is left of the unit's deadline);
    /// while it runs a task passes its progress to the cache as `render`'s (none given:
    /// not reported). `output` gives the size and encoding; the sounds the child keeps
    /// are `account`'s.
    #[allow(clippy::too_many_arguments)]
    async fn render(
        &self,
        template: &Template,
        fetched: Vec<(Source, PathBuf)>,
        output: RenderSettings,
        render: Option<&RenderRecord>,
        dir: &Path,
        piece: Piece,
        account: &str,
    ) -> Result<Option<render::RenderOutput>, Failure> {
        let (progress_tx, mut progress_rx) = watch::channel(0u8);
        let cache = self.backends.cache().clone();
        let render_id = render.map(|r| r.id.clone());
        // Stops with this render, also when the handler is dropped (the worker is killed).
        let _reporter = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            let Some(render_id) = render_id else { return };
            while progress_rx.changed().await.is_ok() {
                let percent = *progress_rx.borrow_and_update();
                if let Err(e) = cache.set_render_progress(&render_id, percent).await {
                    tracing::debug!(error = %e, "render progress not recorded");
                }
                tokio::time::sleep(PROGRESS_INTERVAL).await;
            }
        }));
        // Its estimate's limit, never past what is left of the unit's deadline (`until`).
        let time_limit = self.render_limit(template, &output).min(output.time_limit);
        let limits = Limits { time_limit, ..self.media_limits.clone() };
        let plan = RenderPlan {
            template: template.clone(),
            sources: fetched,
            dir: dir.to_owned(),
            quality: output.quality,
            output: output.output,
            crf: output.crf,
            preset: output.preset.into(),
            threads: self.encoder_threads,
            speech: output.speech,
            max_seconds: output.max_seconds,
            sounds: true,
            piece,
        };
        let sounds = sounds::BlobSounds::new(self.backends.blobs().clone(), self.secret.clone(), account);
        let progress = move |p: Progress| {
            let percent = (p.frames_done * 100 / p.frames_total.max(1)).min(100) as u8;
            progress_tx.send_if_modified(|current| std::mem::replace(current, percent) != percent);
        };
        let services = RenderServices { progress: &progress, sounds: Some(Arc::new(sounds)), stop: &output.stop };
        match self.sandbox.render(plan, &limits, &services).await {
            Ok(output) => Ok(output),
            Err(e) if e.is_bad_input() => Err(Failure::Permanent(e.to_string())),
            Err(RenderError::TimedOut { limit }) => Err(Failure::Spent(format!(
                "the render took longer than the limit of {limit:.0} s; the credit is kept (the time was spent)"
            ))),
            Err(e) => Err(Failure::Transient(e.to_string())),
        }
    }

    /// Where the files of `render` go: `renders/{job}/{render}-{name}`, the name keyed with
    /// the deployment's secret (unguessable, as file links need no token) and the same on
    /// every attempt, so that an attempt cut off between upload and record (a killed
    /// worker, a database restart) leaves nothing behind: the next one writes the same keys.
    fn output_prefix(&self, render: &RenderRecord) -> String {
        let name = reelfarm_domain::token::keyed_name(&self.secret, &["reelfarm-render-v1", render.id.as_str()]);
        format!("renders/{}/{}-{}", render.job_id, render.id, &name[..24])
    }

    /// Removes the files of `render`'s attempts.
    async fn remove_outputs(&self, render: &RenderRecord) {
        if let Err(e) = self.backends.blobs().delete_prefix(&format!("{}/", self.output_prefix(render))).await {
            tracing::warn!(error = %e, "files of a render not removed");
        }
    }

    /// Points the layers of the text-to-speech values of `values` at their speech (an
    /// unguessable address under the reserved `.invalid` domain, never fetched; the
    /// speech fills the layer's slot, so the layer's `trim_start` and `loop` no longer
    /// apply) and returns what to synthesise into which file, for [`Self::speak`].
    fn plan_speech(
        &self,
        template: &mut Template,
        values: &serde_json::Map<String, serde_json::Value>,
        dir: &Path,
    ) -> Vec<PlannedSpeech> {
        let mut planned = Vec::new();
        let nonce = reelfarm_domain::token::random_base62(16);
        for (i, (layer_id, speech)) in speech_values(template, values, &self.tts.voices).into_iter().enumerate() {
            let Some((clip_duration, layer)) = template
                .clips
                .iter_mut()
                .find_map(|c| c.layers.iter_mut().find(|l| l.id == layer_id).map(|l| (c.duration, l)))
            else {
                continue;
            };
            let slot = layer.duration_in(clip_duration);
            let Content::Sound(sound) = &mut layer.content else { continue };
            let source = Source::Url { url: format!("https://speech.invalid/{nonce}/{i}.wav") };
            sound.source = source.clone();
            sound.trim_start = 0.0;
            sound.loop_ = false;
            let file = dir.join(format!("speech-{i}.wav"));
            let captioned = template.captions_speech(&layer_id);
            planned.push(PlannedSpeech { layer_id, speech, slot, source, file, captioned });
        }
        planned
    }

    /// Makes the planned speech files, counting the characters sent to paid providers
    /// (a cached speech sends none) against `user_id`; returns the cues of each speech
    /// by its sound layer.
    async fn speak(&self, planned: &[PlannedSpeech], user_id: &UserId) -> Result<render::SpeechCues, Failure> {
        let mut cues = Vec::with_capacity(planned.len());
        for p in planned {
            let (characters, spoken) = self.tts.prepare(&p.speech, p.slot, &p.file, p.captioned).await?;
            cues.push((p.layer_id.clone(), spoken));
            let provider = p.speech.provider;
            if characters > 0 && provider != reelfarm_domain::tts::Provider::Espeak {
                // Metering must not fail a render that was paid for already.
                if let Err(e) = self.backends.store().add_tts_characters(user_id, provider.as_str(), characters).await {
                    tracing::warn!(error = %e, characters, "text-to-speech characters not counted");
                }
            }
        }
        Ok(cues)
    }
}

/// What an attempt at a render starts from ([`RenderHandler::prepare`]).
struct Prepared {
    user_id: UserId,
    record: TemplateRecord,
    /// The template with the render's values applied (a draft's frame rate lowered).
    template: Template,
    values: serde_json::Map<String, serde_json::Value>,
    /// Size and encoding.
    settings: RenderSettings,
    /// The attempt's scratch directory.
    dir: tempfile::TempDir,
    /// When the attempt must be done, its fetches included ([`RenderHandler::unit_deadline`]).
    deadline: Instant,
}

/// What a claimed attempt made.
enum Made {
    /// The render, whole or joined from its parts.
    Render(RenderOutcome),
    /// Nothing yet: the render is to be split into these parts.
    Split(Vec<(PartKind, i64, i64)>),
    /// A part of a split render, uploaded.
    Part,
}

/// A text-to-speech value of a render, to be synthesised into `file` (the layer's
/// `source`) once every other source is in.
struct PlannedSpeech {
    /// The sound layer it is spoken on.
    layer_id: String,
    speech: reelfarm_domain::tts::Speech,
    /// Seconds of the layer's slot.
    slot: f64,
    source: Source,
    file: PathBuf,
    /// A captions layer shows its words (their times are asked for where a provider
    /// reports them).
    captioned: bool,
}

#[async_trait]
impl Handler for RenderHandler {
    async fn handle(&self, envelope: &Envelope, _attempt: u32) -> Outcome {
        match &envelope.message {
            Message::RenderV1 { .. } | Message::TemplateMediaV1 { .. } => {
                self.claim_and_render(&envelope.message, Pool::Renders).await
            }
            Message::ConvertV1 { .. } => self.claim_and_render(&envelope.message, Pool::Conversions).await,
            other => Outcome::Abort(format!("unexpected message {} on a work queue", other.kind())),
        }
    }
}
