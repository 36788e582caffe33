//! Random and pathological markup: the parser never panics, agrees with the
//! reference parser (the quadratic one it replaced) on every input, stops at the depth
//! limit, and takes time linear in its input.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::super::RichText;
use super::reference;

/// Tags, fragments of tags, entities and text the random markup is made of: valid pieces
/// and malformed ones.
#[rustfmt::skip]
const PIECES: &[&str] = &[
    "<b>", "</b>", "<i>", "</i>", "<em>", "</em>", "<strong>", "</strong>", r##"<color value="#f00">"##,
    "<color value='gold'>", "</color>", "</COLOR>", "<br/>", "<br>", "<br />", "</br>", "<p>", "</p>", "<ul>", "</ul>",
    "<ol>", "</ol>", "<li>", "</li>", "<B >", "</b >", "<b/>", "<p/>", "<", "</", "<b", "<color>", "<color value=#f00>",
    r#"<color value=""#, r#"<color value="nope">"#, r#"<p class="x">"#, "<u>", "<!-- c -->", "<?x?>", "&", "&amp;",
    "&lt;", "&#x1F600;", "&#233;", "&#0;", "&#xD800;", "&bogus;", "&#;", "&hellip;", "AT&T", "a", "word", " ", "  ",
    "\n", "\t", "\r\n", "é", "日本", "😀", "\u{a0}", "\u{200b}", "\u{7}", ">", "'", "\"", "=",
];

/// Elements the nested markup is made of, as opening and closing markup.
const ELEMENTS: &[(&str, &str)] = &[
    ("<b>", "</b>"),
    ("<strong>", "</strong>"),
    ("<i>", "</i>"),
    ("<EM>", "</em>"),
    (r##"<color value="#00ff00">"##, "</color>"),
    ("<color value='rebeccapurple'>", "</COLOR>"),
    ("<p>", "</p>"),
    ("<ul><li>", "</li></ul>"),
    ("<ol>", "</ol>"),
    ("<li>", "</li>"),
];

fn pick<'a>(rng: &mut StdRng, from: &[&'a str]) -> &'a str {
    from[rng.gen_range(0..from.len())]
}

/// Any character, mostly from the first planes.
fn random_char(rng: &mut StdRng) -> char {
    let limit = if rng.gen_bool(0.8) { 0x800 } else { 0x11_0000 };
    char::from_u32(rng.gen_range(0..limit)).unwrap_or('\u{fffd}')
}

/// A soup of random pieces: mostly invalid markup.
fn soup(rng: &mut StdRng) -> String {
    let mut out = String::new();
    for _ in 0..rng.gen_range(0..40) {
        if rng.gen_bool(0.1) {
            out.push(random_char(rng));
        } else {
            out.push_str(pick(rng, PIECES));
        }
    }
    out
}

/// Balanced elements around text: valid unless the nesting breaks a block rule, and then
/// often broken by a random piece put in at a random place.
fn nested(rng: &mut StdRng) -> String {
    fn elements(rng: &mut StdRng, out: &mut String, depth: u32) {
        for _ in 0..rng.gen_range(0..4) {
            match rng.gen_range(0..10) {
                0..=3 => out.push_str(pick(rng, &["Hello", " world ", "é日😀", "a&amp;b", "&lt;3", "x", "  \n "])),
                4 => out.push_str(pick(rng, &["<br/>", "<br>", " ", "\n"])),
                _ if depth < 6 => {
                    let (open, close) = ELEMENTS[rng.gen_range(0..ELEMENTS.len())];
                    out.push_str(open);
                    elements(rng, out, depth + 1);
                    out.push_str(close);
                }
                _ => {}
            }
        }
    }
    let mut out = String::new();
    elements(rng, &mut out, 0);
    if rng.gen_bool(0.3) {
        let boundaries: Vec<usize> = (0..=out.len()).filter(|i| out.is_char_boundary(*i)).collect();
        let at = boundaries[rng.gen_range(0..boundaries.len())];
        out.insert_str(at, pick(rng, PIECES));
    }
    out
}

