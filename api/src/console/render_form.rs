//! The render form of a template page: generated from the template's variables, read back
//! into the body of a job request (spec §4.7) for the job service, whose field errors are
//! then shown next to the inputs they are about.
//!
//! Inputs are named after the variable they fill: `text.ID` (with `rich.ID` when the
//! text is markup), `asset.ID` (an asset chosen from the libraries), `url.ID` (a file
//! address), and for sound `tts.ID` with `voice.ID`.

use std::collections::HashMap;

use reelfarm_domain::template::VariableType;
use serde_json::{json, Map, Value};

use crate::error::FieldError;

/// A form as sent: its fields in order.
pub struct Fields(pub Vec<(String, String)>);

impl Fields {
    /// The value of field `name`, trimmed; `None` when absent or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim()).filter(|v| !v.is_empty())
    }

    /// The value of field `name` as typed (text keeps its spaces and lines).
    fn raw(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.trim().is_empty())
    }
}

/// Problems of a submitted form, by what they are about: a variable's id, or `quality`,
/// `title`, `external_id`, `callback`; anything else under `""`.
pub type Problems = HashMap<String, String>;

/// The job request of a form filled in for `template_id`, whose variables are `(id,
/// type)`; or the problems that keep it from being one.
pub fn job_body(template_id: &str, variables: &[(String, VariableType)], form: &Fields) -> Result<Value, Problems> {
    let mut problems = Problems::new();
    let mut values = Map::new();
    for (id, kind) in variables {
        match value_of(id, *kind, form) {
            Ok(Some(value)) => {
                values.insert(id.clone(), value);
            }
            Ok(None) => {}
            Err(problem) => {
                problems.insert(id.clone(), problem.into());
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut element = json!({ "template_variables": values });
    for name in ["title", "external_id"] {
        if let Some(given) = form.get(name) {
            element[name] = json!(given);
        }
    }
    let mut body = json!({
        "template_id": template_id,
        "options": {
            "quality": form.get("quality").unwrap_or("default"),
            "priority": form.get("priority").unwrap_or("normal"),
            "format": form.get("format").unwrap_or("mp4"),
            "create_render": true,
        },
        "values": [element],
    });
    for option in ["transparent", "subtitles"] {
        if form.get(option).is_some() {
            body["options"][option] = json!(true);
        }
    }
    if let Some(url) = form.get("callback") {
        body["notifications"] = json!([{ "type": "callback", "payload": { "url": url } }]);
    }
    Ok(body)
}

/// The value the form gives variable `id` of type `kind`; `None` keeps the template's.
fn value_of(id: &str, kind: VariableType, form: &Fields) -> Result<Option<Value>, &'static str> {
    let field = |prefix: &str| form.get(&format!("{prefix}.{id}"));
    if kind == VariableType::Text {
        let Some(text) = form.raw(&format!("text.{id}")) else { return Ok(None) };
        return Ok(Some(match field("rich") {
            Some(_) => json!({ "type": "rich-text", "value": text }),
            None => json!(text),
        }));
    }
    if kind == VariableType::Captions {
        return match (form.raw(&format!("captions.{id}")), field("url")) {
            (None, None) => Ok(None),
            (Some(text), None) => Ok(Some(json!({ "type": "captions", "value": text }))),
            (None, Some(url)) => Ok(Some(json!(url))),
            (Some(_), Some(_)) => Err("Give one source: subtitles or the address of a subtitles file"),
        };
    }
    let speech = (kind == VariableType::Sound).then(|| field("tts")).flatten();
    match (field("asset"), field("url"), speech) {
        (None, None, None) => Ok(None),
        (Some(asset), None, None) => Ok(Some(json!(asset))),
        (None, Some(url), None) => Ok(Some(json!(url))),
        (None, None, Some(text)) => match field("voice") {
            Some(voice) => Ok(Some(json!({ "type": "tts", "value": text, "identifier": voice }))),
            None => Err("Choose a voice for the text to speak"),
        },
        _ => Err("Give one source: a file from your libraries, an address or a text to speak"),
    }
}

/// What the job service's field errors are about, in the form's terms.
pub fn problems_of(errors: &[FieldError]) -> Problems {
    let mut problems = Problems::new();
    for e in errors {
        let field = e.field.as_str();
        let about = if let Some(rest) = field.strip_prefix("values[0].template_variables.") {
            rest.split('.').next().unwrap_or_default()
        } else if let Some(rest) = field.strip_prefix("values[0].") {
            rest
        } else if let Some(option @ ("quality" | "priority" | "format" | "transparent" | "subtitles")) =
            field.strip_prefix("options.")
        {
            option
        } else if field.starts_with("notifications") {
            "callback"
        } else {
            ""
        };
        problems.entry(about.to_string()).or_insert_with(|| e.message.clone());
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelfarm_domain::error_key::ErrorKey;

    const TEXT: &str = "5d1d9a6e-0000-4000-8000-000000000001";
    const IMAGE: &str = "5d1d9a6e-0000-4000-8000-000000000002";
    const SOUND: &str = "5d1d9a6e-0000-4000-8000-000000000003";

    fn variables() -> Vec<(String, VariableType)> {
        vec![
            (TEXT.into(), VariableType::Text),
            (IMAGE.into(), VariableType::Image),
            (SOUND.into(), VariableType::Sound),
        ]
    }

    fn form(fields: &[(&str, &str)]) -> Fields {
        Fields(fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn an_empty_form_keeps_every_default() {
        let body = job_body("t", &variables(), &form(&[("quality", "720p"), ("text.x", "")])).unwrap();
        assert_eq!(
            body,
            json!({"template_id": "t", "options": {"quality": "720p", "priority": "normal", "format": "mp4", "create_render": true},
                   "values": [{"template_variables": {}}]})
        );
    }

    #[test]
    fn the_format_and_transparency_go_into_the_options() {
        let body = job_body("t", &variables(), &form(&[("format", "webm"), ("transparent", "1")])).unwrap();
        assert_eq!((&body["options"]["format"], &body["options"]["transparent"]), (&json!("webm"), &json!(true)));
        let errors = [FieldError::new("options.transparent", ErrorKey::Invalid, "opaque background")];
        assert_eq!(problems_of(&errors)["transparent"], "opaque background");
        let body = job_body("t", &variables(), &form(&[("subtitles", "1")])).unwrap();
        assert_eq!(body["options"]["subtitles"], json!(true));
        let errors = [FieldError::new("options.subtitles", ErrorKey::Invalid, "no captions")];
        assert_eq!(problems_of(&errors)["subtitles"], "no captions");
    }

    #[test]
    fn each_kind_of_value_reads_as_the_api_takes_it() {
        let text = format!("text.{TEXT}");
        let rich = format!("rich.{TEXT}");
        let url = format!("url.{IMAGE}");
        let (tts, voice) = (format!("tts.{SOUND}"), format!("voice.{SOUND}"));
        let fields = form(&[
            (&text, " <b>Hi</b> "),
            (&rich, "on"),
            (&url, "https://example.test/a.png"),
            (&tts, "Hello there"),
            (&voice, "espeak;en;female;en-GB;none;none"),
            ("title", "Ad"),
            ("callback", "https://hooks.test/x"),
        ]);
        let body = job_body("t", &variables(), &fields).unwrap();
        let values = &body["values"][0];
        assert_eq!(values["template_variables"][TEXT], json!({"type": "rich-text", "value": " <b>Hi</b> "}));
        assert_eq!(values["template_variables"][IMAGE], json!("https://example.test/a.png"));
        assert_eq!(
            values["template_variables"][SOUND],
            json!({"type": "tts", "value": "Hello there", "identifier": "espeak;en;female;en-GB;none;none"})
        );
        assert_eq!(values["title"], "Ad");
        assert_eq!(body["options"]["quality"], "default");
        assert_eq!(body["notifications"][0]["payload"]["url"], "https://hooks.test/x");
    }

    #[test]
    fn two_sources_or_a_text_without_voice_are_problems_of_their_variable() {
        let (asset, url, tts) = (format!("asset.{IMAGE}"), format!("url.{IMAGE}"), format!("tts.{SOUND}"));
        let problems = job_body("t", &variables(), &form(&[(&asset, "a"), (&url, "b"), (&tts, "say")])).unwrap_err();
        assert_eq!(problems.len(), 2);
        assert!(problems[IMAGE].contains("one source"));
        assert!(problems[SOUND].contains("voice"));
    }

    #[test]
    fn subtitles_are_sent_as_a_captions_value_and_an_address_as_it_is() {
        const CAPTIONS: &str = "5d1d9a6e-0000-4000-8000-000000000004";
        let variables = [(CAPTIONS.to_string(), VariableType::Captions)];
        let (text, url) = (format!("captions.{CAPTIONS}"), format!("url.{CAPTIONS}"));
        let srt = "1\n00:00:01,000 --> 00:00:02,000\nHi\n";
        let body = job_body("t", &variables, &form(&[(&text, srt)])).unwrap();
        assert_eq!(body["values"][0]["template_variables"][CAPTIONS], json!({"type": "captions", "value": srt}));
        let body = job_body("t", &variables, &form(&[(&url, "https://s.test/a.vtt")])).unwrap();
        assert_eq!(body["values"][0]["template_variables"][CAPTIONS], json!("https://s.test/a.vtt"));
        let problems = job_body("t", &variables, &form(&[(&text, srt), (&url, "https://s.test/a.vtt")])).unwrap_err();
        assert!(problems[CAPTIONS].contains("one source"), "{problems:?}");
    }

    #[test]
    fn service_errors_land_on_their_inputs() {
        let errors = [
            FieldError::new(format!("values[0].template_variables.{TEXT}"), ErrorKey::Invalid, "too long"),
            FieldError::new(format!("values[0].template_variables.{SOUND}.identifier"), ErrorKey::Invalid, "no voice"),
            FieldError::new("options.quality", ErrorKey::Invalid, "bad quality"),
            FieldError::new("options.priority", ErrorKey::Invalid, "bad priority"),
            FieldError::new("notifications[0].payload.url", ErrorKey::Invalid, "not https"),
            FieldError::new("values[0].title", ErrorKey::Invalid, "long title"),
        ];
        let problems = problems_of(&errors);
        assert_eq!(problems[TEXT], "too long");
        assert_eq!(problems[SOUND], "no voice");
        assert_eq!(problems["quality"], "bad quality");
        assert_eq!(problems["priority"], "bad priority");
        assert_eq!(problems["callback"], "not https");
        assert_eq!(problems["title"], "long title");
    }
}
