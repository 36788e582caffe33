//! Tests of the template format. `example.json` is the complete example of
//! docs/templates.md; most tests change one value of it and look at the outcome.

use serde_json::Value;

use super::{Template, TemplateError, ValidationError};

mod captions;
mod examples;
mod lottie;
mod parse;
mod timing;
mod validate;
mod validate_layer;
mod value;
mod variables;

const EXAMPLE: &str = include_str!("example.json");

fn example_value() -> Value {
    serde_json::from_str(EXAMPLE).unwrap()
}

fn example() -> Template {
    Template::from_json(EXAMPLE).unwrap_or_else(|e| panic!("the example is refused:\n{e}"))
}

/// The example with `change` applied, read back.
fn read(change: impl FnOnce(&mut Value)) -> Result<Template, TemplateError> {
    let mut value = example_value();
    change(&mut value);
    Template::from_json(serde_json::to_vec(&value).unwrap())
}

/// The validation errors of the example with `change` applied.
fn invalid(change: impl FnOnce(&mut Value)) -> Vec<ValidationError> {
    match read(change) {
        Err(TemplateError::Invalid(errors)) => errors,
        other => panic!("expected validation errors, got {other:?}"),
    }
}

/// The single shape error of the example with `change` applied.
fn malformed(change: impl FnOnce(&mut Value)) -> ValidationError {
    match read(change) {
        Err(TemplateError::Malformed(error)) => error,
        other => panic!("expected a shape error, got {other:?}"),
    }
}

/// Asserts that the example with `change` applied has exactly one error, at `path`, whose
/// message contains every part of `message`.
#[track_caller]
fn assert_one_error(change: impl FnOnce(&mut Value), path: &str, message: &[&str]) {
    let errors = invalid(change);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, path, "{errors:#?}");
    for part in message {
        assert!(errors[0].message.contains(part), "{:?} lacks {part:?}", errors[0].message);
    }
}

/// The JSON object of layer `j` of clip `i`.
fn layer(value: &mut Value, i: usize, j: usize) -> &mut Value {
    &mut value["clips"][i]["layers"][j]
}
