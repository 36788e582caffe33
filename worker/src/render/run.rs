//! One render from start to finish: check the template and every source, open the
//! sounds, then frame by frame prepare the clips coming up, composite, hand the canvas to
//! the encoder thread and mix the sound up to the end of that frame (unless the same sound
//! was encoded by an earlier render: then its packets are written as they were).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use reelfarm_domain::output::{Format, Output};
use reelfarm_domain::template::{Content, Source, Template};

use super::audio::{Mixer, Track, TrackSpec};
use super::captions;
use super::composite::{needs, transition, Needs};
use super::encode::{sound_encoding, write_thumbnail, Sound};
use super::layer::{prepare, Body, ImageWork, Pictured, Visual};
use super::master::master_for;
use super::picture::{Picture, Yuv};
use super::plan::{Plan, Shot};
use super::sink::{shown_frames, thumbnail_of, Sink};
use super::sound_cache::{self, Kept};
use super::source::Resolver;
use super::video::VideoReader;
use super::{Progress, Quality, RenderError, RenderOutput, RenderSettings, SpeechCues};
use crate::media::budget::estimate;
use crate::media::limits::Deadline;
use crate::media::{Limits, MediaKind};

/// What of a render to make.
pub(super) enum Piece {
    /// The whole video with its sound.
    Whole,
    /// The frames of `range` alone, without sound: a part of a split render.
    Frames(Range<u64>),
}

