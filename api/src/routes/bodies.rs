//! Request bodies as the OpenAPI document describes them. Form bodies derive their schema
//! and so do the JSON bodies but the job's: each from the type that parses it
//! (`CreateLibraryForm`, `AddObjectForm`, `LinkBody`, `PreviewBody`, `DraftBody`,
//! `TemplateBody`; see `crate::body`). The JSON
//! handlers read their bodies
//! leniently ( aliases, `[]` for `{}`, numbers for strings, surrounding white
//! space) and check them field by field; JSON Schema says the same, with `not`, `const`
//! and patterns that utoipa's types cannot express, so the schemas are written here and
//! put into the document by `openapi::finish` under the names the handlers refer to.

use std::borrow::Cow;

use serde_json::{json, Value};
use utoipa::openapi::schema::Type;
use utoipa::openapi::{ObjectBuilder, RefOr, Schema};

use crate::services::jobs::request::{MAX_NOTIFICATIONS, MAX_VALUES};
use crate::text;
use reelfarm_domain::output::{Format, GIF_MAX_FPS};
use reelfarm_domain::priority::Priority;
use reelfarm_domain::quality::Quality;

/// Declares a body type whose schema is written in [`schemas`].
macro_rules! hand_written {
    ($($name:ident),*) => {$(
        #[doc = concat!("The body `", stringify!($name), "` (schema written in `bodies::schemas`).")]
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                // Replaced in the served document by the schema of `schemas()`.
                ObjectBuilder::new().into()
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )*};
}

hand_written!(JobBody);

/// Every hand-written schema by name.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![("JobBody", job_body())]
}

/// The schema of a short text field ([`text::field`]) for a derived body's field
/// (`#[schema(schema_with = …)]`).
pub fn text_field(max: usize, description: &str) -> RefOr<Schema> {
    let rule = text::schema(max, description);
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(max))
        .pattern(rule["pattern"].as_str())
        .description(Some(description))
        .into()
}

/// `{"key": true}` required.
fn is(key: &str, value: bool) -> Value {
    json!({ "properties": { key: { "const": value } }, "required": [key] })
}

/// An absolute http(s) address as the url crate reads it (ASCII host names whose last
/// label starts with a letter, so that it is never read as an IPv4 number).
fn address(description: &str) -> Value {
    json!({
        "type": "string",
        "pattern": "^https?://([A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{1,4})?(/[!-~]*)?$",
        "description": description,
    })
}

/// An object, or `[]` (PHP clients send an empty array for an empty object).
fn object_or_empty_array(description: &str) -> Value {
    json!({ "description": description, "anyOf": [{ "type": "object" }, { "type": "array", "maxItems": 0 }] })
}

