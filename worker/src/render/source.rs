//! Media sources of a template. The renderer only reads local files: the caller fetches
//! what [`sources`] lists (assets from the blob store, URLs over HTTP, files next to the
//! template) and passes a resolver from each [`Source`] to its local path. Every file is
//! then opened through the media engine (`av::open_input`'s protocol and demuxer
//! allow-lists for audio and video), never by libav following a URL.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use reelfarm_domain::template::{Content, Source, Template};

use super::image::Still;
use super::snapshot_cache::SnapshotCache;
use super::video::VideoReader;
use super::RenderError;
use crate::media::limits::Deadline;
use crate::media::Probe;
use crate::media::{Limits, MediaError, Opened};

/// Every distinct source the template uses (layers clip by clip, then the soundtrack), in
/// order of first use.
pub fn sources(template: &Template) -> Vec<Source> {
    sources_of(template, true)
}

/// The distinct sources of what the template shows (no sound layer, no soundtrack): what
/// the chunks of a split render need.
pub fn seen_sources(template: &Template) -> Vec<Source> {
    sources_of(template, false)
}

fn sources_of(template: &Template, heard: bool) -> Vec<Source> {
    let layers = template.clips.iter().flat_map(|clip| &clip.layers).filter_map(|layer| match &layer.content {
        Content::Image(i) => Some(&i.source),
        Content::Video(v) => Some(&v.source),
        Content::Sound(s) => Some(&s.source).filter(|_| heard),
        Content::Captions(c) => c.source.as_ref(),
        Content::Lottie(l) => Some(&l.source),
        Content::Text(_) | Content::Shape(_) => None,
    });
    let soundtrack = template.soundtrack.as_ref().filter(|_| heard).map(|s| &s.source);
    let mut out: Vec<Source> = Vec::new();
    for source in layers.chain(soundtrack) {
        if !out.contains(source) {
            out.push(source.clone());
        }
    }
    out
}

/// How a source is named in messages.
pub(crate) fn describe(source: &Source) -> String {
    match source {
        Source::Asset { asset } => format!("asset {asset:?}"),
        Source::Url { url } => format!("url {url:?}"),
        Source::File { file } => format!("file {file:?}"),
    }
}

/// The caller's resolver, with errors naming the layer.
pub(crate) struct Resolver<'a> {
    pub(crate) resolve: &'a dyn Fn(&Source) -> Option<PathBuf>,
    /// What earlier snapshots (previews) kept.
    pub(crate) kept: Option<&'a SnapshotCache>,
    /// Without `kept`: the probes of this render, by path (a source is probed before any
    /// work, and what that told, such as a video having no sound, is not learnt again by
    /// opening the file).
    probed: Mutex<HashMap<PathBuf, Probe>>,
    /// The inputs those probes opened of videos, until a reader of the video takes its
    /// path's (or [`Resolver::close_unread`] closes them).
    opened: Mutex<HashMap<PathBuf, Opened>>,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(resolve: &'a dyn Fn(&Source) -> Option<PathBuf>, kept: Option<&'a SnapshotCache>) -> Self {
        Resolver { resolve, kept, probed: Mutex::new(HashMap::new()), opened: Mutex::new(HashMap::new()) }
    }

    /// The still picture at `path` (`None` for video or sound), from the cache when there is one.
    pub(crate) fn still(&self, path: &Path, limits: &Limits) -> Result<Option<Arc<Still>>, MediaError> {
        self.stills().still(path, limits)
    }

    /// Where stills come from, for another thread.
    pub(crate) fn stills(&self) -> Stills<'a> {
        Stills { kept: self.kept }
    }

    /// What the media engine makes of `path`, from the cache when there is one.
    pub(crate) fn probe(&self, path: &Path, limits: &Limits) -> Result<Probe, MediaError> {
        if let Some(kept) = self.kept {
            return kept.probe(path, limits);
        }
        if let Some(probe) = self.probed.lock().expect("probe memo lock").get(path) {
            return Ok(probe.clone());
        }
        let (probe, opened) = crate::media::probe_opening(path, limits)?;
        self.probed.lock().expect("probe memo lock").insert(path.to_path_buf(), probe.clone());
        if let Some(opened) = opened {
            self.opened.lock().expect("opened inputs lock").insert(path.to_path_buf(), opened);
        }
        Ok(probe)
    }

    /// Closes the inputs probed that no reader took (once the layers are prepared).
    pub(crate) fn close_unread(&self) {
        self.opened.lock().expect("opened inputs lock").clear();
    }

    /// A reader of the video at `path`, a kept one when there is one (it may show any
    /// frame: [`VideoReader::frame_at`] moves it).
    pub(crate) fn video(
        &self,
        path: &Path,
        trim: f64,
        looping: bool,
        deadline: &Deadline,
        limits: &Limits,
    ) -> Result<VideoReader, MediaError> {
        if let Some(kept) = self.kept {
            let key = (super::snapshot_cache::file_key(path)?, trim.to_bits(), looping);
            if let Some(reader) = kept.take_video(&key) {
                return Ok(reader);
            }
        }
        match self.opened.lock().expect("opened inputs lock").remove(path) {
            Some(opened) => VideoReader::opened(path, trim, looping, opened, limits),
            None => VideoReader::open(path, trim, looping, deadline, limits),
        }
    }

    /// The local file of `source`, used by layer `layer`.
    pub(crate) fn path(&self, layer: &str, source: &Source) -> Result<PathBuf, RenderError> {
        (self.resolve)(source)
            .ok_or_else(|| RenderError::MissingSource { layer: layer.to_owned(), what: describe(source) })
    }
}

/// Where a render's still pictures come from: decoded from their files, or from what
/// earlier snapshots kept. Unlike the [`Resolver`], it can be shared with another thread.
#[derive(Clone, Copy)]
pub(crate) struct Stills<'a> {
    kept: Option<&'a SnapshotCache>,
}

impl Stills<'_> {
    /// The still picture at `path` (`None` for video or sound).
    pub(crate) fn still(&self, path: &Path, limits: &Limits) -> Result<Option<Arc<Still>>, MediaError> {
        match self.kept {
            Some(kept) => kept.still(path, limits),
            None => Ok(Still::open(path, limits)?.map(Arc::new)),
        }
    }
}
