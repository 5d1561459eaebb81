//! The arguments a model is still writing, as a JSON object so far: what
//! `ui/notifications/tool-input-partial` carries.
//!
//! The text is cut after its last complete value and its open containers are closed; a string
//! value being written is kept as far as it goes (a View can show a title as it is typed). A key
//! without its value, a number or `true` being written, and a half escape are left out until
//! they are complete, so a partial never holds a value the final arguments do not.

use serde_json::{Map, Value};

/// Partial arguments are worked out only while the text is at most this long (beyond, the View
/// waits for `tool-input`: re-reading megabytes per fragment would cost more than it shows).
pub const MAX_PARTIAL_BYTES: usize = 256 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// After `{` or `,` in an object: a key (or `}`).
    Key,
    /// After a key.
    Colon,
    /// After `:` or `[` or `,` in an array: a value.
    Value,
    /// After a value: `,` or the container's end.
    Next,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Open {
    object: bool,
    phase: Phase,
}

/// The object `text` (the start of a JSON object) holds so far; `None` when it does not start
/// an object or is too long.
pub fn complete(text: &str) -> Option<Map<String, Value>> {
    if text.len() > MAX_PARTIAL_BYTES {
        return None;
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Open> = Vec::new();
    // The longest prefix that closes into valid JSON, with what is open there.
    let mut safe: Option<(usize, Vec<Open>)> = None;
    let mut i = 0;
    let mut started = false;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'[' => {
                if started && !expects_value(&stack) {
                    return None;
                }
                started = true;
                stack.push(Open { object: b == b'{', phase: if b == b'{' { Phase::Key } else { Phase::Value } });
                i += 1;
                safe = Some((i, stack.clone()));
            }
            b'}' | b']' => {
                let top = stack.pop()?;
                if top.object != (b == b'}') {
                    return None;
                }
                i += 1;
                value_done(&mut stack);
                if stack.is_empty() {
                    return as_object(&text[..i]);
                }
                safe = Some((i, stack.clone()));
            }
            b'"' => {
                let key = stack.last().is_some_and(|o| o.object && o.phase == Phase::Key);
                if !key && !expects_value(&stack) {
                    return None;
                }
                i += 1;
                let mut closed = false;
                let mut last_whole = i; // the end of the last whole character or escape
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => {
                            let len = match bytes.get(i + 1) {
                                Some(b'u') => 6,
                                Some(_) => 2,
                                None => break,
                            };
                            if i + len > bytes.len() {
                                break;
                            }
                            i += len;
                            last_whole = i;
                        }
                        b'"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        _ => {
                            i += 1;
                            last_whole = i;
                        }
                    }
                }
                if !closed {
                    // A string value being written: kept as far as it goes.
                    if key {
                        break;
                    }
                    let cut = floor_char_boundary(text, last_whole);
                    let mut candidate = format!("{}\"", &text[..cut]);
                    let mut open = stack.clone();
                    value_done(&mut open);
                    close(&mut candidate, &open);
                    return as_object(&candidate).or_else(|| fallback(text, safe));
                }
                if key {
                    if let Some(top) = stack.last_mut() {
                        top.phase = Phase::Colon;
                    }
                } else {
                    value_done(&mut stack);
                    safe = Some((i, stack.clone()));
                }
            }
            b':' => {
                let top = stack.last_mut()?;
                if !(top.object && top.phase == Phase::Colon) {
                    return None;
                }
                top.phase = Phase::Value;
                i += 1;
            }
            b',' => {
                let top = stack.last_mut()?;
                if top.phase != Phase::Next {
                    return None;
                }
                top.phase = if top.object { Phase::Key } else { Phase::Value };
                i += 1;
            }
            _ => {
                // A number or literal: whole once a delimiter follows it.
                if !expects_value(&stack) {
                    return None;
                }
                let start = i;
                while i < bytes.len() && !matches!(bytes[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    i += 1;
                }
                if i == bytes.len() {
                    break;
                }
                serde_json::from_str::<Value>(&text[start..i]).ok()?;
                value_done(&mut stack);
                safe = Some((i, stack.clone()));
            }
        }
    }
    fallback(text, safe)
}

