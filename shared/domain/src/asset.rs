//! Assets (library objects): an uploaded file and the renditions converted from it.

use serde::{Deserialize, Serialize};

use crate::id::{AssetId, LibraryId, UserId};

/// Where an asset is in its life: `created` → `processing` → `finished` |
/// `failed`. `uploading` is internal (a PUT is streaming) and shown as `created`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssetStatus {
    Created,
    Uploading,
    Processing,
    Finished,
    Failed,
}

impl AssetStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AssetStatus::Created => "created",
            AssetStatus::Uploading => "uploading",
            AssetStatus::Processing => "processing",
            AssetStatus::Finished => "finished",
            AssetStatus::Failed => "failed",
        }
    }

    /// The status as the API shows it.
    pub fn public(self) -> &'static str {
        match self {
            AssetStatus::Uploading => "created",
            other => other.as_str(),
        }
    }

    pub fn parse(s: &str) -> Option<AssetStatus> {
        use AssetStatus::*;
        [Created, Uploading, Processing, Finished, Failed].into_iter().find(|v| v.as_str() == s)
    }
}

/// The spec's object type of an asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AssetKind {
    /// A raster image.
    Sprite,
    /// A vector image, kept as SVG next to raster renditions.
    Svg,
    Video,
    Sound,
    /// A Lottie animation (Bodymovin JSON or a dotLottie archive), kept as uploaded.
    Lottie,
}

impl AssetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AssetKind::Sprite => "sprite",
            AssetKind::Svg => "svg",
            AssetKind::Video => "video",
            AssetKind::Sound => "sound",
            AssetKind::Lottie => "lottie",
        }
    }

    pub fn parse(s: &str) -> Option<AssetKind> {
        use AssetKind::*;
        [Sprite, Svg, Video, Sound, Lottie].into_iter().find(|k| k.as_str() == s)
    }
}

/// One stored file of an asset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rendition {
    /// Blob key.
    pub key: String,
    /// `original`, `image`, `video`, `audio` or `thumb`.
    pub role: String,
    pub content_type: String,
    /// Container or image format: `jpeg`, `png`, `webp`, `svg`, `mp4`, `webm`, `m4a`, `mp3`, …
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codec: Option<String>,
    /// Bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bitrate: Option<u64>,
    /// Seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    pub size: u64,
}

/// A library object.
#[derive(Debug, Clone, PartialEq)]
pub struct Asset {
    pub id: AssetId,
    pub upload_id: String,
    pub library_id: LibraryId,
    pub owner_user_id: UserId,
    pub filename: String,
    pub label: String,
    pub description: String,
    pub status: AssetStatus,
    pub error: Option<String>,
    pub kind: Option<AssetKind>,
    pub content_type: Option<String>,
    pub size: Option<u64>,
    pub blob_prefix: String,
    pub original_key: Option<String>,
    pub duration_ms: Option<i64>,
    pub alpha: bool,
    pub thumb_key: Option<String>,
    pub renditions: Vec<Rendition>,
    pub tags: Vec<String>,
    pub properties: serde_json::Map<String, serde_json::Value>,
    pub premium: bool,
    /// The worker that converted it.
    pub converted_by: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Asset {
    /// The file of this asset a render decodes for a box of `width`×`height` output
    /// pixels, and that file's frame size where it is known: the smallest converted
    /// rendition at least as large as the box (no re-processing, little decoding), the AAC
    /// rendition of a sound, the original of a vector image or an animation (Lottie,
    /// animated GIF or WebP), or when no rendition is large enough.
    pub fn render_source(&self, width: u32, height: u32) -> (String, Option<(u32, u32)>) {
        let sized = |r: &Rendition| Some((r.width?, r.height?));
        let original = || {
            let key = self.original_key.clone().unwrap_or_default();
            (key, self.renditions.iter().find(|r| r.role == "original").and_then(sized))
        };
        let role = match self.kind {
            // An animated picture plays from its original.
            Some(AssetKind::Sprite) if self.duration_ms.is_some() => return original(),
            Some(AssetKind::Sprite) => "image",
            Some(AssetKind::Video) => "video",
            Some(AssetKind::Sound) => {
                let aac = self.renditions.iter().find(|r| r.role == "audio" && r.content_type == "audio/mp4");
                return aac.map_or_else(original, |r| (r.key.clone(), None));
            }
            Some(AssetKind::Svg | AssetKind::Lottie) | None => return original(),
        };
        self.renditions
            .iter()
            .filter(|r| r.role == role)
            .filter_map(|r| Some((r, sized(r)?)))
            .filter(|(_, (w, h))| *w >= width && *h >= height)
            .min_by_key(|(_, (w, h))| u64::from(*w) * u64::from(*h))
            .map_or_else(original, |(r, size)| (r.key.clone(), Some(size)))
    }
}

/// What a finished conversion stores.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    pub kind: AssetKind,
    pub duration_ms: Option<i64>,
    pub alpha: bool,
    pub thumb_key: String,
    pub renditions: Vec<Rendition>,
    /// The worker that converted it.
    pub worker: String,
}