/// The job request (spec §4.7).
fn job_body() -> Value {
    let flag = |d: &str| json!({ "type": "boolean", "description": d });
    let options = json!({
        "type": "object",
        "properties": {
            "quality": { "type": "string", "enum": Quality::NAMES, "default": "default",
                         "description": "Output size: the template's own, or the shorter side in pixels" },
            "priority": { "type": "string", "enum": Priority::NAMES, "default": "normal",
                          "description": "Order among the renders of the same account (an addition); lowered to \
                                          the account's cap. Accounts share the workers fairly whatever it is" },
            "create_render": flag("Whether a video is made (default true)"),
            "create_project": flag("Whether a project is made (default false)"),
            "auto_render": flag("Alias of create_render; must agree with it when both are given"),
            "create_moov": flag("Alias of create_project; must agree with it when both are given"),
            "format": { "type": ["string", "null"], "enum": Format::NAMES.iter().map(|n| json!(n)).chain([Value::Null]).collect::<Vec<_>>(),
                        "default": "mp4",
                        "description": "The file made (an addition): mp4 (H.264/AAC), webm (VP9/Opus), gif (no sound), \
                                        mov (ProRes 4444/AAC), or a still: jpg, png. A format without sound refuses \
                                        sound values and video-site uploads" },
            "transparent": { "type": ["boolean", "null"],
                             "description": "Keep the canvas's alpha: webm, mov and png only; the template's background \
                                             needs transparency" },
            "still_at": { "type": ["number", "null"], "minimum": 0,
                          "description": "jpg and png only: the still's time in seconds, within the video (default a \
                                          third of it)" },
            "fps": { "type": ["integer", "null"], "minimum": 1, "maximum": GIF_MAX_FPS,
                     "description": "gif only: most frames per second (default the template's, at most 50)" },
            "max_width": { "type": ["integer", "null"], "minimum": 16, "maximum": 4096,
                           "description": "gif only: widest width in pixels (proportions kept)" },
            "subtitles": { "type": ["boolean", "null"],
                           "description": "mp4 and mov only: also carry the captions layers' cues as a subtitle \
                                           track (mov_text); the template needs a captions layer" },
            "loudness": { "type": ["number", "null"], "minimum": -70, "maximum": -5,
                          "description": "Integrated loudness in LUFS the sound is brought to, with its true peak \
                                          under -1 dBTP, over the template's own loudness (an addition; formats with \
                                          sound)" },
            "dry_run": { "type": ["boolean", "null"],
                         "description": "Answer what the job would cost (credits, and each video's frames, CPU-seconds \
                                         and memory) and create nothing (an addition)" },
        },
        // Aliases that contradict their names, or nothing to create, are refused.
        "not": { "anyOf": [
            { "allOf": [is("create_render", true), is("auto_render", false)] },
            { "allOf": [is("create_render", false), is("auto_render", true)] },
            { "allOf": [is("create_project", true), is("create_moov", false)] },
            { "allOf": [is("create_project", false), is("create_moov", true)] },
            { "allOf": [
                { "anyOf": [is("create_render", false), is("auto_render", false)] },
                { "not": { "anyOf": [is("create_project", true), is("create_moov", true)] } },
            ] },
        ] },
    });
    let value = json!({
        "description": "A value by variable type (spec §4.7.1): text or an address or asset id, null for the \
                        placeholder of an image, rich text, text-to-speech for a sound, subtitles or cues for \
                        captions",
        "anyOf": [
            { "type": "string" },
            { "type": "null" },
            { "type": "object", "required": ["type", "value"], "properties": {
                "type": { "const": "rich-text" }, "value": { "type": "string" } } },
            { "type": "object", "required": ["type", "value", "identifier"], "properties": {
                "type": { "const": "tts" }, "value": { "type": "string" },
                "identifier": { "type": "string", "description": "provider;voice;gender;language;engine;extra" } } },
            { "type": "object", "required": ["type", "value"], "properties": {
                "type": { "const": "captions" }, "value": { "type": "string", "description": "SRT or WebVTT" } } },
            { "type": "array", "items": { "type": "object", "required": ["start", "end", "text"], "properties": {
                "start": { "type": "number", "minimum": 0 }, "end": { "type": "number" },
                "text": { "type": "string" } } } },
        ],
    });
    let element = json!({
        "type": "object",
        "properties": {
            "external_id": { "type": ["string", "number", "null"], "description": "The caller's reference, echoed as a string" },
            "title": { "type": ["string", "number", "null"], "description": "Title of the project, echoed as a string" },
            "template_variables": {
                "description": "Variable id to value; variables not given keep the template's content",
                "anyOf": [{ "type": "object", "additionalProperties": value }, { "type": "array", "maxItems": 0 }],
            },
            "metadata": object_or_empty_array("Passed through to the video"),
        },
    });
    let payload = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required });
    let notification = |kind: &str, payload: Value| {
        json!({ "type": "object", "required": ["type", "payload"],
                "properties": { "type": { "const": kind }, "payload": payload } })
    };
    // ASCII only, so that `maxLength` (characters) is the limit of 254 octets.
    let email = json!({
        "type": "string", "maxLength": 254,
        "pattern": "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$",
    });
    let notifications = json!({
        "type": "array",
        "maxItems": MAX_NOTIFICATIONS,
        "items": { "oneOf": [
            notification("callback", payload(json!({ "url": address("Receives the render's body (spec §6.1)") }), &["url"])),
            notification("upload-videosite", payload(json!({
                "title": text::not_blank(), "description": text::not_blank(),
                "playlist_id": { "type": ["string", "null"] },
                "callback": address("Receives the upload's body (spec §6.2)"),
            }), &["title", "description"])),
            notification("upload-cloudstorage", payload(json!({
                "title": text::not_blank(), "path": text::not_blank(),
            }), &["title", "path"])),
            notification("email", payload(json!({
                "email": { "anyOf": [email.clone(), { "type": "array", "items": email, "minItems": 1 }] },
                "subject": { "type": ["string", "null"] },
                "message": { "type": ["string", "null"] },
                "logo": address("Image shown in the e-mail"),
            }), &["email"])),
        ] },
    });
    json!({
        "type": "object",
        "required": ["template_id", "options", "values"],
        "properties": {
            "template_id": { "type": "string", "minLength": 1, "description": "Id of a template the caller may use" },
            "options": options,
            "values": { "type": "array", "minItems": 1, "maxItems": MAX_VALUES, "items": element,
                        "description": "One element per video" },
            "notifications": notifications,
        },
    })
}