fn expects_value(stack: &[Open]) -> bool {
    stack.last().is_some_and(|o| o.phase == Phase::Value)
}

fn value_done(stack: &mut [Open]) {
    if let Some(top) = stack.last_mut() {
        top.phase = Phase::Next;
    }
}

fn close(text: &mut String, open: &[Open]) {
    for o in open.iter().rev() {
        text.push(if o.object { '}' } else { ']' });
    }
}

fn fallback(text: &str, safe: Option<(usize, Vec<Open>)>) -> Option<Map<String, Value>> {
    let (end, open) = safe?;
    let mut candidate = text[..end].to_owned();
    close(&mut candidate, &open);
    as_object(&candidate)
}

fn as_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(text: &str) -> Value {
        complete(text).map_or(Value::Null, Value::Object)
    }

    #[test]
    fn every_prefix_of_an_object_reads_as_what_it_holds_so_far() {
        assert_eq!(c(""), Value::Null);
        assert_eq!(c("{"), json!({}));
        assert_eq!(c(r#"{"ti"#), json!({}), "a key without its value is left out");
        assert_eq!(c(r#"{"title""#), json!({}));
        assert_eq!(c(r#"{"title": "#), json!({}));
        assert_eq!(c(r#"{"title": "Quarterly re"#), json!({"title": "Quarterly re"}), "a string being written is kept");
        assert_eq!(c(r#"{"title": "Q", "n": 4"#), json!({"title": "Q"}), "a number being written is left out");
        assert_eq!(c(r#"{"title": "Q", "n": 42,"#), json!({"title": "Q", "n": 42}));
        assert_eq!(c(r#"{"ok": tr"#), json!({}));
        assert_eq!(c(r#"{"rows": [1, 2, {"a": "x"#), json!({"rows": [1, 2, {"a": "x"}]}));
        assert_eq!(c(r#"{"rows": [[1], ["#), json!({"rows": [[1], []]}));
        assert_eq!(c(r#"{"a": {"b": {}}}"#), json!({"a": {"b": {}}}));
    }

    #[test]
    fn escapes_and_multibyte_characters_are_never_cut_in_half() {
        assert_eq!(c(r#"{"s": "a\"#), json!({"s": "a"}));
        assert_eq!(c(r#"{"s": "a\u00"#), json!({"s": "a"}));
        assert_eq!(c(r#"{"s": "a\u00e9b"#), json!({"s": "aéb"}));
        assert_eq!(c(r#"{"s": "a\n"#), json!({"s": "a\n"}));
        let full = r#"{"s": "naïve ✓"}"#;
        for end in 0..=full.len() {
            if full.is_char_boundary(end) {
                let got = c(&full[..end]);
                assert!(got.is_null() || got.is_object(), "{end}: {got}");
            }
        }
    }

    #[test]
    fn every_prefix_of_real_arguments_is_a_prefix_of_the_final_value() {
        let full = r#"{"city": "Lyon", "days": [1, 2, 3], "units": {"temp": "C", "wind": null}, "detail": true}"#;
        let final_value: Value = serde_json::from_str(full).unwrap();
        for end in 1..=full.len() {
            let got = c(&full[..end]);
            let Value::Object(map) = got else { panic!("{end}: {got}") };
            for (k, v) in &map {
                let want = &final_value[k];
                let ok = match (v, want) {
                    (Value::String(a), Value::String(b)) => b.starts_with(a.as_str()),
                    (Value::Array(a), Value::Array(b)) => a.len() <= b.len(),
                    (Value::Object(_), Value::Object(_)) => true,
                    (a, b) => a == b,
                };
                assert!(ok, "at {end}: {k} = {v}, final {want}");
            }
        }
        assert_eq!(c(full), final_value);
    }

    #[test]
    fn what_is_not_an_object_gives_nothing() {
        for bad in ["[1, 2", "\"str", "42", "{]", "{\"a\" 1", "{,", "}{", "{\"a\": 1 2"] {
            assert_eq!(c(bad), Value::Null, "{bad}");
        }
        assert_eq!(complete(&format!("{{\"a\": \"{}", "x".repeat(MAX_PARTIAL_BYTES))), None);
    }
}
