//! Captions: timed cues read from SubRip (SRT) and WebVTT files, and written
//! as the WebVTT sidecar of a render. Reading is strict where a mistake would show (a
//! time that does not parse, a cue that ends before it starts) and names the line, and
//! lenient where players are (a missing or wrong SRT counter, CRLF, a byte-order mark,
//! VTT cue settings, NOTE/STYLE/REGION blocks, markup inside the text, which is dropped).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Most cues one file may have.
pub const MAX_CUES: usize = 10_000;
/// Longest text of one cue, in characters.
pub const MAX_CUE_CHARS: usize = 1_000;

/// One caption: its text from `start` to `end` seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cue {
    /// When the cue appears, in seconds (≥ 0).
    pub start: f64,
    /// When it disappears, in seconds (after `start`).
    pub end: f64,
    /// Plain text (no markup); lines separated by `\n`.
    pub text: String,
    /// When each word of the text (split at white space) starts, in seconds, when known
    /// (a voice-over whose provider reports word times); otherwise a cue's time is shared
    /// among its words by their length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<f64>>,
}

impl Cue {
    /// A cue without word times.
    pub fn new(start: f64, end: f64, text: impl Into<String>) -> Cue {
        Cue { start, end, text: text.into(), words: None }
    }
}

/// Why a captions file was refused, and on which line (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptionError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for CaptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for CaptionError {}

fn error(line: usize, message: impl Into<String>) -> CaptionError {
    CaptionError { line, message: message.into() }
}

/// Reads a WebVTT file (it starts with `WEBVTT`) or else a SubRip one.
pub fn parse(text: &str) -> Result<Vec<Cue>, CaptionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.starts_with("WEBVTT") {
        parse_vtt(text)
    } else {
        parse_srt(text)
    }
}

/// The lines of `text` (CRLF or LF) numbered from 1, grouped into blocks separated by
/// blank lines.
fn blocks(text: &str) -> Vec<Vec<(usize, &str)>> {
    let mut blocks = vec![Vec::new()];
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            if blocks.last().is_some_and(|b| !b.is_empty()) {
                blocks.push(Vec::new());
            }
        } else if let Some(block) = blocks.last_mut() {
            block.push((i + 1, line));
        }
    }
    blocks.retain(|b| !b.is_empty());
    blocks
}

/// Reads SubRip: blocks of an optional counter, `HH:MM:SS,mmm --> HH:MM:SS,mmm` and the
/// text lines.
pub fn parse_srt(text: &str) -> Result<Vec<Cue>, CaptionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut cues = Vec::new();
    for block in blocks(text) {
        let mut lines = block.iter().copied().peekable();
        let Some(&(first_line, first)) = lines.peek() else { continue };
        if !first.contains("-->") {
            if first.trim().parse::<u64>().is_err() {
                return Err(error(first_line, format!("expected a cue number or a time range, got {first:?}")));
            }
            lines.next();
        }
        let Some((line, times)) = lines.next() else {
            return Err(error(first_line, "a cue number without a time range"));
        };
        let (start, end) = time_range(times, line, ',')?;
        push_cue(&mut cues, start, end, lines.map(|(_, l)| l), line)?;
    }
    Ok(cues)
}

/// Reads WebVTT: the `WEBVTT` header, then cues (an optional identifier, `[HH:]MM:SS.mmm
/// --> [HH:]MM:SS.mmm` with optional settings, the text), skipping NOTE, STYLE and REGION
/// blocks.
pub fn parse_vtt(text: &str) -> Result<Vec<Cue>, CaptionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let blocks = blocks(text);
    let Some((header, rest)) = blocks.split_first() else {
        return Err(error(1, "an empty file; a WebVTT file starts with WEBVTT"));
    };
    let (line, first) = header[0];
    if first != "WEBVTT" && !first.starts_with("WEBVTT ") && !first.starts_with("WEBVTT\t") {
        return Err(error(line, format!("a WebVTT file starts with WEBVTT, got {first:?}")));
    }
    if let Some((line, cue)) = header.iter().find(|(_, l)| l.contains("-->")) {
        return Err(error(*line, format!("a blank line must separate the header from the first cue {cue:?}")));
    }
    let mut cues = Vec::new();
    for block in rest {
        let (_, first) = block[0];
        if ["NOTE", "STYLE", "REGION"].iter().any(|k| first == *k || first.starts_with(&format!("{k} "))) {
            continue;
        }
        let mut lines = block.iter().copied();
        let (mut line, mut times) = lines.next().unwrap_or((0, ""));
        if !times.contains("-->") {
            // A cue identifier, then the timing line.
            let Some(next) = lines.next() else {
                return Err(error(line, format!("expected a time range like 00:01.000 --> 00:04.000, got {times:?}")));
            };
            (line, times) = next;
        }
        let (start, end) = time_range(times, line, '.')?;
        let text: Vec<&str> = lines.map(|(_, l)| l).collect();
        push_cue(&mut cues, start, end, text.iter().copied(), line)?;
        if let Some(cue) = cues.last_mut() {
            let words = cue.text.split_whitespace().count();
            cue.words = word_times(&text, start, end).filter(|times| times.len() == words);
        }
    }
    Ok(cues)
}

