use super::*;

mod random;
mod reference;

fn run(text: &str) -> Run {
    Run { text: text.to_owned(), bold: false, italic: false, color: None }
}

fn bold(text: &str) -> Run {
    Run { bold: true, ..run(text) }
}

fn para(runs: Vec<Run>) -> Paragraph {
    Paragraph { bullet: false, runs }
}

fn bullet(runs: Vec<Run>) -> Paragraph {
    Paragraph { bullet: true, runs }
}

fn parsed(markup: &str) -> Vec<Paragraph> {
    RichText::parse(markup).unwrap_or_else(|e| panic!("{markup:?}: {e}")).paragraphs
}

fn refused(markup: &str) -> RichTextError {
    RichText::parse(markup).expect_err(markup)
}

#[test]
fn plain_text_is_one_paragraph_with_collapsed_whitespace() {
    assert_eq!(parsed("  Hello \n\t world  "), [para(vec![run("Hello world")])]);
    assert!(parsed("").is_empty());
    assert!(parsed("  \n ").is_empty());
}

#[test]
fn bold_italic_and_colour_nest_into_runs() {
    let text = parsed(r##"a <b>b <i>bi</i></b> <em>i</em> <color value="#ff0000">r<strong>R</strong></color>"##);
    let red = Some(Color::rgb(255, 0, 0));
    assert_eq!(
        text,
        [para(vec![
            run("a "),
            bold("b "),
            Run { italic: true, ..bold("bi") },
            run(" "),
            Run { italic: true, ..run("i") },
            run(" "),
            Run { color: red, ..run("r") },
            Run { color: red, ..bold("R") },
        ])]
    );
}

#[test]
fn space_keeps_the_style_it_was_written_in() {
    assert_eq!(parsed("<b>a </b>b"), [para(vec![bold("a "), run("b")])]);
}

#[test]
fn paragraphs_and_text_around_them() {
    assert_eq!(
        parsed("intro <p> one </p>\n<p>two</p> outro"),
        [para(vec![run("intro")]), para(vec![run("one")]), para(vec![run("two")]), para(vec![run("outro")])]
    );
}

#[test]
fn line_breaks_trim_the_spaces_around_them() {
    assert_eq!(parsed("a <br/> b<br>c<br />"), [para(vec![run("a"), run("\n"), run("b"), run("\n"), run("c")])]);
}

#[test]
fn a_paragraph_holding_only_a_break_is_a_blank_line_and_empty_ones_vanish() {
    assert_eq!(
        parsed("<p>a</p><p><br></p><p> </p><p>b</p>"),
        [para(vec![run("a")]), para(vec![]), para(vec![run("b")])]
    );
}

#[test]
fn list_items_are_bulleted_paragraphs() {
    let text = parsed("<p>Menu</p>\n<ul>\n  <li>one</li>\n  <li><p><b>two</b></p></li>\n</ul><ol><li>three</li></ol>");
    assert_eq!(
        text,
        [para(vec![run("Menu")]), bullet(vec![run("one")]), bullet(vec![bold("two")]), bullet(vec![run("three")])]
    );
}

#[test]
fn entities_decode_and_a_lone_ampersand_is_text() {
    let text = RichText::parse("&lt;a&gt; &amp; &quot;&#39;&apos; &#233;&#xE9;&#XE9; a&nbsp;b AT&T &hellip;").unwrap();
    assert_eq!(text.plain(), "<a> & \"'' ééé a\u{a0}b AT&T …");
}

#[test]
fn markup_is_case_insensitive_and_attributes_take_either_quote() {
    assert_eq!(parsed("<B>x</B><COLOR VALUE='#00f'>y</COLOR>").len(), 1);
}

#[test]
fn visible_length_counts_text_only() {
    let text = RichText::parse("<p><b>ab</b> c</p><ul><li>d&amp;e</li></ul>x<br/>y").unwrap();
    assert_eq!(text.visible_len(), 4 + 3 + 2);
    assert_eq!(text.plain(), "ab c\nd&e\nx\ny");
}

#[test]
fn line_breaks_are_breaks_paragraphs_or_bullets() {
    assert!(!RichText::parse("<p><b>one</b> line</p>").unwrap().has_line_breaks());
    assert!(RichText::parse("a<br/>b").unwrap().has_line_breaks());
    assert!(RichText::parse("<p>a</p><p>b</p>").unwrap().has_line_breaks());
    assert!(RichText::parse("<ul><li>a</li></ul>").unwrap().has_line_breaks());
}

#[test]
fn errors_name_the_character_position() {
    let cases: &[(&str, usize, &str)] = &[
        ("ab<u>c</u>", 2, "unsupported tag <u>"),
        ("ab<script>", 2, "unsupported tag <script>"),
        ("<b>bold", 0, "<b> is never closed"),
        ("<p><b>x</p></b>", 7, "</p> does not match <b> opened at character 3"),
        ("<b>x</strong>", 4, "</strong> does not match <b>"),
        ("x</i>", 1, "</i> closes nothing"),
        ("a < b", 2, "stray '<'"),
        ("a <", 2, "stray '<'"),
        ("a<!-- c -->", 1, "comments"),
        (r##"<color value="#12345">x</color>"##, 14, "invalid colour \"#12345\""),
        (r#"<color value="reddish">x</color>"#, 14, "invalid colour"),
        ("<color>x</color>", 0, "needs a value"),
        ("<color value=#fff>x</color>", 13, "must be quoted"),
        (r#"<p class="x">a</p>"#, 3, "unsupported attribute \"class\" on <p>"),
        (r#"<p style="color:red">a</p>"#, 3, "unsupported attribute \"style\""),
        ("<b", 0, "<b> is not closed by '>'"),
        ("<b/>", 0, "<b> cannot be self-closing"),
        ("a</br>", 1, "</br> is not allowed"),
        ("<li>x</li>", 0, "<li> must be directly inside <ul> or <ol>"),
        ("<ul>x</ul>", 4, "text inside <ul> must be in an <li>"),
        ("<ol><br/></ol>", 4, "<br/> inside <ol> must be in an <li>"),
        ("<ul><li><ul><li>x</li></ul></li></ul>", 8, "nested lists"),
        ("<p>a<p>b</p></p>", 4, "<p> cannot be inside another <p>"),
        ("<p><ul></ul></p>", 3, "<ul> cannot be inside <p>"),
        ("x &bogus; y", 2, "unknown or invalid entity &bogus;"),
        ("&#0;", 0, "invalid entity"),
        ("&#xD800;", 0, "invalid entity"),
        ("&#x110000;", 0, "invalid entity"),
        ("a\u{7}b", 1, "control character U+0007"),
        ("é<x>", 1, "unsupported tag <x>"),
    ];
    for (markup, position, message) in cases {
        let err = refused(markup);
        assert_eq!(err.position, *position, "{markup:?}: {err}");
        assert!(err.message.contains(message), "{markup:?}: {err}");
    }
}

#[test]
fn error_display_leads_with_the_position() {
    assert_eq!(refused("hi <u>").to_string(), "at character 3: unsupported tag <u>");
}

#[test]
fn color_values_may_be_css_names() {
    let text = parsed(r#"<color value="gold">a</color><color value="RebeccaPurple">b</color>"#);
    let colors: Vec<_> = text[0].runs.iter().map(|r| r.color).collect();
    assert_eq!(colors, [Some(Color::rgb(255, 215, 0)), Some(Color::rgb(102, 51, 153))]);
}