/// The label of an uploaded file: its name without directory and extension.
pub fn label_of(filename: &str) -> String {
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    match base.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => base.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_drop_directories_and_extensions() {
        assert_eq!(label_of("holiday.mp4"), "holiday");
        assert_eq!(label_of("C:\\clips\\a.b.mov"), "a.b");
        assert_eq!(label_of(".hidden"), ".hidden");
        assert_eq!(label_of("noext"), "noext");
    }

    fn rendition(key: &str, role: &str, content_type: &str, size: Option<(u32, u32)>) -> Rendition {
        Rendition {
            key: key.into(),
            role: role.into(),
            content_type: content_type.into(),
            format: String::new(),
            width: size.map(|s| s.0),
            height: size.map(|s| s.1),
            codec: None,
            bitrate: None,
            duration: None,
            size: 1,
        }
    }

    #[test]
    fn a_render_decodes_the_smallest_rendition_that_covers_its_box() {
        let video = Asset {
            id: AssetId::trusted("a"),
            upload_id: String::new(),
            library_id: LibraryId::trusted("l"),
            owner_user_id: UserId::trusted("u"),
            filename: "clip.mp4".into(),
            label: "clip".into(),
            description: String::new(),
            status: AssetStatus::Finished,
            error: None,
            kind: Some(AssetKind::Video),
            content_type: Some("video/mp4".into()),
            size: Some(1),
            blob_prefix: "p".into(),
            original_key: Some("o".into()),
            duration_ms: Some(2000),
            alpha: false,
            thumb_key: None,
            renditions: vec![
                rendition("o", "original", "video/mp4", Some((3840, 2160))),
                rendition("v720", "video", "video/mp4", Some((1280, 720))),
                rendition("v360", "video", "video/mp4", Some((640, 360))),
            ],
            tags: Vec::new(),
            properties: Default::default(),
            premium: false,
            converted_by: None,
            created_at: 0,
            updated_at: 0,
        };
        assert_eq!(video.render_source(16, 16), ("v360".into(), Some((640, 360))));
        assert_eq!(video.render_source(700, 400), ("v720".into(), Some((1280, 720))));
        assert_eq!(video.render_source(1920, 1080), ("o".into(), Some((3840, 2160))), "none large enough");
        let sound = Asset {
            kind: Some(AssetKind::Sound),
            renditions: vec![rendition("o", "original", "audio/wav", None), rendition("a", "audio", "audio/mp4", None)],
            ..video
        };
        assert_eq!(sound.render_source(0, 0), ("a".into(), None));
    }

    #[test]
    fn uploading_shows_as_created() {
        assert_eq!(AssetStatus::Uploading.public(), "created");
        assert_eq!(AssetStatus::parse("failed"), Some(AssetStatus::Failed));
    }
}
