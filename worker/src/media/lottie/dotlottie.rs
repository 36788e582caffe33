//! dotLottie files (`.lottie`): a ZIP archive holding `manifest.json`, animations under
//! `animations/` (version 1) or `a/` (version 2) and their images under `images/` or `i/`.
//!
//! The archive is read in memory and nothing is extracted to the disk: the first
//! animation the manifest lists (or the first one found) is taken, and each image it
//! refers to is read from the archive and embedded as a `data:` address, giving one
//! Lottie JSON document. Every read is bounded by its declared and its actual size, so a
//! ZIP bomb stops at the limit.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use base64::Engine;
use serde_json::Value;
use zip::result::ZipError;
use zip::ZipArchive;

use super::{refused, MAX_FILE_BYTES};
use crate::media::sniff::{classify, Sniffed};
use crate::media::MediaError;

/// Largest dotLottie archive read.
const MAX_ARCHIVE_BYTES: u64 = 32 * 1024 * 1024;
/// Largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
/// Most bytes of images embedded into one animation.
const MAX_IMAGE_BYTES: u64 = 24 * 1024 * 1024;

type Archive = ZipArchive<BufReader<File>>;

/// The first animation of the dotLottie archive at `path` as Lottie JSON, its images
/// embedded.
pub(super) fn animation(path: &Path) -> Result<Vec<u8>, MediaError> {
    let size = std::fs::metadata(path)?.len();
    if size > MAX_ARCHIVE_BYTES {
        return Err(MediaError::Unsupported(format!(
            "a dotLottie file of {size} bytes; at most {MAX_ARCHIVE_BYTES} are read"
        )));
    }
    let mut archive = ZipArchive::new(BufReader::new(File::open(path)?))
        .map_err(|e| refused(format!("not a readable dotLottie (ZIP) archive ({e})")))?;
    let name = animation_name(&mut archive)?;
    let json = entry(&mut archive, &name, MAX_FILE_BYTES)?.ok_or_else(|| refused(format!("{name} is missing")))?;
    let mut document: Value =
        serde_json::from_slice(&json).map_err(|e| refused(format!("{name} is not JSON ({e})")))?;
    embed_images(&mut archive, &mut document)?;
    serde_json::to_vec(&document).map_err(|e| MediaError::Internal(format!("writing the animation: {e}")))
}

/// The archive path of the animation to play: the manifest's first, else the first JSON
/// file in an animations folder.
fn animation_name(archive: &mut Archive) -> Result<String, MediaError> {
    if let Some(manifest) = entry(archive, "manifest.json", MAX_MANIFEST_BYTES)? {
        let manifest: Value =
            serde_json::from_slice(&manifest).map_err(|e| refused(format!("manifest.json is not JSON ({e})")))?;
        let first = manifest.pointer("/animations/0/id").and_then(Value::as_str);
        if let Some(id) = first {
            for name in [format!("animations/{id}.json"), format!("a/{id}.json")] {
                if archive.index_for_name(&name).is_some() {
                    return Ok(name);
                }
            }
            return Err(refused(format!("the manifest's animation {id:?} is not in the archive")));
        }
    }
    let mut names: Vec<&str> = archive
        .file_names()
        .filter(|n| (n.starts_with("animations/") || n.starts_with("a/")) && n.ends_with(".json"))
        .collect();
    names.sort_unstable();
    names.first().map(|n| n.to_string()).ok_or_else(|| refused("the archive holds no animation".into()))
}

/// Replaces each image the animation refers to by the file's bytes as a `data:` address.
fn embed_images(archive: &mut Archive, document: &mut Value) -> Result<(), MediaError> {
    let Some(assets) = document.get_mut("assets").and_then(Value::as_array_mut) else { return Ok(()) };
    let mut embedded = 0u64;
    for asset in assets.iter_mut().filter_map(Value::as_object_mut) {
        let Some(file) = asset.get("p").and_then(Value::as_str).filter(|p| !p.starts_with("data:")) else { continue };
        let folder = asset.get("u").and_then(Value::as_str).unwrap_or("");
        let candidates = [format!("{folder}{file}"), format!("images/{file}"), format!("i/{file}")];
        let mut bytes = None;
        for name in candidates.iter().map(|n| n.trim_start_matches('/')) {
            if let Some(found) = entry(archive, name, MAX_IMAGE_BYTES - embedded)? {
                bytes = Some(found);
                break;
            }
        }
        let bytes = bytes.ok_or_else(|| refused(format!("image {file:?} is not in the archive")))?;
        let mime = match classify(&bytes) {
            Sniffed::Png => "image/png",
            Sniffed::Jpeg => "image/jpeg",
            _ => return Err(refused(format!("image {file:?} is not a PNG or JPEG picture"))),
        };
        embedded += bytes.len() as u64;
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        asset.insert("p".into(), Value::from(format!("data:{mime};base64,{data}")));
        asset.insert("u".into(), Value::from(""));
        asset.insert("e".into(), Value::from(1));
    }
    Ok(())
}

/// The bytes of the archive's file `name`, if it has one; refused when it holds more than
/// `limit` bytes (declared or actual).
fn entry(archive: &mut Archive, name: &str, limit: u64) -> Result<Option<Vec<u8>>, MediaError> {
    let too_large = || refused(format!("{name} holds more than {limit} bytes"));
    let file = match archive.by_name(name) {
        Ok(file) => file,
        Err(ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(refused(format!("cannot read {name} ({e})"))),
    };
    if file.size() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(file.size() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| refused(format!("cannot read {name} ({e})")))?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(Some(bytes))
}