/// Renders `piece` of `template` into `out` (the format of `settings.output`), and the
/// thumbnail into `out_jpg` when its frame is among the piece's.
pub(super) fn render(
    template: &Template,
    resolve: &dyn Fn(&Source) -> Option<PathBuf>,
    settings: &RenderSettings,
    piece: Piece,
    out: &Path,
    out_jpg: &Path,
    progress: &dyn Fn(Progress),
) -> Result<RenderOutput, RenderError> {
    let deadline = Deadline::after(settings.time_limit);
    let limits = Limits { time_limit: settings.time_limit, ..settings.limits.clone() };
    let resolver = Resolver::new(resolve, None);
    let voices = voices(template, &settings.speech);
    let (template, captions) = captions::resolve(template, &resolver, &settings.speech)?;
    let template = template.as_ref();
    let output = settings.output;
    let heard = matches!(piece, Piece::Whole) && output.format.has_sound();
    let (plan, videos) = checked_plan_of(template, settings.quality, &resolver, &limits, heard)?;
    let plan = plan.cut(settings.max_seconds);
    let range = match piece {
        Piece::Whole => 0..plan.frames,
        Piece::Frames(range) if range.start < range.end && range.end <= plan.frames => range,
        Piece::Frames(range) => {
            return Err(RenderError::Internal(format!("frames {range:?} are not within the {} frames", plan.frames)))
        }
    };
    let shown = shown_frames(&plan, &output, range, thumbnail_frame(&plan));
    let thumb_frame = thumbnail_of(&output, &shown, thumbnail_frame(&plan));
    // Held until the render ends (released on drop, panic included).
    let reserved = reservation(template, settings.quality, output.format, &videos);
    let _memory = limits.memory.reserve_for("the render", reserved, &deadline)?;
    let (mut mixer, sound, sound_key) = if heard {
        let specs = track_specs(template, &plan, &resolver, &voices, &limits)?;
        let sound_key = sound_cache::key(
            &specs,
            plan.samples,
            sound_encoding(output.format),
            settings.output.loudness.or(template.loudness),
        );
        let kept = sound_key.as_ref().and_then(|key| sound_cache::get(key, settings.sounds.as_deref()));
        reelfarm_backends::metrics::render_sound(kept.is_some());
        match kept {
            Some(kept) => (None, Some(Sound::Kept(kept)), sound_key),
            None => (
                Some(mixer(&specs, plan.samples, settings.output.loudness.or(template.loudness), &deadline, &limits)?),
                Some(Sound::Encode { keep: sound_key.is_some() }),
                sound_key,
            ),
        }
    } else {
        (None, None, None)
    };
    let kept_level = match &sound {
        Some(Sound::Kept(kept)) => Some(kept.level),
        _ => None,
    };
    let (first, end) = (shown.first().copied().unwrap_or(0), shown.last().map_or(0, |n| n + 1));
    let mut frames = Frames::new(template, &plan, &resolver, &deadline, &limits);
    // Every still is decoded, fitted and converted now, before the encoder allocates its
    // frames: the big transient buffers of decoding are gone by then, and a bad picture
    // fails the render before any encoding. Video decoders start at the first frame they
    // show.
    frames.prepare(|i| plan.clips[i].first < end && plan.clips[i].end > first)?;
    resolver.close_unread();
    stopped(settings)?;
    let encoding = (settings.crf, settings.preset, settings.threads);
    let subtitles = captions.as_deref().filter(|_| heard && output.subtitles && output.format.can_have_subtitles());
    let mut sink = Sink::start(out, &plan, &output, encoding, sound, subtitles)?;
    let mut thumb = None;
    let total = shown.len() as u64;
    // A GIF maps every frame again after the last one is drawn: half of its progress.
    let passes = if output.format == Format::Gif { 2 } else { 1 };
    for (done, &n) in (1..).zip(&shown) {
        deadline.check()?;
        stopped(settings)?;
        let mut canvas = sink.recycled().unwrap_or_default();
        canvas.try_reset(plan.width, plan.height, output.transparent)?;
        frames.compose(n, &mut canvas)?;
        if Some(n) == thumb_frame {
            thumb = Some(canvas.clone());
        }
        let pcm = match &mut mixer {
            Some(mixer) => Some(mixer.mix_until(plan.sample(plan.time(n + 1)), &deadline)?),
            None => None,
        };
        if !sink.push(canvas, pcm)? {
            // The encoder stopped: its error says why.
            sink.finish(&|_| Ok(()))?;
            return Err(RenderError::Internal("the encoder stopped early".into()));
        }
        progress(Progress { frames_done: done, frames_total: total * passes });
    }
    let mut sound_level = kept_level.flatten();
    if let Some(mixer) = &mut mixer {
        let rest = mixer.mix_until(plan.samples, &deadline)?;
        if !rest[0].is_empty() {
            sink.audio(rest);
        }
        sound_level = mixer.level()?;
    }
    drop(frames);
    // Written while the encoder drains its last frames, when a core is free.
    if let Some(thumb) = thumb {
        write_thumbnail(&thumb, out_jpg)?;
    }
    // What is left after the last frame (a GIF's second pass) still stops in time.
    let go_on = |written: u64| {
        deadline.check()?;
        stopped(settings)?;
        progress(Progress { frames_done: total + written, frames_total: total * passes });
        Ok(())
    };
    // Only a finished render's sound is kept: one cut short has part of it.
    if let (Some(key), Some(packets)) = (sound_key, sink.finish(&go_on)?) {
        sound_cache::put(key, Kept::new(packets, sound_level), settings.sounds.as_deref());
    }
    let (frames, fps) = match output.format {
        f if f.is_still() => (0, plan.fps),
        Format::Gif => (total, output.fps_of(plan.fps)),
        _ => (total, plan.fps),
    };
    Ok(RenderOutput {
        width: plan.width,
        height: plan.height,
        frames,
        duration: frames as f64 / f64::from(fps.max(1)),
        sound_kept: kept_level.is_some(),
        sound_level,
        captions,
    })
}

/// `Err(Cancelled)` once the render was told to stop.
fn stopped(settings: &RenderSettings) -> Result<(), RenderError> {
    if settings.stop.is_cancelled() {
        return Err(RenderError::Cancelled);
    }
    Ok(())
}

/// The template checked, its timeline resolved for `quality` and every source probed:
/// what a render and a snapshot do before anything else. Also returns the declared frame
/// size of each video layer's source (one entry per layer), for the memory estimate.
pub(super) fn checked_plan(
    template: &Template,
    quality: Quality,
    resolver: &Resolver,
    limits: &Limits,
) -> Result<(Plan, Vec<(u32, u32)>), RenderError> {
    checked_plan_of(template, quality, resolver, limits, true)
}

