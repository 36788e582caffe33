//! The rich-text markup of text layers, a strict subset of HTML:
//!
//! - blocks: `<p>`, `<ul>`/`<ol>` with `<li>` (no nested lists; ordered lists render as
//!   bulleted ones), `<br>`/`<br/>`;
//! - inline: `<b>`/`<strong>`, `<i>`/`<em>`, `<color value="#rrggbb[aa]">`;
//! - entities: `&amp; &lt; &gt; &quot; &apos; &#39; &nbsp;`, a few typographic ones
//!   (`&hellip; &mdash; &ndash;` quotes, `&copy;` …) and numeric `&#NNN; &#xHH;`.
//!
//! Anything else — an unknown tag or attribute, an unclosed or mismatched tag, a bad
//! colour, a stray `<`, an unknown entity — is refused with its position (a character
//! offset from 0), so a bad value is reported to the caller instead of reaching a video.
//! An `&` that does not start `&name;` or `&#…;` is an ordinary character (`AT&T`).
//!
//! Whitespace collapses as in HTML: runs of spaces, tabs and newlines become one space and
//! paragraph and line edges are trimmed; `&nbsp;` is kept. A `<br/>` at the end of a
//! paragraph adds no line, so `<p><br/></p>` is one blank line; an empty paragraph is dropped.

use super::color::Color;

mod parser;

/// Parsed markup: what the renderer lays out and what value validation measures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RichText {
    pub paragraphs: Vec<Paragraph>,
}

/// A `<p>`, an `<li>` (`bullet`) or text outside any block. `runs` may be empty only for
/// a blank line (`<p><br/></p>`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Paragraph {
    pub bullet: bool,
    pub runs: Vec<Run>,
}

/// Text in one style. A line break is a run whose text is exactly `"\n"`; other runs never
/// contain a newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub text: String,
    pub bold: bool,
    pub italic: bool,
    /// `None`: the layer's font colour.
    pub color: Option<Color>,
}

/// Markup we refuse, with the character offset (from 0) of the offending tag, entity or
/// attribute value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at character {position}: {message}")]
pub struct RichTextError {
    pub position: usize,
    pub message: String,
}

/// Parses `markup`; see the module documentation for what is accepted.
pub fn parse(markup: &str) -> Result<RichText, RichTextError> {
    RichText::parse(markup)
}

impl RichText {
    /// Parses `markup`; see the module documentation for what is accepted. Time and memory
    /// are linear in the length of `markup`.
    pub fn parse(markup: &str) -> Result<RichText, RichTextError> {
        parser::parse(markup, usize::MAX)
    }

    /// [`RichText::parse`], also refusing markup with more than `max_depth` elements open
    /// at once (stopping at the first one too many).
    pub fn parse_with_max_depth(markup: &str, max_depth: usize) -> Result<RichText, RichTextError> {
        parser::parse(markup, max_depth)
    }

    /// Characters of text, not counting markup, bullets or line breaks.
    pub fn visible_len(&self) -> usize {
        self.runs().filter(|r| !r.is_break()).map(|r| r.text.chars().count()).sum()
    }

    /// Whether the text needs more than one line: a `<br/>`, several paragraphs or a bullet.
    pub fn has_line_breaks(&self) -> bool {
        self.paragraphs.len() > 1 || self.paragraphs.iter().any(|p| p.bullet) || self.runs().any(Run::is_break)
    }

    /// The text without markup: paragraphs and `<br/>` become `\n`, bullets are dropped.
    pub fn plain(&self) -> String {
        let paragraphs: Vec<String> =
            self.paragraphs.iter().map(|p| p.runs.iter().map(|r| r.text.as_str()).collect()).collect();
        paragraphs.join("\n")
    }

    fn runs(&self) -> impl Iterator<Item = &Run> {
        self.paragraphs.iter().flat_map(|p| &p.runs)
    }
}

impl Run {
    pub fn is_break(&self) -> bool {
        self.text == "\n"
    }

    fn new(text: String, format: Format) -> Run {
        Run { text, bold: format.bold, italic: format.italic, color: format.color }
    }

    fn format(&self) -> Format {
        Format { bold: self.bold, italic: self.italic, color: self.color }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Format {
    bold: bool,
    italic: bool,
    color: Option<Color>,
}

/// Collects paragraphs, collapsing whitespace as it goes.
#[derive(Default)]
struct Builder {
    paragraphs: Vec<Paragraph>,
    current: Paragraph,
    /// The current paragraph has had a `<br/>` (so it is not dropped when empty).
    had_break: bool,
    /// Whitespace seen after text, in the format it was seen in; written before the next
    /// character, dropped at a line or paragraph end.
    pending_space: Option<Format>,
}

impl Builder {
    fn is_empty(&self) -> bool {
        self.current.runs.is_empty() && !self.had_break
    }

    fn space(&mut self, format: Format) {
        let at_line_start = self.current.runs.last().is_none_or(Run::is_break);
        if !at_line_start && self.pending_space.is_none() {
            self.pending_space = Some(format);
        }
    }

    fn char(&mut self, c: char, format: Format) {
        if let Some(space_format) = self.pending_space.take() {
            self.push(' ', space_format);
        }
        self.push(c, format);
    }

    fn push(&mut self, c: char, format: Format) {
        match self.current.runs.last_mut() {
            Some(run) if !run.is_break() && run.format() == format => run.text.push(c),
            _ => self.current.runs.push(Run::new(c.to_string(), format)),
        }
    }

    fn line_break(&mut self, format: Format) {
        self.pending_space = None;
        self.current.runs.push(Run::new("\n".to_owned(), format));
        self.had_break = true;
    }

    /// Ends the current paragraph (keeping it unless empty) and starts the next.
    fn finish(&mut self, next_bullet: bool) {
        self.pending_space = None;
        if self.current.runs.last().is_some_and(Run::is_break) {
            self.current.runs.pop();
        }
        let next = Paragraph { bullet: next_bullet, runs: Vec::new() };
        let done = std::mem::replace(&mut self.current, next);
        if !done.runs.is_empty() || self.had_break {
            self.paragraphs.push(done);
        }
        self.had_break = false;
    }
}

#[cfg(test)]
mod tests;
