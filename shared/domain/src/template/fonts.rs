//! The font families a template may name. Their files live in `fonts/` at the repository
//! root (Liberation 2.1.5, SIL OFL 1.1) and are embedded in the renderer; nothing is
//! looked up on the machine. A template naming any other family is refused at import:
//! we never substitute a font silently.

/// The bundled families, each with regular, bold, italic and bold-italic faces covering
/// Latin (with accents), Greek and Cyrillic.
pub const FAMILIES: &[&str] = &["Liberation Sans", "Liberation Serif", "Liberation Mono"];

/// The bundled family with this exact name, if any. Names are matched exactly (the
/// dashboard lists them; a near miss is an error to show, not a guess to make).
pub fn find(family: &str) -> Option<&'static str> {
    FAMILIES.iter().copied().find(|f| *f == family)
}

/// The error text for a family we do not bundle, listing the ones we do.
pub fn unknown_family_message(family: &str) -> String {
    format!("font family {family:?} is not available; use one of: {}", FAMILIES.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_exact_bundled_names() {
        assert_eq!(find("Liberation Sans"), Some("Liberation Sans"));
        assert_eq!(find("liberation sans"), None);
        assert_eq!(find("Arial"), None);
    }

    #[test]
    fn unknown_family_message_lists_the_choices() {
        let message = unknown_family_message("Comic Sans");
        assert!(message.contains("\"Comic Sans\" is not available"));
        assert!(message.contains("Liberation Serif"));
    }
}
