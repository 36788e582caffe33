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

    #[test]
    fn uploading_shows_as_created() {
        assert_eq!(AssetStatus::Uploading.public(), "created");
        assert_eq!(AssetStatus::parse("failed"), Some(AssetStatus::Failed));
    }
}
