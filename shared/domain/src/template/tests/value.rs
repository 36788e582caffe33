//! `check_text_value`: a job's text value against its variable's rules.

use super::*;

const HEADLINE: &str = "9b2f4c6a-1d3e-4f50-8a7b-6c5d4e3f2a10"; // one line, 1..=40
const POINTS: &str = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"; // multiline, 0..=200

#[test]
fn a_value_within_the_rules_is_accepted() {
    let t = example();
    assert_eq!(t.check_text_value(HEADLINE, "<p>Spring <b>sale</b></p>"), Ok(()));
    assert_eq!(t.check_text_value(HEADLINE, "plain text"), Ok(()));
    assert_eq!(t.check_text_value(&HEADLINE.to_uppercase(), "x"), Ok(()));
    assert_eq!(t.check_text_value(POINTS, "<p>one</p><p>two<br/>three</p><ul><li>four</li></ul>"), Ok(()));
}

#[test]
fn length_counts_visible_characters_only() {
    let t = example();
    let forty = format!("<p><b>{}</b></p>", "x".repeat(40));
    assert_eq!(t.check_text_value(HEADLINE, &forty), Ok(()));
    let err = t.check_text_value(HEADLINE, &format!("<i>{}</i>", "x".repeat(41))).unwrap_err();
    assert_eq!(err, "variable \"Headline\": value has 41 visible characters; at most 40 allowed");
    let err = t.check_text_value(HEADLINE, "<p><b></b></p>").unwrap_err();
    assert_eq!(err, "variable \"Headline\": value has 0 visible characters; at least 1 required");
}

#[test]
fn line_breaks_are_refused_when_not_multiline() {
    let t = example();
    for value in ["one<br/>two", "<ul><li>one</li></ul>", "<p>one</p><p>two</p>"] {
        let err = t.check_text_value(HEADLINE, value).unwrap_err();
        assert!(err.starts_with("variable \"Headline\": value must be a single line"), "{value}: {err}");
    }
}

#[test]
fn bad_markup_is_refused_with_its_position() {
    let err = example().check_text_value(POINTS, "ok <u>no</u>").unwrap_err();
    assert!(err.starts_with("variable \"Selling points\": value is not valid markup at character 3: "), "{err}");
}

#[test]
fn only_text_variables_of_the_template_are_checked() {
    let t = example();
    let err = t.check_text_value("0e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a", "x").unwrap_err();
    assert_eq!(err, "variable \"Background video\" is a video variable, not a text variable");
    let err = t.check_text_value("not-a-uuid", "x").unwrap_err();
    assert_eq!(err, "\"not-a-uuid\" is not a variable of this template");
    // The title layer has a variable; the shape backdrop has none.
    let t = read(|v| {
        layer(v, 0, 2).as_object_mut().unwrap().remove("variable");
    })
    .unwrap();
    assert!(t.check_text_value(HEADLINE, "x").is_err());
}
