//! HTML text: what the e-mails the notifier writes and the rich-text values of templates
//! share.

/// `s` safe as HTML text and as a quoted attribute value: `& < > " '` escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_the_five_characters_and_nothing_else() {
        assert_eq!(
            super::escape(r#"<a href="x">Tom & 'Jerry' é</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39; é&lt;/a&gt;"
        );
    }
}
