//! Request bodies as the OpenAPI document describes them. Form bodies derive their schema
//! and so do the JSON bodies but the job's: each from the type that parses it
//! (`CreateLibraryForm`, `AddObjectForm`, `LinkBody`, `PreviewBody`, `DraftBody`,
//! `TemplateBody`; see `crate::body`). The JSON handlers read their bodies leniently
//! (aliases, `[]` for `{}`, numbers for strings, surrounding white space) and check them
//! field by field; JSON Schema says the same, with `not`, `const` and patterns that
//! utoipa's types cannot express, so the job's schemas are written here and put into the
//! document by `openapi::finish` under the names the handlers refer to.
//!
//! Client generators read the document too (`scripts/clients`, decision 0053): every
//! `const` has its `type`, a nullable field is `type: [X, "null"]`, the parts of the job
//! are named schemas (the notifications told apart by a discriminator), and the job's `[]`
//! for `{}` goes undescribed, though the parser still reads it: a union with an empty
//! array is a type generators cannot name.

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

/// Every hand-written schema by name: the job body and the schemas it refers to, named
/// so that generated clients get types of their own (`JobOptions`, `Notification`, …).
pub fn schemas() -> Vec<(&'static str, Value)> {
    let rich_text = json!({ "value": { "type": "string" } });
    let tts = json!({ "value": { "type": "string", "description": "The text spoken" },
        "identifier": { "type": "string", "description": "provider;voice;gender;language;engine;extra" } });
    let captions = json!({ "value": { "type": "string", "description": "SRT or WebVTT" } });
    let mut schemas = vec![
        ("JobBody", job_body()),
        ("JobOptions", job_options()),
        ("VideoValues", video_values()),
        ("RichTextValue", typed_value("rich-text", rich_text)),
        ("TtsValue", typed_value("tts", tts)),
        ("CaptionsValue", typed_value("captions", captions)),
        ("CaptionCue", caption_cue()),
    ];
    schemas.extend(notifications::schemas());
    schemas
}

/// A reference to the hand-written schema `name`.
fn named(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
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
    json!({ "properties": { key: { "type": "boolean", "const": value } }, "required": [key] })
}

/// A string that is `value` (a kind's name in a tagged object).
fn tag(value: &str) -> Value {
    json!({ "type": "string", "const": value })
}

/// One of `names`, or `null`. An `anyOf` rather than `type: ["string", "null"]` with `null`
/// in the `enum`, of which openapi-python-client makes three enum types.
fn nullable_enum(names: &[&str], description: &str) -> Value {
    json!({ "anyOf": [{ "type": "string", "enum": names }, { "type": "null" }], "description": description })
}

/// The job request (spec §4.7).
fn job_body() -> Value {
    json!({
        "type": "object",
        "required": ["template_id", "options", "values"],
        "properties": {
            "template_id": { "type": "string", "minLength": 1, "description": "Id of a template the caller may use" },
            "options": named("JobOptions"),
            "values": { "type": "array", "minItems": 1, "maxItems": MAX_VALUES, "items": named("VideoValues"),
                        "description": "One element per video" },
            "notifications": { "type": ["array", "null"], "maxItems": MAX_NOTIFICATIONS, "items": named("Notification"),
                               "description": "What happens when each video is ready" },
        },
    })
}

