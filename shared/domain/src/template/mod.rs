//! The template format: the versioned JSON "project definition" a template arrives in,
//! its validation, the variables derived from it, and the rich-text markup of text
//! layers. Rendering lives in the worker; this module is what the api, the admin CLI and
//! the renderer share.
//!
//! Reading: [`Template::from_json`] (shape errors with JSON paths, then every rule of
//! [`Template::validate`]). Publishing: [`json_schema`] (committed as
//! `docs/template.schema.json`); the format is documented in `docs/templates.md`.

pub mod color;
pub mod fonts;
pub mod rich;
pub mod stored;
pub mod values;

mod error;
mod layer;
mod parse;
mod schema;
mod types;
mod validate;
mod variables;

#[cfg(test)]
mod tests;

pub use error::{TemplateError, ValidationError};
pub use layer::{
    Align, CaptionsLayer, Content, Fit, Font, Frame, ImageLayer, Layer, LottieLayer, ShapeKind, ShapeLayer, SoundLayer,
    TextFit, TextLayer, VAlign, Variable, VideoLayer,
};
pub use schema::{json_schema, names};
pub use types::{
    Animation, Canvas, Clip, Direction, Duck, Easing, Rect, Soundtrack, Source, Template, Transition, DUCK_MAX_DB,
    DUCK_MAX_RAMP, LOUDNESS_RANGE, VERSION,
};
pub use variables::{variable_by_key, Requirements, TemplateVariable, VariableType};