/// [`checked_plan`]; without `heard`, the sources only heard (sound layers and the
/// soundtrack) are neither needed nor probed.
pub(super) fn checked_plan_of(
    template: &Template,
    quality: Quality,
    resolver: &Resolver,
    limits: &Limits,
    heard: bool,
) -> Result<(Plan, Vec<(u32, u32)>), RenderError> {
    let lines = |errors: Vec<reelfarm_domain::template::ValidationError>| {
        RenderError::Template(errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
    };
    template.validate().map_err(lines)?;
    limits.template.check(template, quality, &|_| None).map_err(lines)?;
    let plan = Plan::new(template, quality);
    let videos = check_sources(template, resolver, limits, heard)?;
    Ok((plan, videos))
}

/// The bytes a render of `template` is reserved: the estimate of its canvases, encoder
/// and every layer's picture (`reelfarm_domain::cost`), and a decoder of each video layer
/// at its source's declared size (`videos`).
pub(super) fn reservation(template: &Template, quality: Quality, format: Format, videos: &[(u32, u32)]) -> u64 {
    let layers =
        reelfarm_domain::cost::Estimate::of(template, quality, &Output { format, ..Output::default() }, &|_| None)
            .peak_memory;
    layers + estimate::render_here(0, 0, videos)
}

/// The frame the thumbnail shows: one third of the video.
pub(super) fn thumbnail_frame(plan: &Plan) -> u64 {
    plan.frames / 3
}

/// The compositor: the layers of each clip, prepared before the first frame and dropped
/// after the clip, drawn frame by frame. Renders and snapshots both draw through it.
pub(super) struct Frames<'a> {
    template: &'a Template,
    plan: &'a Plan,
    resolver: &'a Resolver<'a>,
    deadline: &'a Deadline,
    limits: &'a Limits,
    background: Yuv,
    clips: Vec<Option<Vec<Visual>>>,
    /// Whether layers are dropped once over (a render's memory); a snapshot keeps its
    /// layers so that their video readers can be kept.
    pub(super) release: bool,
    scratch_a: Picture,
    scratch_b: Picture,
}

