//! Splitting a long text into pieces a provider takes in one request: at sentence ends
//! (`.`, `!`, `?`, `…` and their CJK forms, followed by a space or the end), packed
//! greedily up to the limit; a sentence longer than the limit is cut at spaces, a word
//! longer than the limit at the limit.

/// The pieces of `text`, each at most `limit` characters, in order. Joined with single
/// spaces they give `text` with its whitespace runs collapsed (and a space after each CJK
/// sentence end, which CJK text writes without one).
pub fn split_text(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut pieces = Vec::new();
    let mut current = String::new();
    for sentence in sentences(text) {
        for part in fit(&sentence, limit) {
            let joined = current.chars().count() + usize::from(!current.is_empty()) + part.chars().count();
            if !current.is_empty() && joined > limit {
                pieces.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&part);
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Most pieces [`speech_pieces`] makes of a long text.
pub const MAX_SPEECH_PIECES: usize = 50;

/// The pieces a text is synthesised in: one per sentence (each within `limit`
/// characters), so that the synthesis times every sentence, the captions' cues; a text
/// of more than [`MAX_SPEECH_PIECES`] sentences is packed into about that many pieces of
/// whole sentences.
pub fn speech_pieces(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let pieces: Vec<String> = sentences(text).iter().flat_map(|s| fit(s, limit)).collect();
    if pieces.len() <= MAX_SPEECH_PIECES {
        return pieces;
    }
    let total: usize = pieces.iter().map(|p| p.chars().count() + 1).sum();
    split_text(text, (2 * total).div_ceil(MAX_SPEECH_PIECES).min(limit))
}

/// The sentences of `text`, whitespace collapsed.
fn sentences(text: &str) -> Vec<String> {
    let text = text.replace('。', "。 ").replace('！', "！ ").replace('？', "？ ");
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for word in words {
        current.push(word);
        let end = word.trim_end_matches(['"', '\'', ')', '”', '’', '»']);
        if end.ends_with(['.', '!', '?', '…', '。', '！', '？']) {
            out.push(current.join(" "));
            current.clear();
        }
    }
    if !current.is_empty() {
        out.push(current.join(" "));
    }
    out
}

/// A sentence as parts of at most `limit` characters: cut at spaces, words longer than
/// the limit cut at the limit.
fn fit(sentence: &str, limit: usize) -> Vec<String> {
    if sentence.chars().count() <= limit {
        return vec![sentence.to_owned()];
    }
    let mut parts = Vec::new();
    let mut current = String::new();
    for word in sentence.split(' ') {
        let chars: Vec<char> = word.chars().collect();
        for chunk in chars.chunks(limit) {
            let chunk: String = chunk.iter().collect();
            if !current.is_empty() && current.chars().count() + 1 + chunk.chars().count() > limit {
                parts.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&chunk);
        }
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}
