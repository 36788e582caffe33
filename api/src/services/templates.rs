//! The font families and faces a template may name.

/// The faces of every font family (see [`fonts`]).
pub const FONT_STYLES: [&str; 4] = ["regular", "bold", "italic", "bold italic"];

/// The font families a template may name, each with the faces of [`FONT_STYLES`].
pub fn fonts() -> &'static [&'static str] {
    reelfarm_domain::template::fonts::FAMILIES
}