#[test]
fn random_markup_parses_as_the_reference_parser_does_and_never_panics() {
    let mut rng = StdRng::seed_from_u64(16);
    let mut accepted = 0;
    for i in 0..20_000 {
        let markup = if i % 2 == 0 { soup(&mut rng) } else { nested(&mut rng) };
        let parsed = RichText::parse(&markup);
        assert_eq!(parsed, reference::parse(&markup), "{markup:?}");
        accepted += usize::from(parsed.is_ok());
        // With a depth limit: the same, or refused for the depth.
        let max_depth = rng.gen_range(0..8);
        match RichText::parse_with_max_depth(&markup, max_depth) {
            Err(e) if e.message.contains("nested too deep") => {}
            limited => assert_eq!(limited, parsed, "{markup:?} at most {max_depth} deep"),
        }
    }
    // Enough valid markup for the comparison to cover what the parser builds.
    assert!(accepted > 2_000, "only {accepted} accepted");
}

#[test]
fn the_depth_limit_stops_at_the_first_element_too_many() {
    let deep = |n: usize| format!("{}x{}", "<i>".repeat(n), "</i>".repeat(n));
    assert!(RichText::parse_with_max_depth(&deep(4), 4).is_ok());
    let err = RichText::parse_with_max_depth(&deep(5), 4).unwrap_err();
    assert_eq!(
        (err.position, err.message.as_str()),
        (12, "<i> is nested too deep: at most 4 elements may be open at once")
    );
    // A self-closed `<br/>` opens nothing.
    assert!(RichText::parse_with_max_depth("<b>a<br/>b</b>", 1).is_ok());
    // A hostile value is refused as soon as it is too deep, however long.
    let hostile = format!("{}{}", "<b>".repeat(300_000), "x".repeat(1_000_000));
    let err = RichText::parse_with_max_depth(&hostile, 32).unwrap_err();
    assert_eq!(err.position, 32 * 3);
}

/// The fastest of a few parses of each of `markups`, taken in turns so that a busy
/// machine slows them alike.
fn parse_times<const N: usize>(markups: [&str; N]) -> [Duration; N] {
    let mut fastest = [Duration::MAX; N];
    for _ in 0..5 {
        for (markup, fastest) in markups.iter().zip(&mut fastest) {
            let start = Instant::now();
            let _ = std::hint::black_box(RichText::parse(std::hint::black_box(markup)));
            *fastest = (*fastest).min(start.elapsed());
        }
    }
    fastest
}

#[test]
fn parse_time_does_not_grow_with_the_depth() {
    // `prefix`, `open` n times, `text` n times, `close` n times, `suffix`: the old parser
    // walked the n open elements for every character (or every `<p>`), so it took about
    // n times as long as for the same elements one after the other.
    let patterns = [
        ("", "<b>", "x ", "</b>", ""),
        ("", "<i>", "<p>x</p>", "</i>", ""),
        ("<ul><li>", "<em>", "a&amp;", "</em>", "</li></ul>"),
        ("", r##"<color value="#f00">"##, "y\u{e9}&#x1F600; ", "</color>", ""),
    ];
    for (prefix, open, text, close, suffix) in patterns {
        for n in [4_000, 32_000] {
            let deep = format!("{prefix}{}{}{}{suffix}", open.repeat(n), text.repeat(n), close.repeat(n));
            let flat = format!("{prefix}{}{suffix}", format!("{open}{text}{close}").repeat(n));
            assert_eq!(deep.len(), flat.len());
            assert_eq!(RichText::parse(&deep).unwrap().visible_len(), RichText::parse(&flat).unwrap().visible_len());
            let [t_deep, t_flat] = parse_times([&deep, &flat]);
            // Linear: about as long (a deep stack costs a little more memory).
            let ratio = t_deep.as_secs_f64() / t_flat.as_secs_f64().max(1e-6);
            assert!(ratio < 4.0, "{open}{text}{close} {n} deep: {t_deep:?}, one after the other: {t_flat:?}");
        }
    }
}
