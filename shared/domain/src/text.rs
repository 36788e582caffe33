//! Text an answer repeats from what a user sent, kept short.

use std::borrow::Cow;

/// `text` cut after `most` characters, ending with `…` when it was longer.
pub fn shortened(text: &str, most: usize) -> Cow<'_, str> {
    match text.char_indices().nth(most) {
        Some((end, _)) => format!("{}…", &text[..end]).into(),
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::shortened;

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(shortened("ab", 2), "ab");
        assert_eq!(shortened("abc", 2), "ab…");
        assert_eq!(shortened("éèê", 1), "é…");
    }
}