#[cfg(test)]
mod tests {
    use serde::de::{self, Deserialize, Visitor};
    use utoipa::{PartialSchema, ToSchema};

    use crate::routes::integrations::LinkBody;
    use crate::routes::libraries::CreateLibraryForm;
    use crate::routes::objects::AddObjectForm;
    use crate::services::drafts::DraftBody;
    use crate::services::jobs::request::JobBody;
    use crate::services::previews::PreviewBody;
    use crate::services::template_edit::TemplateBody;

    /// The field names serde reads for `T` (what its derived `Deserialize` asks the
    /// deserializer for), without parsing anything.
    fn parsed_fields<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
        struct Probe<'a>(&'a mut Vec<&'static str>);
        impl<'de> de::Deserializer<'de> for Probe<'_> {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0.extend_from_slice(fields);
                Err(de::Error::custom("probed"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
                option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
            }
        }
        let mut fields = Vec::new();
        let _ = T::deserialize(Probe(&mut fields));
        fields.sort_unstable();
        fields
    }

    /// The properties the OpenAPI document gives `T`, and the required ones.
    fn documented<T: ToSchema>() -> (Vec<String>, Vec<String>) {
        let schema = serde_json::to_value(T::schema()).unwrap();
        let mut properties: Vec<String> = schema["properties"].as_object().unwrap().keys().cloned().collect();
        properties.sort_unstable();
        let required =
            schema["required"].as_array().into_iter().flatten().map(|r| r.as_str().unwrap().into()).collect();
        (properties, required)
    }

    /// A derived body documents exactly the fields its handler parses, under the name the
    /// document uses, and no hand-written schema of that name is put beside it.
    #[test]
    fn derived_bodies_document_every_parsed_field_and_nothing_else() {
        fn check<T: ToSchema + for<'de> Deserialize<'de>>(name: &str, required: &[&str]) {
            assert_eq!(T::name(), name);
            let (properties, documented_required) = documented::<T>();
            assert_eq!(properties, parsed_fields::<T>(), "{name}: documented vs parsed fields");
            assert_eq!(documented_required, required, "{name}: required fields");
            assert!(super::schemas().iter().all(|(n, _)| *n != name), "{name} is derived, not hand-written");
        }
        check::<CreateLibraryForm>("CreateLibraryBody", &["name"]);
        check::<AddObjectForm>("AddObjectBody", &["filename"]);
        check::<LinkBody>("LinkBody", &["client_id", "client_secret", "refresh_token"]);
        check::<PreviewBody>("PreviewBody", &["t"]);
        check::<DraftBody>("DraftBody", &[]);
        check::<TemplateBody>("TemplateBody", &["json"]);
        let (properties, _) = documented::<AddObjectForm>();
        assert_eq!(properties, ["filename", "library_id"]);
        let job = super::job_body();
        let mut documented: Vec<&str> = job["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        documented.sort_unstable();
        assert_eq!(documented, parsed_fields::<JobBody>(), "JobBody: hand-written properties vs parsed fields");
        let name = serde_json::to_value(CreateLibraryForm::schema()).unwrap()["properties"]["name"].clone();
        assert_eq!(name["maxLength"], 100, "the text rule's bounds: {name}");
        assert!(name["pattern"].as_str().is_some_and(|p| p.starts_with('^')), "{name}");
    }
}
