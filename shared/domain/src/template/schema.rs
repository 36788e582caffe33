//! The JSON Schema of the template format, generated from the Rust types and published as
//! `docs/template.schema.json`. The schema describes the shape (types, required and
//! unknown fields, enumerations, simple ranges); the rules between fields (unique ids,
//! timing, fonts, markup) are [`super::Template::validate`]'s and are documented in
//! `docs/templates.md`.

use super::types::Template;

/// The schema document (JSON Schema 2020-12).
pub fn json_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(Template);
    schema.insert("title".into(), "reelfarm template, format version 1".into());
    schema.to_value()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn committed_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/template.schema.json")
    }

    #[test]
    fn committed_schema_matches_the_types() {
        let generated = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
        let path = committed_path();
        if std::env::var_os("REELFARM_WRITE_SCHEMA").is_some_and(|v| v == "1") {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is out of date with the template types; regenerate it with \
             `REELFARM_WRITE_SCHEMA=1 cargo test -p reelfarm-domain schema` and commit it",
            path.display()
        );
    }

    #[test]
    fn schema_refuses_unknown_fields_and_describes_layers_by_kind() {
        let schema = json_schema();
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(schema["additionalProperties"], false);
        let layer = &schema["$defs"]["Layer"];
        assert_eq!(layer["unevaluatedProperties"], false, "{layer:#}");
        let kinds: Vec<&str> = layer["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["properties"]["kind"]["const"].as_str())
            .collect();
        assert_eq!(kinds, ["text", "image", "video", "sound", "shape", "captions", "lottie"]);
        assert!(schema["$defs"]["Font"]["properties"]["size"]["description"].is_string());
    }
}
