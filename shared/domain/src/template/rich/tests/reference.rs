//! The parser as it was before it kept the format of each open element: it
//! walks the whole stack of open elements for every character, so it is quadratic, but it
//! is the reference the linear parser must agree with on every input.

use super::super::{Builder, Format, RichText, RichTextError};
use crate::template::color::Color;

/// Parses `markup` into paragraphs.
pub(super) fn parse(markup: &str) -> Result<RichText, RichTextError> {
    Parser { chars: markup.chars().collect(), pos: 0, stack: Vec::new(), out: Builder::default() }.run()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Paragraph,
    Bold,
    Italic,
    Color,
    Break,
    List,
    Item,
}

impl Tag {
    fn from_name(name: &str) -> Option<Tag> {
        Some(match name {
            "p" => Tag::Paragraph,
            "b" | "strong" => Tag::Bold,
            "i" | "em" => Tag::Italic,
            "color" => Tag::Color,
            "br" => Tag::Break,
            "ul" | "ol" => Tag::List,
            "li" => Tag::Item,
            _ => return None,
        })
    }
}

/// An open element: its tag, its name as written (lower-cased) for matching the closing
/// tag, where it started, and the colour of a `<color>`.
struct Open {
    tag: Tag,
    name: String,
    position: usize,
    color: Option<Color>,
}

fn error(position: usize, message: impl Into<String>) -> RichTextError {
    RichTextError { position, message: message.into() }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0C')
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    stack: Vec<Open>,
    out: Builder,
}

impl Parser {
    fn run(mut self) -> Result<RichText, RichTextError> {
        while let Some(c) = self.peek() {
            match c {
                '<' => self.tag()?,
                '&' => {
                    let start = self.pos;
                    let c = self.entity()?;
                    self.text(c, start)?;
                }
                c => {
                    self.pos += 1;
                    self.text(c, self.pos - 1)?;
                }
            }
        }
        if let Some(open) = self.stack.last() {
            return Err(error(open.position, format!("<{}> is never closed", open.name)));
        }
        self.out.finish(false);
        Ok(RichText { paragraphs: self.out.paragraphs })
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        self.pos += usize::from(found);
        found
    }

    /// Skips whitespace; whether there was any.
    fn skip_space(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(is_space) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// A name: letters, digits and `extra`, starting with a letter; lower-cased.
    fn name(&mut self, extra: &str) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let first = self.pos == start;
            if !(c.is_ascii_alphabetic() || (!first && (c.is_ascii_digit() || extra.contains(c)))) {
                break;
            }
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect::<String>().to_ascii_lowercase()
    }

    fn format(&self) -> Format {
        self.stack.iter().fold(Format::default(), |f, open| match open.tag {
            Tag::Bold => Format { bold: true, ..f },
            Tag::Italic => Format { italic: true, ..f },
            Tag::Color => Format { color: open.color, ..f },
            _ => f,
        })
    }

    /// The innermost open block (`<p>`, a list or `<li>`).
    fn block(&self) -> Option<&Open> {
        self.stack.iter().rev().find(|o| matches!(o.tag, Tag::Paragraph | Tag::List | Tag::Item))
    }

    fn inside(&self, tag: Tag) -> bool {
        self.stack.iter().any(|o| o.tag == tag)
    }

    fn text(&mut self, c: char, position: usize) -> Result<(), RichTextError> {
        if is_space(c) {
            self.out.space(self.format());
            return Ok(());
        }
        if c.is_control() {
            return Err(error(position, format!("control character U+{:04X} is not allowed", c as u32)));
        }
        self.refuse_in_bare_list(position, "text")?;
        self.out.char(c, self.format());
        Ok(())
    }

    fn refuse_in_bare_list(&self, position: usize, what: &str) -> Result<(), RichTextError> {
        match self.block() {
            Some(list) if list.tag == Tag::List => {
                Err(error(position, format!("{what} inside <{}> must be in an <li>", list.name)))
            }
            _ => Ok(()),
        }
    }

