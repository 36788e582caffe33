//! The JSON Schema of the template format, generated from the Rust types and published as
//! `docs/template.schema.json`. The schema describes the shape (types, required and
//! unknown fields, enumerations, simple ranges); the rules between fields (unique ids,
//! timing, fonts, markup) are [`super::Template::validate`]'s and are documented in
//! `docs/templates.md`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::Value;

use super::types::Template;

/// The schema document (JSON Schema 2020-12).
pub fn json_schema() -> Value {
    let mut schema = schemars::schema_for!(Template);
    schema.insert("title".into(), "reelfarm template, format version 1".into());
    schema.to_value()
}

/// The names a definition of the schema lists (`Layer`, `Animation`, `Transition`,
/// `Easing`, `Align`, …), in declaration order: each variant's `const`, or the `kind` of
/// each variant of a tagged one. Empty for a definition that lists none. What editors
/// offer as the choices of a field, so that they follow the format.
pub fn names(definition: &str) -> &'static [&'static str] {
    static NAMES: LazyLock<BTreeMap<String, Vec<&'static str>>> = LazyLock::new(|| {
        let schema = json_schema();
        let definitions = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
        definitions.into_iter().map(|(name, definition)| (name, variant_names(&definition))).collect()
    });
    NAMES.get(definition).map_or(&[], Vec::as_slice)
}

/// The `const` of each variant of `definition` (or of its `kind`), leaked: made once per
/// process, for a fixed schema.
fn variant_names(definition: &Value) -> Vec<&'static str> {
    let variants = definition.get("oneOf").or_else(|| definition.get("anyOf")).and_then(Value::as_array);
    variants
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("const").or_else(|| v.pointer("/properties/kind/const")).and_then(Value::as_str))
        .map(|name| &*Box::leak(name.to_string().into_boxed_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn committed_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/template.schema.json")
    }

    #[test]
    fn names_are_the_variants_of_plain_and_tagged_enums_in_order() {
        assert_eq!(names("Layer"), ["text", "image", "video", "sound", "shape", "captions", "lottie"]);
        assert_eq!(names("Animation"), ["fade_in", "fade_out", "slide_in", "slide_out", "scale", "ken_burns"]);
        assert_eq!(names("Transition"), ["cut", "crossfade", "fade_color", "wipe", "slide"]);
        assert_eq!(names("Easing"), ["linear", "ease_in", "ease_out", "ease_in_out"]);
        assert_eq!(names("TextFit"), ["fixed", "shrink"]);
        assert!(names("Canvas").is_empty() && names("Nothing").is_empty());
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