impl<'a> Frames<'a> {
    pub(super) fn new(
        template: &'a Template,
        plan: &'a Plan,
        resolver: &'a Resolver<'a>,
        deadline: &'a Deadline,
        limits: &'a Limits,
    ) -> Frames<'a> {
        Frames {
            template,
            plan,
            resolver,
            deadline,
            limits,
            background: Yuv::of(template.canvas.background),
            clips: Vec::new(),
            release: true,
            scratch_a: Picture::default(),
            scratch_b: Picture::default(),
        }
    }

    /// Draws frame `n` onto `canvas` (sized to the plan; opaque, or with alpha for a
    /// transparent output) and releases what the frames after it no longer need.
    pub(super) fn compose(&mut self, n: u64, canvas: &mut Picture) -> Result<(), RenderError> {
        match self.plan.shot(n) {
            Shot::Clip(i) => self.draw_clip(i, n, canvas)?,
            Shot::Transition { from, progress } => {
                let Some(kind) = self.plan.clips[from].transition.clone() else {
                    return self.draw_clip(from, n, canvas);
                };
                match needs(&kind, progress) {
                    Needs::Outgoing => {
                        self.draw_clip(from, n, canvas)?;
                        transition(canvas, None, &Picture::default(), &kind, progress);
                    }
                    Needs::Incoming => {
                        self.draw_clip(from + 1, n, canvas)?;
                        transition(canvas, None, &Picture::default(), &kind, progress);
                    }
                    Needs::Both => {
                        let mut a = std::mem::take(&mut self.scratch_a);
                        let mut b = std::mem::take(&mut self.scratch_b);
                        a.try_reset(canvas.width, canvas.height, canvas.has_alpha())?;
                        b.try_reset(canvas.width, canvas.height, canvas.has_alpha())?;
                        let slide = matches!(kind, reelfarm_domain::template::Transition::Slide { .. });
                        let result = (|| {
                            self.draw_clip(from, n, if slide { &mut a } else { canvas })?;
                            self.draw_clip(from + 1, n, &mut b)
                        })();
                        if result.is_ok() {
                            transition(canvas, slide.then_some(&a), &b, &kind, progress);
                        }
                        self.scratch_a = a;
                        self.scratch_b = b;
                        result?;
                    }
                }
            }
        }
        // Release the clips that are over.
        for (i, span) in self.plan.clips.iter().enumerate().filter(|_| self.release) {
            if span.end <= n + 1 {
                self.clips[i] = None;
            } else if let Some(layers) = self.clips[i].as_mut() {
                layers.iter_mut().filter(|l| l.span.end_frame <= n + 1).for_each(Visual::retire);
            }
        }
        Ok(())
    }

    /// Prepares the layers of the clips `wanted` accepts (by index); the others draw as
    /// the background alone. The image layers' pictures are made on a second thread,
    /// in the layers' order, while this one prepares the other layers (texts, videos);
    /// an error is still the first layer's in the template's order.
    pub(super) fn prepare(&mut self, wanted: impl Fn(usize) -> bool) -> Result<(), RenderError> {
        let works: Vec<ImageWork> = (self.template.clips.iter().enumerate())
            .filter(|(i, _)| wanted(*i))
            .flat_map(|(i, clip)| clip.layers.iter().map(move |layer| (i, layer)))
            .filter_map(|(i, layer)| ImageWork::of(self.plan, i, layer, self.resolver))
            .collect();
        let (stills, limits, deadline) = (self.resolver.stills(), self.limits, self.deadline);
        if works.is_empty() {
            return self.prepare_layers(&wanted, &mut |work| work.run(stills, limits, deadline));
        }
        let stop = &AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (made, pictures) = mpsc::channel();
            std::thread::Builder::new()
                .name("render-pictures".into())
                .spawn_scoped(scope, move || {
                    for work in works {
                        if stop.load(Ordering::Relaxed) || made.send(work.run(stills, limits, deadline)).is_err() {
                            break;
                        }
                    }
                })
                .map_err(RenderError::Io)?;
            let result = self.prepare_layers(&wanted, &mut |_| {
                pictures.recv().unwrap_or_else(|_| Err(RenderError::Internal("the picture thread stopped".into())))
            });
            stop.store(true, Ordering::Relaxed);
            result
        })
    }

    fn prepare_layers(
        &mut self,
        wanted: &impl Fn(usize) -> bool,
        images: &mut dyn FnMut(ImageWork) -> Result<Pictured, RenderError>,
    ) -> Result<(), RenderError> {
        for (i, clip) in self.template.clips.iter().enumerate() {
            if !wanted(i) {
                self.clips.push(None);
                continue;
            }
            let mut layers = Vec::new();
            for layer in &clip.layers {
                if let Some(v) = prepare(self.plan, i, layer, self.resolver, self.deadline, self.limits, images)? {
                    layers.push(v);
                }
            }
            self.clips.push(Some(layers));
        }
        Ok(())
    }

    /// The video readers of the layers prepared, once the frames are drawn.
    pub(super) fn into_videos(self) -> impl Iterator<Item = VideoReader> + 'a {
        self.clips.into_iter().flatten().flatten().filter_map(|layer| match layer.body {
            Body::Video(video) => Some(video.reader),
            _ => None,
        })
    }

    fn draw_clip(&mut self, i: usize, n: u64, canvas: &mut Picture) -> Result<(), RenderError> {
        // The first layer drawn fills the background under it (unless it covers it).
        let mut background = Some(self.background);
        if let Some(layers) = self.clips[i].as_mut() {
            for layer in layers.iter_mut().filter(|l| l.span.contains(n)) {
                layer.draw(canvas, n, self.plan, self.deadline, background.take())?;
            }
        }
        if let Some(color) = background {
            canvas.fill(color);
        }
        Ok(())
    }
}

/// Every source is present and readable (probed by the media engine) before any work.
/// Returns the declared frame size of the source of every video layer showing a video.
fn check_sources(
    template: &Template,
    resolver: &Resolver,
    limits: &Limits,
    heard: bool,
) -> Result<Vec<(u32, u32)>, RenderError> {
    let layers = template
        .clips
        .iter()
        .flat_map(|c| &c.layers)
        .filter(|l| heard || !matches!(l.content, Content::Sound(_)))
        // A Lottie file is read (and checked) by its layer.
        .filter(|l| !matches!(l.content, Content::Lottie(_)))
        .filter_map(|l| l.content.source().map(|s| (l.id.as_str(), s, matches!(l.content, Content::Video(_)))));
    let soundtrack = template.soundtrack.as_ref().filter(|_| heard).map(|s| ("soundtrack", &s.source, false));
    let mut videos = Vec::new();
    for (who, source, video_layer) in layers.chain(soundtrack) {
        let path = resolver.path(who, source)?;
        let probe = resolver.probe(&path, limits).map_err(RenderError::source(who))?;
        if video_layer && probe.kind == MediaKind::Video {
            videos.push((probe.width.unwrap_or(0), probe.height.unwrap_or(0)));
        }
    }
    Ok(videos)
}