/// The start of each word of a WebVTT cue's `lines` when every word but the first follows
/// an inline timestamp (`<00:00:01.200>word`) within the cue, in order; else `None`.
fn word_times(lines: &[&str], start: f64, end: f64) -> Option<Vec<f64>> {
    let words = lines.iter().flat_map(|l| l.split_whitespace()).filter(|w| !plain(w).trim().is_empty());
    let mut times = Vec::new();
    for (k, word) in words.enumerate() {
        let stamp = word.strip_prefix('<').and_then(|w| w.split_once('>')).and_then(|(t, _)| timestamp(t, '.'));
        let time = match (k, stamp) {
            (0, _) => start,
            (_, Some(t)) if t >= *times.last()? && t <= end => t,
            _ => return None,
        };
        times.push(time);
    }
    (times.len() > 1).then_some(times)
}

/// Adds the cue `start`–`end` with `lines` of text (markup dropped), checking its order
/// and the limits.
fn push_cue<'a>(
    cues: &mut Vec<Cue>,
    start: f64,
    end: f64,
    lines: impl Iterator<Item = &'a str>,
    line: usize,
) -> Result<(), CaptionError> {
    if cues.len() >= MAX_CUES {
        return Err(error(line, format!("more than {MAX_CUES} cues")));
    }
    let text = lines.map(|l| plain(l).trim().to_string()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n");
    if text.chars().count() > MAX_CUE_CHARS {
        return Err(error(line, format!("a cue of more than {MAX_CUE_CHARS} characters")));
    }
    cues.push(Cue::new(start, end, text));
    Ok(())
}

/// `START --> END[ settings]`, both times in the file's format (`sep` before the
/// milliseconds), END after START.
fn time_range(line_text: &str, line: usize, sep: char) -> Result<(f64, f64), CaptionError> {
    let example = if sep == ',' { "00:00:01,000 --> 00:00:02,500" } else { "00:01.000 --> 00:02.500" };
    let Some((start, rest)) = line_text.split_once("-->") else {
        return Err(error(line, format!("expected a time range like {example}, got {line_text:?}")));
    };
    let end = rest.split_whitespace().next().unwrap_or("");
    let read = |t: &str, what: &str| {
        timestamp(t.trim(), sep).ok_or_else(|| {
            error(
                line,
                format!(
                    "the {what} time {:?} is not a time like {}",
                    t.trim(),
                    example.split(' ').next().unwrap_or("")
                ),
            )
        })
    };
    let (start, end) = (read(start, "start")?, read(end, "end")?);
    if end <= start {
        return Err(error(line, format!("the cue ends ({}) before it starts ({})", clock(end), clock(start))));
    }
    Ok((start, end))
}

/// `[HH:]MM:SS<sep>mmm` in seconds (SRT also accepts `.`, as many writers use it).
fn timestamp(text: &str, sep: char) -> Option<f64> {
    let (clock, millis) = text.rsplit_once(sep).or_else(|| text.rsplit_once('.'))?;
    if millis.len() != 3 || !millis.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let parts: Vec<&str> = clock.split(':').collect();
    let digits = |s: &str, most: usize| {
        (!s.is_empty() && s.len() <= most && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u64>().ok())?
    };
    let (h, m, s) = match parts.as_slice() {
        [h, m, s] => (digits(h, 4)?, digits(m, 2)?, digits(s, 2)?),
        [m, s] => (0, digits(m, 2)?, digits(s, 2)?),
        _ => return None,
    };
    if m > 59 || s > 59 {
        return None;
    }
    Some((h * 3600 + m * 60 + s) as f64 + millis.parse::<f64>().ok()? / 1000.0)
}

/// Seconds as `HH:MM:SS.mmm` (WebVTT's form).
pub fn clock(seconds: f64) -> String {
    let millis = (seconds.max(0.0) * 1000.0).round() as u64;
    format!("{:02}:{:02}:{:02}.{:03}", millis / 3_600_000, millis / 60_000 % 60, millis / 1000 % 60, millis % 1000)
}

/// The text of a cue line without markup (`<b>`, `<i>`, `<v Name>`, `<c.x>`, inline
/// timestamps) and with the entities WebVTT and SRT files use decoded.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        match rest[open..].find('>') {
            Some(close) => rest = &rest[open + close + 1..],
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\u{a0}").replace("&amp;", "&")
}

