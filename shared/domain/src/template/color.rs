//! Colours as templates write them: `#rrggbb` or `#rrggbbaa` (also the `#rgb` shorthand),
//! case-insensitive. Serialised back in the shortest exact form: `#rrggbb` when opaque,
//! `#rrggbbaa` otherwise. Components are straight (not premultiplied) sRGB.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The pattern the JSON Schema advertises; [`Color::parse`] accepts exactly these strings.
pub const PATTERN: &str = "^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$";

/// An sRGB colour with straight alpha.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Color {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub a: u8,
}

impl Color {
    pub const BLACK: Color = Color::rgb(0, 0, 0);
    pub const WHITE: Color = Color::rgb(255, 255, 255);
    pub const TRANSPARENT: Color = Color { r: 0, g: 0, b: 0, a: 0 };

    /// An opaque colour.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Color {
        Color { r, g, b, a: 255 }
    }

    /// Parses `#rgb`, `#rrggbb` or `#rrggbbaa` (hex digits in either case). The error says
    /// what was expected and quotes the input.
    pub fn parse(s: &str) -> Result<Color, String> {
        let invalid = || format!("invalid colour {s:?}: expected #rrggbb or #rrggbbaa");
        let hex = s.strip_prefix('#').ok_or_else(invalid)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        // All ASCII from here, so byte slicing is safe.
        let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| invalid());
        match hex.len() {
            3 => {
                let nibble = |i: usize| u8::from_str_radix(&hex[i..=i], 16).map(|n| n * 17).map_err(|_| invalid());
                Ok(Color::rgb(nibble(0)?, nibble(1)?, nibble(2)?))
            }
            6 => Ok(Color::rgb(byte(0)?, byte(2)?, byte(4)?)),
            8 => Ok(Color { r: byte(0)?, g: byte(2)?, b: byte(4)?, a: byte(6)? }),
            _ => Err(invalid()),
        }
    }

    /// A colour as rich-text markup may name it (spec: "a colour name or a hexadecimal
    /// colour"): `#rgb`, `#rrggbb`, `#rrggbbaa`, any CSS colour name (`gold`,
    /// `rebeccapurple`) or CSS functional notation (`rgb(…)`, `hsl(…)`).
    pub fn parse_css(s: &str) -> Result<Color, String> {
        let s = s.trim();
        if s.starts_with('#') {
            return Color::parse(s);
        }
        let [r, g, b, a] = csscolorparser::parse(s)
            .map_err(|_| format!("invalid colour {s:?}: expected a colour name or #rrggbb"))?
            .to_rgba8();
        Ok(Color { r, g, b, a })
    }

    pub fn is_opaque(&self) -> bool {
        self.a == 255
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.r, self.g, self.b)?;
        if !self.is_opaque() {
            write!(f, "{:02x}", self.a)?;
        }
        Ok(())
    }
}

impl FromStr for Color {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Color::parse(s)
    }
}

impl Serialize for Color {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Color {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ColorVisitor;

        impl Visitor<'_> for ColorVisitor {
            type Value = Color;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a colour string #rrggbb or #rrggbbaa")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Color, E> {
                Color::parse(v).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(ColorVisitor)
    }
}

impl JsonSchema for Color {
    fn schema_name() -> Cow<'static, str> {
        "Color".into()
    }

    fn schema_id() -> Cow<'static, str> {
        concat!(module_path!(), "::Color").into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": PATTERN,
            "description": "An sRGB colour: `#rrggbb`, or `#rrggbbaa` with alpha (`#rgb` shorthand accepted).",
            "examples": ["#ffffff", "#00000080"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms_in_either_case() {
        assert_eq!(Color::parse("#FF8000").unwrap(), Color::rgb(255, 128, 0));
        assert_eq!(Color::parse("#ff800080").unwrap(), Color { r: 255, g: 128, b: 0, a: 128 });
        assert_eq!(Color::parse("#fA0").unwrap(), Color::rgb(255, 170, 0));
        assert_eq!(Color::parse("#000000").unwrap(), Color::BLACK);
    }

    #[test]
    fn refuses_anything_else() {
        for bad in ["", "#", "ff8000", "#ff80", "#ff80001", "#gg0000", "#ff8000 ", "red", "#+1+2+3", "#ééé"] {
            let err = Color::parse(bad).unwrap_err();
            assert!(err.contains("expected #rrggbb"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn serialises_the_short_form_when_opaque() {
        let json = serde_json::to_string(&[Color::rgb(1, 2, 255), Color { r: 0, g: 0, b: 0, a: 0x80 }]).unwrap();
        assert_eq!(json, r##"["#0102ff","#00000080"]"##);
        let back: Vec<Color> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [Color::rgb(1, 2, 255), Color { r: 0, g: 0, b: 0, a: 0x80 }]);
    }

    #[test]
    fn deserialising_a_bad_colour_says_why() {
        let err = serde_json::from_str::<Color>(r##""#12""##).unwrap_err().to_string();
        assert!(err.contains("invalid colour \"#12\""), "{err}");
        assert!(serde_json::from_str::<Color>("12").is_err());
    }

    #[test]
    fn schema_is_a_string_with_the_pattern() {
        let schema = schemars::schema_for!(Color);
        assert_eq!(schema.get("type").and_then(|t| t.as_str()), Some("string"));
        assert_eq!(schema.get("pattern").and_then(|p| p.as_str()), Some(PATTERN));
    }
}
