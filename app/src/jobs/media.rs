//! The media values of a job request: asset ids the caller may use, of the right kind
//! and converted (looked up for the whole request at once); addresses whose file type (when their name tells it) is accepted for
//! the variable and that are not IP addresses the outbound policy refuses.

use std::collections::{HashMap, HashSet};

use reelfarm_backends::store::{AssetStore, LibraryStore, StoreError};
use reelfarm_backends::Store;
use reelfarm_domain::account::User;
use reelfarm_domain::asset::{Asset, AssetKind, AssetStatus};
use reelfarm_domain::cost;
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::{AssetId, GroupId, LibraryId};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::{Source, Template, VariableType};
use reelfarm_outbound::{AllowEntry, Outbound};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::Result;

/// File types accepted in addresses of media values (spec §4.7.1), by variable type.
const IMAGE_TYPES: &[&str] = &["gif", "jpeg", "jpg", "png", "svg", "webp", "heic"];
/// Animated GIF and WebP pictures play as videos.
const VIDEO_TYPES: &[&str] = &["mp4", "mkv", "flv", "wmv", "m4v", "mpeg", "avi", "webm", "mov", "3gp", "gif", "webp"];
const SOUND_TYPES: &[&str] = &["flac", "m4a", "mp3", "wav", "ogg", "wma", "aiff", "opus"];
const CAPTIONS_TYPES: &[&str] = &["srt", "vtt", "txt"];
/// Extensions of pages that serve files: they say nothing about the file's type, which is
/// sniffed when the file is fetched.
const SCRIPT_TYPES: &[&str] = &["php", "asp", "aspx", "jsp", "cgi"];

/// The file types accepted for a media variable (spec §4.7.1).
fn file_types(media: VariableType) -> &'static [&'static str] {
    match media {
        VariableType::Image => IMAGE_TYPES,
        VariableType::Video => VIDEO_TYPES,
        VariableType::Sound | VariableType::Text => SOUND_TYPES,
        VariableType::Captions => CAPTIONS_TYPES,
    }
}

/// Whether an asset of `kind` can fill a media variable (a sound variable can take a
/// video's sound, a video variable an animated picture: one with a duration), or with
/// `None` a Lottie layer.
fn takes(media: Option<VariableType>, kind: AssetKind, animated: bool) -> bool {
    match media {
        Some(VariableType::Image) => matches!(kind, AssetKind::Sprite | AssetKind::Svg),
        Some(VariableType::Video) => kind == AssetKind::Video || (kind == AssetKind::Sprite && animated),
        Some(VariableType::Sound) => matches!(kind, AssetKind::Sound | AssetKind::Video),
        Some(VariableType::Text | VariableType::Captions) => false,
        None => kind == AssetKind::Lottie,
    }
}

/// What is wrong with a value: its key and what to tell the caller.
pub type Problem = (ErrorKey, String);

/// What the media values of a whole request name, looked up at once: the assets (a few
/// queries for any number of ids, never one per value) and the libraries the caller may
/// use.
pub(super) struct AssetBook {
    assets: HashMap<String, Asset>,
    visible: HashSet<LibraryId>,
}

impl AssetBook {
    /// Looks up every asset id among the media values of `elements` for `user`.
    pub(super) async fn load<'a>(
        store: &Store,
        user: &User,
        template: &Template,
        elements: impl Iterator<Item = &'a Map<String, Value>>,
    ) -> Result<AssetBook> {
        let ids: HashSet<AssetId> = elements
            .flat_map(|values| media_values(template, values))
            .filter(|(_, text, media)| !is_address(text) && *media != VariableType::Captions)
            .filter_map(|(_, text, _)| AssetId::parse(text))
            .collect();
        if ids.is_empty() {
            return Ok(AssetBook { assets: HashMap::new(), visible: HashSet::new() });
        }
        let ids: Vec<AssetId> = ids.into_iter().collect();
        let assets = store.assets(&ids).await?.into_iter().map(|a| (a.id.as_str().to_string(), a)).collect();
        let visible = store.visible_libraries(&user.id).await?.into_iter().map(|l| l.id).collect();
        Ok(AssetBook { assets, visible })
    }

    /// The frame size of the file a render of `template` at `quality` decodes for
    /// `source`, where it is a converted asset named by the request's values (the
    /// rendition the worker will fetch for the layer's box).
    pub(super) fn decoded_size(&self, template: &Template, quality: Quality, source: &Source) -> Option<(u32, u32)> {
        let Source::Asset { asset } = source else { return None };
        let (width, height) = cost::source_box(template, source, quality);
        self.assets.get(asset)?.render_source(width, height).1
    }
}

/// The media values of `values`: variable id, the value, the variable's type.
fn media_values<'a>(
    template: &'a Template,
    values: &'a Map<String, Value>,
) -> impl Iterator<Item = (&'a String, &'a str, VariableType)> + 'a {
    values.iter().filter_map(|(key, given)| {
        let text = given.as_str()?.trim();
        let (_, layer) = Uuid::parse_str(key).ok().and_then(|id| template.variable_layer(id))?;
        let media = layer.content.variable_type().filter(|t| *t != VariableType::Text)?;
        Some((key, text, media))
    })
}