/// `cues` as a WebVTT file (the sidecar of a render with captions); known word times
/// become WebVTT's inline timestamps before each word but the first (karaoke-style
/// highlighting in players that support it).
pub fn to_vtt(cues: &[Cue]) -> String {
    let mut out = String::from("WEBVTT\n");
    for cue in cues {
        let escape = |text: &str| text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let mut starts = cue.words.iter().flatten().enumerate();
        let lines: Vec<String> = cue
            .text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let words = line.split_whitespace().map(|word| match starts.next() {
                    Some((k, start)) if k > 0 => format!("<{}>{}", clock(*start), escape(word)),
                    _ => escape(word),
                });
                words.collect::<Vec<_>>().join(" ")
            })
            .collect();
        out.push_str(&format!("\n{} --> {}\n{}\n", clock(cue.start), clock(cue.end), lines.join("\n")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cue(start: f64, end: f64, text: &str) -> Cue {
        Cue::new(start, end, text)
    }

    #[test]
    fn srt_reads_counters_times_and_lines() {
        let srt = "\u{feff}1\r\n00:00:01,000 --> 00:00:02,500\r\nHello <i>there</i>\r\nsecond line\r\n\r\n\
                   2\n00:00:03,250 --> 00:01:04,000\nTom &amp; Jerry\n\n\n";
        assert_eq!(parse(srt).unwrap(), [cue(1.0, 2.5, "Hello there\nsecond line"), cue(3.25, 64.0, "Tom & Jerry")]);
        // No counter at all, and a dot before the milliseconds, as some writers do.
        assert_eq!(parse_srt("00:00:00.500 --> 00:00:01.000\nHi").unwrap(), [cue(0.5, 1.0, "Hi")]);
    }

    #[test]
    fn vtt_reads_headers_ids_settings_and_skips_notes() {
        let vtt = "WEBVTT - a title\nKind: captions\n\nNOTE a comment\nover two lines\n\nSTYLE\n::cue { color: red }\n\n\
                   intro\n00:01.000 --> 00:04.000 align:start line:0\n<v Roger>Hello</v> <00:02.000><c.big>world</c>\n\n\
                   01:00:00.000 --> 01:00:01.500\nlate";
        assert_eq!(parse(vtt).unwrap(), [cue(1.0, 4.0, "Hello world"), cue(3600.0, 3601.5, "late")]);
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("1\n00:00:01,000 -> 00:00:02,000\nHi", "line 2: expected a time range like 00:00:01,000 --> 00:00:02,500, got \"00:00:01,000 -> 00:00:02,000\""),
            ("1\n00:00:01,000 --> 00:00:02\nHi", "line 2: the end time \"00:00:02\" is not a time like 00:00:01,000"),
            ("1\n00:00:01,000 --> 00:00:02,000\nA\n\nhello\n00:00:03,000 --> 00:00:04,000\nB", "line 5: expected a cue number or a time range, got \"hello\""),
            ("1\n00:00:05,000 --> 00:00:04,000\nHi", "line 2: the cue ends (00:00:04.000) before it starts (00:00:05.000)"),
            ("1\n00:61:00,000 --> 00:62:00,000\nHi", "line 2: the start time \"00:61:00,000\" is not a time like 00:00:01,000"),
            ("WEBVTT\n00:01.000 --> 00:02.000\nHi", "line 2: a blank line must separate the header from the first cue \"00:01.000 --> 00:02.000\""),
            ("WEBVTT\n\nid only", "line 3: expected a time range like 00:01.000 --> 00:04.000, got \"id only\""),
            ("WEBVTT\n\n00:01.000 --> 00:00.500\nHi", "line 3: the cue ends (00:00:00.500) before it starts (00:00:01.000)"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), expected, "{text:?}");
        }
        assert_eq!(parse_vtt("").unwrap_err().to_string(), "line 1: an empty file; a WebVTT file starts with WEBVTT");
        assert!(parse_vtt("WEBVTTX\n\n00:01.000 --> 00:02.000\nHi").is_err());
    }

    #[test]
    fn the_sidecar_is_webvtt_that_reads_back_the_same() {
        let timed = Cue { words: Some(vec![4.0, 4.5, 5.25]), ..cue(4.0, 6.0, "Word by\nword") };
        let cues = [cue(0.0, 1.25, "Fish & <chips>"), cue(61.5, 3725.004, "two\nlines"), timed];
        let vtt = to_vtt(&cues);
        assert_eq!(
            vtt,
            "WEBVTT\n\n00:00:00.000 --> 00:00:01.250\nFish &amp; &lt;chips&gt;\n\n00:01:01.500 --> 01:02:05.004\ntwo\nlines\n\n\
             00:00:04.000 --> 00:00:06.000\nWord <00:00:04.500>by\n<00:00:05.250>word\n"
        );
        assert_eq!(parse(&vtt).unwrap(), cues);
        // Timestamps on some words only, or out of order, say nothing of the words.
        for text in ["a <00:00:04.500>b c", "a <00:00:05.000>b <00:00:04.500>c", "a <00:00:07.000>b"] {
            let vtt = format!("WEBVTT\n\n00:04.000 --> 00:06.000\n{text}");
            assert_eq!(parse(&vtt).unwrap()[0].words, None, "{text}");
        }
    }
}
