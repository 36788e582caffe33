//! The example templates of `examples/templates/`, built into the binary so that a first
//! run sets them up wherever the binary runs (a container image holds no repository).

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use futures::StreamExt;
use reelfarm_backends::store::{StoreError, TemplateStore};
use reelfarm_backends::{Blobs, Store};
use reelfarm_domain::id::TemplateId;
use sha1::{Digest, Sha1};

use crate::admin::template::{import_as, ImportOptions};

/// One example: its file stem and its JSON.
pub struct Example {
    pub stem: &'static str,
    json: &'static str,
}

macro_rules! example {
    ($stem:literal) => {
        Example { stem: $stem, json: include_str!(concat!("../../../examples/templates/", $stem, ".json")) }
    };
}

macro_rules! media {
    ($name:literal) => {
        ($name, include_bytes!(concat!("../../../examples/templates/media/", $name)).as_slice())
    };
}

/// The seven examples, the one the README renders first.
pub const EXAMPLES: &[Example] = &[
    example!("quote-card"),
    example!("product-promo"),
    example!("social-story"),
    example!("news-lower-third"),
    example!("real-estate-listing"),
    example!("podcast-audiogram"),
    example!("explainer-captions"),
];

/// Their `file` sources, all under `media/`.
const MEDIA: &[(&str, &[u8])] = &[
    media!("badge.json"),
    media!("footage.mp4"),
    media!("logo.png"),
    media!("music.m4a"),
    media!("photo1.jpg"),
    media!("photo2.jpg"),
    media!("photo3.jpg"),
    media!("subtitles.srt"),
    media!("voice.mp3"),
];

/// Namespace of the examples' template ids (a UUID of our own, fixed for good: the README
/// names the quote card's id).
const NAMESPACE: uuid::Uuid = uuid::uuid!("b26e8f90-11f8-419f-af31-3d124b84c80a");

/// The stable template id of the example `stem`: the UUID v5 of `reelfarm-example:{stem}`
/// in [`NAMESPACE`], the same on every deployment and every start.
pub fn template_id(stem: &str) -> TemplateId {
    let mut hash = Sha1::new();
    hash.update(NAMESPACE.as_bytes());
    hash.update(format!("reelfarm-example:{stem}").as_bytes());
    let digest = hash.finalize();
    let bytes: [u8; 16] = digest[..16].try_into().expect("SHA-1 has 20 bytes");
    TemplateId::trusted(uuid::Builder::from_sha1_bytes(bytes).into_uuid().to_string())
}

/// Imports the examples that are not in the store yet as public templates under their
/// stable ids, a few at once (each renders its preview); returns the stems now present.
/// An example that fails is logged and left for the next start.
pub async fn import_missing(
    store: &Store,
    blobs: &Blobs,
    time_limit: std::time::Duration,
) -> anyhow::Result<Vec<&'static str>> {
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for example in EXAMPLES {
        match store.template(&template_id(example.stem)).await {
            Ok(_) => present.push(example.stem),
            Err(StoreError::NotFound(_)) => missing.push(example),
            Err(e) => return Err(e.into()),
        }
    }
    if missing.is_empty() {
        return Ok(present);
    }

    let started = Instant::now();
    tracing::info!(templates = missing.len(), "importing the example templates (each renders a preview)");
    let dir = tempfile::tempdir().context("temporary directory")?;
    write_files(dir.path(), &missing).context("writing the example templates")?;
    let options = ImportOptions { owner: None, public: true, time_limit, limits: Default::default() };
    let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
    let imported: Vec<_> = futures::stream::iter(missing)
        .map(|example| {
            let (dir, options) = (dir.path(), &options);
            async move {
                let file = dir.join(format!("{}.json", example.stem));
                let id = template_id(example.stem);
                (example.stem, import_as(store, blobs, &file, options, Some(&id)).await)
            }
        })
        .buffer_unordered(parallel)
        .collect()
        .await;
    for (stem, outcome) in imported {
        match outcome {
            Ok(_) => present.push(stem),
            // Another replica imported it at the same moment.
            Err(e) if matches!(e.downcast_ref(), Some(StoreError::Conflict(_))) => present.push(stem),
            Err(e) => tracing::warn!(
                example = stem,
                error = format!("{e:#}"),
                "example template not imported; the next start tries again"
            ),
        }
    }
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "example templates imported");
    Ok(present)
}

/// Writes `examples` and every media file into `dir` as the repository holds them.
pub fn write_files(dir: &Path, examples: &[&Example]) -> std::io::Result<()> {
    std::fs::create_dir(dir.join("media"))?;
    for (name, bytes) in MEDIA {
        std::fs::write(dir.join("media").join(name), bytes)?;
    }
    for example in examples {
        std::fs::write(dir.join(format!("{}.json", example.stem)), example.json)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_ids_are_stable_uuid_v5() {
        let id = template_id("quote-card");
        let parsed = uuid::Uuid::parse_str(id.as_str()).unwrap();
        assert_eq!(parsed.get_version_num(), 5);
        assert_eq!(id, template_id("quote-card"));
        assert_ne!(id, template_id("product-promo"));
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        assert!(readme.contains(id.as_str()), "the README's quick start names the quote card's id {id}");
    }

    #[test]
    fn every_example_and_its_media_is_built_in() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/templates");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().into_string().ok())
            .filter_map(|name| name.strip_suffix(".json").map(str::to_string))
            .collect();
        on_disk.sort();
        let mut built_in: Vec<&str> = EXAMPLES.iter().map(|e| e.stem).collect();
        built_in.sort();
        assert_eq!(on_disk, built_in);
        for example in EXAMPLES {
            let mut rest = example.json;
            while let Some(at) = rest.find("\"file\"") {
                rest = &rest[at + 6..];
                let name = rest.split('"').nth(1).unwrap();
                let name = name
                    .strip_prefix("media/")
                    .unwrap_or_else(|| panic!("{}: {name} is not under media/", example.stem));
                assert!(MEDIA.iter().any(|(m, _)| *m == name), "{}: media/{name} is not built in", example.stem);
            }
        }
    }
}