/// The ids of the sound layers that are speech: marked `voice`, speaking a
/// text-to-speech value, or transcribed by a captions layer.
pub(super) fn voices(template: &Template, speech: &SpeechCues) -> Vec<String> {
    let layers = template.clips.iter().flat_map(|clip| &clip.layers);
    layers
        .filter(|layer| match &layer.content {
            Content::Sound(sound) => {
                sound.voice || speech.iter().any(|(id, _)| *id == layer.id) || template.captions_speech(&layer.id)
            }
            _ => false,
        })
        .map(|layer| layer.id.clone())
        .collect()
}

/// What plays: the sound layers, the unmuted video layers' sound and the soundtrack.
/// Video sound fades across the transitions at its clip's edges; `voices` are the
/// speech that ducked tracks give way to.
pub(super) fn track_specs<'a>(
    template: &'a Template,
    plan: &Plan,
    resolver: &Resolver,
    voices: &[String],
    limits: &Limits,
) -> Result<Vec<TrackSpec<'a>>, RenderError> {
    let mut specs = Vec::new();
    for (i, clip) in template.clips.iter().enumerate() {
        let into = if i > 0 { plan.clips[i - 1].transition.as_ref().map_or(0.0, |t| t.duration()) } else { 0.0 };
        let out = plan.clips[i].transition.as_ref().map_or(0.0, |t| t.duration());
        for layer in &clip.layers {
            let span = plan.layer(i, layer);
            let (start, end) = (plan.sample(span.start), plan.sample(span.end));
            if end <= start {
                continue;
            }
            match &layer.content {
                Content::Sound(s) => specs.push(TrackSpec {
                    who: &layer.id,
                    path: resolver.path(&layer.id, &s.source)?,
                    trim: s.trim_start,
                    looping: s.loop_,
                    with_picture: false,
                    volume: s.volume,
                    start,
                    end,
                    fade_in: s.fade_in,
                    fade_out: s.fade_out,
                    voice: voices.contains(&layer.id),
                    duck: s.duck,
                }),
                Content::Video(v) if !v.mute && v.volume > 0.0 => {
                    let path = resolver.path(&layer.id, &v.source)?;
                    // A silent video, or a still shown by a video layer: nothing to hear.
                    if !resolver.probe(&path, limits).map_err(RenderError::source(&layer.id))?.has_audio {
                        continue;
                    }
                    let clip_end = plan.clips[i].start + clip.duration;
                    specs.push(TrackSpec {
                        who: &layer.id,
                        path,
                        trim: v.trim_start,
                        looping: v.loop_,
                        with_picture: true,
                        volume: v.volume,
                        start,
                        end,
                        fade_in: if layer.start < into { into - layer.start } else { 0.0 },
                        fade_out: if span.end > clip_end - out { out - (clip_end - span.end) } else { 0.0 },
                        voice: false,
                        duck: None,
                    })
                }
                _ => {}
            }
        }
    }
    if let Some(s) = &template.soundtrack {
        specs.push(TrackSpec {
            who: "soundtrack",
            path: resolver.path("soundtrack", &s.source)?,
            trim: s.trim_start,
            looping: s.loop_,
            with_picture: false,
            volume: s.volume,
            start: 0,
            end: plan.samples,
            fade_in: s.fade_in,
            fade_out: s.fade_out,
            voice: false,
            duck: s.duck,
        });
    }
    Ok(specs)
}

/// The mix of `specs` over `total` samples, brought to `loudness` (LUFS) when the
/// template has a target: measured once whole first (the kept sound spares a repeat).
/// What it hands out is measured too: the render's sound level.
pub(super) fn mixer(
    specs: &[TrackSpec],
    total: u64,
    loudness: Option<f64>,
    deadline: &Deadline,
    limits: &Limits,
) -> Result<Mixer, RenderError> {
    let open = || open_tracks(specs, deadline, limits);
    // Measured first: the sources the mix plays from are opened after.
    let master = match loudness {
        Some(target) => master_for(target, total, &open, deadline)?,
        None => None,
    };
    let mixer = Mixer::new(open()?, total).metered()?;
    Ok(match master {
        Some(master) => mixer.with_master(master),
        None => mixer,
    })
}

/// The tracks opened for mixing (a silent video has none).
pub(super) fn open_tracks(
    specs: &[TrackSpec],
    deadline: &Deadline,
    limits: &Limits,
) -> Result<Vec<Track>, RenderError> {
    let mut tracks = Vec::new();
    for spec in specs {
        tracks.extend(Track::open(spec, deadline, limits)?);
    }
    Ok(tracks)
}