/// A job's `options`. Defaults are said in the descriptions rather than with `default`:
/// TypeScript generators make a field with a default required.
fn job_options() -> Value {
    let flag = |d: &str| json!({ "type": ["boolean", "null"], "description": d });
    json!({
        "type": "object",
        "description": "How the job renders; {} takes every default",
        "properties": {
            "quality": nullable_enum(&Quality::NAMES, "Output size: the template's own (default), or the shorter \
                                                       side in pixels"),
            "priority": nullable_enum(&Priority::NAMES, "Order among the renders of the same account (an addition; \
                                                         default normal); lowered to the account's cap. Accounts \
                                                         share the workers fairly whatever it is"),
            "create_render": flag("Whether a video is made (default true)"),
            "create_project": flag("Whether a project is made (default false)"),
            "auto_render": flag("Alias of create_render; must agree with it when both are given"),
            "create_moov": flag("Alias of create_project; must agree with it when both are given"),
            "format": nullable_enum(&Format::NAMES, "The file made (an addition; default mp4): mp4 (H.264/AAC), \
                                                     webm (VP9/Opus), gif (no sound), mov (ProRes 4444/AAC), or a \
                                                     still: jpg, png. A format without sound refuses sound values \
                                                     and video-site uploads"),
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
    })
}

/// One element of a job's `values`: one video. `template_variables` and `metadata` are
/// described as objects only, though `[]` is read as `{}` (PHP clients send it): a union
/// with an empty array is a type generators cannot name.
fn video_values() -> Value {
    json!({
        "type": "object",
        "properties": {
            "external_id": { "type": ["string", "number", "null"], "description": "The caller's reference, echoed as a string" },
            "title": { "type": ["string", "number", "null"], "description": "Title of the project, echoed as a string" },
            "template_variables": {
                "type": ["object", "null"], "additionalProperties": variable_value(),
                "description": "Variable id to value; variables not given keep the template's content",
            },
            // `additionalProperties` said, or TypeScript generators type it `{}` only.
            "metadata": { "type": ["object", "null"], "additionalProperties": true,
                          "description": "Passed through to the video" },
        },
    })
}

/// A variable's value (spec §4.7.1): a union written in place, its object kinds named
/// (openapi-generator's Go client warns on a named union with a string branch).
fn variable_value() -> Value {
    json!({
        "description": "A value by variable type (spec §4.7.1): text or an address or asset id, null for the \
                        placeholder of an image, rich text, text-to-speech for a sound, subtitles or cues for \
                        captions",
        "anyOf": [
            { "type": "string" },
            { "type": "null" },
            named("RichTextValue"),
            named("TtsValue"),
            named("CaptionsValue"),
            { "type": "array", "items": named("CaptionCue") },
        ],
    })
}

/// `{"type": kind, …}` with `fields` besides, all required.
fn typed_value(kind: &str, fields: Value) -> Value {
    let mut properties = json!({ "type": tag(kind) });
    let mut required = vec![json!("type")];
    for (name, schema) in fields.as_object().into_iter().flatten() {
        properties[name] = schema.clone();
        required.push(json!(name));
    }
    json!({ "type": "object", "required": required, "properties": properties })
}

fn caption_cue() -> Value {
    json!({ "type": "object", "required": ["start", "end", "text"], "properties": {
        "start": { "type": "number", "minimum": 0, "description": "Seconds" },
        "end": { "type": "number", "description": "Seconds" },
        "text": { "type": "string" } } })
}

/// A job's notifications: one named schema per kind, told apart by `type`.
mod notifications {
    use serde_json::{json, Value};

    use super::{named, tag};
    use crate::text;

    /// The kinds, the schema of each and the union.
    pub(super) fn schemas() -> Vec<(&'static str, Value)> {
        let kinds = [
            ("callback", "CallbackNotification", callback()),
            ("upload-videosite", "UploadVideositeNotification", videosite()),
            ("upload-cloudstorage", "UploadCloudstorageNotification", cloudstorage()),
            ("email", "EmailNotification", email()),
        ];
        let union = json!({
            "description": "What happens when a video is ready, by `type`",
            "oneOf": kinds.iter().map(|(_, name, _)| named(name)).collect::<Vec<_>>(),
            "discriminator": {
                "propertyName": "type",
                "mapping": kinds.iter().map(|(kind, name, _)| (kind.to_string(), named(name)["$ref"].clone()))
                    .collect::<serde_json::Map<_, _>>(),
            },
        });
        let mut schemas = vec![("Notification", union)];
        schemas.extend(kinds.into_iter().map(|(kind, name, payload)| (name, notification(kind, payload))));
        schemas
    }

    fn notification(kind: &str, payload: Value) -> Value {
        json!({ "type": "object", "required": ["type", "payload"],
                "properties": { "type": tag(kind), "payload": payload } })
    }

    fn payload(properties: Value, required: &[&str]) -> Value {
        json!({ "type": "object", "properties": properties, "required": required })
    }

    /// An absolute http(s) address as the url crate reads it (ASCII host names whose last
    /// label starts with a letter, so that it is never read as an IPv4 number); `null`
    /// where it is optional.
    fn address(description: &str, required: bool) -> Value {
        let kind = if required { json!("string") } else { json!(["string", "null"]) };
        json!({
            "type": kind,
            "pattern": "^https?://([A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{1,4})?(/[!-~]*)?$",
            "description": description,
        })
    }

    /// An optional text: `null` or any string (blank counts as absent).
    fn optional_text() -> Value {
        json!({ "type": ["string", "null"] })
    }

    fn callback() -> Value {
        payload(json!({ "url": address("Receives the render's body (spec §6.1)", true) }), &["url"])
    }

    fn videosite() -> Value {
        payload(
            json!({
                "title": text::not_blank(), "description": text::not_blank(),
                "playlist_id": optional_text(),
                "callback": address("Receives the upload's body (spec §6.2)", false),
            }),
            &["title", "description"],
        )
    }

    fn cloudstorage() -> Value {
        payload(json!({ "title": text::not_blank(), "path": text::not_blank() }), &["title", "path"])
    }

    fn email() -> Value {
        // ASCII only, so that `maxLength` (characters) is the limit of 254 octets.
        let mailbox = json!({
            "type": "string", "maxLength": 254,
            "pattern": "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$",
        });
        payload(
            json!({
                "email": { "description": "One address or several",
                           "anyOf": [mailbox.clone(), { "type": "array", "items": mailbox, "minItems": 1 }] },
                "subject": optional_text(),
                "message": optional_text(),
                "logo": address("Image shown in the e-mail", false),
            }),
            &["email"],
        )
    }
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