    /// At `&`: the character an entity stands for, or `&` itself when no `&name;` or
    /// `&#…;` follows.
    fn entity(&mut self) -> Result<char, RichTextError> {
        let start = self.pos;
        let body_len = self.chars[start + 1..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == '#').count();
        if body_len == 0 || self.chars.get(start + 1 + body_len) != Some(&';') {
            self.pos += 1;
            return Ok('&');
        }
        let body: String = self.chars[start + 1..start + 1 + body_len].iter().collect();
        self.pos = start + body_len + 2;
        let decoded = match body.strip_prefix('#') {
            Some(number) => {
                let parsed = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => number.parse::<u32>(),
                };
                parsed.ok().and_then(char::from_u32).filter(|c| !c.is_control() || is_space(*c))
            }
            None => named_entity(&body),
        };
        decoded.ok_or_else(|| error(start, format!("unknown or invalid entity &{body};")))
    }

    fn tag(&mut self) -> Result<(), RichTextError> {
        let start = self.pos;
        self.pos += 1;
        let closing = self.eat('/');
        let name = self.name("");
        if name.is_empty() {
            return Err(match self.peek() {
                Some('!') | Some('?') => error(start, "comments and declarations are not supported"),
                _ if closing => error(start, "malformed closing tag"),
                _ => error(start, "stray '<': write &lt; for a literal <"),
            });
        }
        let slash = if closing { "/" } else { "" };
        let tag = Tag::from_name(&name).ok_or_else(|| error(start, format!("unsupported tag <{slash}{name}>")))?;
        if closing {
            self.skip_space();
            if !self.eat('>') {
                return Err(error(start, format!("malformed closing tag </{name}>")));
            }
            return self.close(tag, name, start);
        }
        let (color, self_closing) = self.attributes(tag, &name, start)?;
        if self_closing && tag != Tag::Break {
            return Err(error(start, format!("<{name}> cannot be self-closing")));
        }
        self.open(Open { tag, name, position: start, color })
    }

    /// Reads the rest of an opening tag; returns the `<color>`'s value and whether the
    /// tag ended with `/>`.
    fn attributes(&mut self, tag: Tag, name: &str, start: usize) -> Result<(Option<Color>, bool), RichTextError> {
        let mut color = None;
        loop {
            let spaced = self.skip_space();
            match self.peek() {
                None => return Err(error(start, format!("<{name}> is not closed by '>'"))),
                Some('>') => {
                    self.pos += 1;
                    break;
                }
                Some('/') if self.chars.get(self.pos + 1) == Some(&'>') => {
                    self.pos += 2;
                    return Ok((color, true));
                }
                Some(c) if spaced && c.is_ascii_alphabetic() => {
                    let at = self.pos;
                    let attribute = self.name("-_:");
                    if tag != Tag::Color || attribute != "value" || color.is_some() {
                        return Err(error(at, format!("unsupported attribute {attribute:?} on <{name}>")));
                    }
                    self.skip_space();
                    if !self.eat('=') {
                        return Err(error(at, format!("attribute {attribute:?} needs a value")));
                    }
                    self.skip_space();
                    let value_at = self.pos;
                    let value = self.quoted().ok_or_else(|| error(value_at, "attribute values must be quoted"))?;
                    color = Some(Color::parse_css(&value).map_err(|e| error(value_at + 1, e))?);
                }
                Some(_) => return Err(error(self.pos, format!("unexpected character in <{name}>"))),
            }
        }
        if tag == Tag::Color && color.is_none() {
            return Err(error(start, "<color> needs a value attribute (a colour name or #rrggbb)"));
        }
        Ok((color, false))
    }

    /// A `"…"` or `'…'` string; None when not quoted or not terminated.
    fn quoted(&mut self) -> Option<String> {
        let quote = self.peek().filter(|c| *c == '"' || *c == '\'')?;
        let len = self.chars[self.pos + 1..].iter().position(|c| *c == quote)?;
        let value = self.chars[self.pos + 1..self.pos + 1 + len].iter().collect();
        self.pos += len + 2;
        Some(value)
    }

    fn open(&mut self, open: Open) -> Result<(), RichTextError> {
        let (at, name) = (open.position, open.name.as_str());
        match open.tag {
            Tag::Break => {
                self.refuse_in_bare_list(at, "<br/>")?;
                self.out.line_break(self.format());
                return Ok(());
            }
            Tag::Bold | Tag::Italic | Tag::Color => {}
            Tag::Paragraph => {
                if self.inside(Tag::Paragraph) {
                    return Err(error(at, "<p> cannot be inside another <p>"));
                }
                self.refuse_in_bare_list(at, "<p>")?;
                // `<li><p>…` continues the item's paragraph.
                if !(self.block().is_some_and(|b| b.tag == Tag::Item) && self.out.is_empty()) {
                    self.out.finish(false);
                }
            }
            Tag::List => {
                if self.inside(Tag::Paragraph) {
                    return Err(error(at, format!("<{name}> cannot be inside <p>")));
                }
                if self.inside(Tag::List) {
                    return Err(error(at, "nested lists are not supported"));
                }
                self.out.finish(false);
            }
            Tag::Item => {
                if self.stack.last().is_none_or(|o| o.tag != Tag::List) {
                    return Err(error(at, "<li> must be directly inside <ul> or <ol>"));
                }
                self.out.finish(true);
            }
        }
        self.stack.push(open);
        Ok(())
    }

    fn close(&mut self, tag: Tag, name: String, at: usize) -> Result<(), RichTextError> {
        if tag == Tag::Break {
            return Err(error(at, "</br> is not allowed: write <br/>"));
        }
        match self.stack.last() {
            None => return Err(error(at, format!("</{name}> closes nothing"))),
            Some(open) if open.name != name => {
                return Err(error(
                    at,
                    format!("</{name}> does not match <{}> opened at character {}", open.name, open.position),
                ))
            }
            Some(_) => {}
        }
        self.stack.pop();
        if matches!(tag, Tag::Paragraph | Tag::Item | Tag::List) {
            self.out.finish(false);
        }
        Ok(())
    }
}

fn named_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "hellip" => '…',
        "mdash" => '—',
        "ndash" => '–',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "bull" => '•',
        "middot" => '·',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "euro" => '€',
        "deg" => '°',
        "times" => '×',
        _ => return None,
    })
}