fn is_address(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The media values of one `values` element that cannot be used, by variable id: asset ids
/// the caller cannot see (or not converted, or of another kind), addresses whose file type
/// is not accepted for the variable. The assets come from `book`.
pub(super) fn check_media(
    outbound_allow: &[AllowEntry],
    book: &AssetBook,
    template: &Template,
    values: &Map<String, Value>,
) -> Vec<(String, Problem)> {
    let mut problems = Vec::new();
    for (key, text, media) in media_values(template, values) {
        let problem = if is_address(text) {
            refused_address(outbound_allow, text).or_else(|| url_file_type(text, media))
        } else if media == VariableType::Captions {
            continue; // not an address: applying the values says what a captions value is
        } else {
            let asset = book.assets.get(text).filter(|a| book.visible.contains(&a.library_id));
            problem_of(asset, text, Some(media))
        };
        if let Some(problem) = problem {
            problems.push((key.clone(), problem));
        }
    }
    problems
}

/// An address the render could never fetch (an IP address the outbound policy refuses):
/// refused now, before the job is charged.
pub fn refused_address(outbound_allow: &[AllowEntry], address: &str) -> Option<Problem> {
    let refused = Outbound::new(outbound_allow).refused_literal(address)?;
    Some((refused.key(), refused.to_string()))
}

/// Whether the address's file name, when it has an extension, is of an accepted type.
fn url_file_type(address: &str, media: VariableType) -> Option<Problem> {
    let url = url::Url::parse(address).ok()?;
    let name = url.path_segments()?.next_back()?;
    let (_, ext) = name.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    if file_types(media).contains(&ext.as_str()) || SCRIPT_TYPES.contains(&ext.as_str()) {
        return None;
    }
    Some((
        ErrorKey::UnsupportedFileType,
        format!(
            "a {} value cannot be a .{ext} file; accepted types: {}",
            media.as_str(),
            file_types(media).join(", ").to_uppercase()
        ),
    ))
}

/// Why the asset `id` cannot be used for `media` (a variable's type; `None`: a Lottie
/// layer's animation), if it cannot: unknown to the caller, not converted, of another kind.
pub async fn asset_problem(
    store: &(impl AssetStore + LibraryStore),
    user: &User,
    groups: &[GroupId],
    id: &str,
    media: Option<VariableType>,
) -> Result<Option<Problem>> {
    let asset = match store.named_asset(id).await {
        Ok(asset) => asset,
        Err(StoreError::NotFound(_)) => return Ok(problem_of(None, id, media)),
        Err(e) => return Err(e.into()),
    };
    let visible = match store.library(&asset.library_id).await {
        Ok(library) => library.visible_to(&user.id, groups),
        Err(StoreError::NotFound(_)) => false,
        Err(e) => return Err(e.into()),
    };
    Ok(problem_of(visible.then_some(&asset), id, media))
}

/// Why `asset` (named `id`; `None`: unknown to the caller) cannot be used for `media`, if
/// it cannot: unknown, not converted, of another kind.
fn problem_of(asset: Option<&Asset>, id: &str, media: Option<VariableType>) -> Option<Problem> {
    let Some(asset) = asset else {
        return Some((ErrorKey::UnknownAsset, format!("no asset {id:?} in the libraries you can use")));
    };
    if asset.status != AssetStatus::Finished {
        let status = asset.status.public();
        return Some((ErrorKey::AssetNotReady, format!("asset {id:?} is {status}; only finished assets can be used")));
    }
    match asset.kind {
        Some(kind) if takes(media, kind, asset.duration_ms.is_some()) => None,
        kind => Some((
            ErrorKey::UnsupportedFileType,
            format!(
                "asset {id:?} is a {} asset; {}",
                kind.map_or("unknown", AssetKind::as_str),
                media.map_or("a lottie layer takes a lottie".into(), |m| format!(
                    "this variable takes a {}",
                    m.as_str()
                ))
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_by_their_file_extension_when_they_have_one() {
        assert_eq!(url_file_type("https://example.com/a/photo.JPG", VariableType::Image), None);
        assert_eq!(url_file_type("https://example.com/a/photo", VariableType::Image), None);
        assert_eq!(url_file_type("https://example.com/get.php?id=3", VariableType::Video), None);
        assert_eq!(url_file_type("https://example.com/clip.mov?x=1", VariableType::Video), None);
        assert_eq!(url_file_type("https://example.com/song.opus", VariableType::Sound), None);
        let (key, message) = url_file_type("https://example.com/doc.pdf", VariableType::Image).unwrap();
        assert_eq!(key, "error.unsupported_file_type");
        assert!(message.contains(".pdf") && message.contains("PNG"), "{message}");
        assert!(url_file_type("https://example.com/clip.mp4", VariableType::Sound).is_some());
        assert!(url_file_type("https://example.com/photo.png", VariableType::Video).is_some());
        assert_eq!(url_file_type("https://example.com/loop.gif", VariableType::Video), None, "plays as a video");
    }
}
