//! The non-strict JSON that rt-app reads, rewritten in place into strict JSON.
//!
//! rt-app parses its files with json-c's default tokener (`json_object_from_file()`, no
//! `JSON_TOKENER_STRICT`). Besides `//` and `/* */` comments (blanked by
//! [`super::json::blank_comments`]), that tokener accepts (json-c `json_tokener.c`, 0.13 to
//! 0.18):
//! - a comma before a closing `}` or `]` (`json_tokener_state_*_after_sep`);
//! - strings and keys in single quotes (`tok->quote_char`);
//! - `true`, `false` and `null` in any case (`strncasecmp`);
//! - numbers with leading zeros (`007`) or a bare trailing point (`1.`);
//! - text after the top-level value, which it leaves unread.
//!
//! Each of these is rewritten here without moving a byte, so that every line and column the
//! parser reports is the file's: a trailing comma becomes a space, single quotes become double
//! quotes, literals are lower-cased, leading zeros become spaces before the number, a bare
//! point a space. What is left over after the top-level value is reported by the caller.
//! Still refused, as not worth the byte shuffling: `NaN`, `Infinity` (no rt-app key takes a
//! float), a number starting with a point (`.5`), a single-quoted string holding a double
//! quote or a backslash, raw control characters in strings.
//!
//! An unquoted `__NAME__` (a template placeholder, as LISA's and rt-app's own templates use
//! for `__DURATION__`) is invalid JSON to both parsers; [`find_placeholder`] names it.

/// The first unexpanded template placeholder outside strings (`__DURATION__`, `__LOGDIR__`):
/// its name and byte offset.
pub(crate) fn find_placeholder(src: &str) -> Option<(String, usize)> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == b'"' || c == b'\'' {
            quote = Some(c);
            i += 1;
            continue;
        }
        if c == b'_' && b.get(i + 1) == Some(&b'_') {
            let end = (i..b.len())
                .find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_'))
                .unwrap_or(b.len());
            let word = &src[i..end];
            if word.len() > 4 && word.ends_with("__") {
                return Some((word.to_owned(), i));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    None
}

/// Rewrites json-c's non-strict forms in `src` (comments already blanked) into strict JSON of
/// the same length (see the module documentation).
pub(crate) fn strict(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => i = skip_string(b, i, b'"'),
            b'\'' => {
                let end = skip_string(b, i, b'\'');
                let inner = &b[i + 1..end.saturating_sub(1).max(i + 1)];
                let closed = end <= b.len() && end > i + 1 && b[end - 1] == b'\'';
                if closed && !inner.iter().any(|&x| x == b'"' || x == b'\\') {
                    out[i] = b'"';
                    out[end - 1] = b'"';
                }
                i = end;
            }
            b',' => {
                let next = (i + 1..b.len()).find(|&j| !b[j].is_ascii_whitespace());
                if next.is_some_and(|j| b[j] == b'}' || b[j] == b']') {
                    out[i] = b' ';
                }
                i += 1;
            }
            b't' | b'T' | b'f' | b'F' | b'n' | b'N' => {
                let end = word_end(b, i);
                let word = src[i..end].to_ascii_lowercase();
                if matches!(word.as_str(), "true" | "false" | "null") {
                    out[i..end].copy_from_slice(word.as_bytes());
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = (i + 1..b.len())
                    .find(|&j| !matches!(b[j], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
                    .unwrap_or(b.len());
                number(&b[i..end], &mut out[i..end]);
                i = end;
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were rewritten, by ASCII bytes: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The offset just past the string opening at `at` with quote `q` (or the end of input).
fn skip_string(b: &[u8], at: usize, q: u8) -> usize {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            x if x == q => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn word_end(b: &[u8], at: usize) -> usize {
    (at..b.len())
        .find(|&j| !b[j].is_ascii_alphanumeric())
        .unwrap_or(b.len())
}

/// Rewrites one number token `n` into `out` (same length): leading zeros of the integer part
/// become spaces before the sign, a point with no digit after it becomes a space.
fn number(n: &[u8], out: &mut [u8]) {
    let neg = n.first() == Some(&b'-');
    let digits = usize::from(neg);
    let int_end = (digits..n.len())
        .find(|&j| !n[j].is_ascii_digit())
        .unwrap_or(n.len());
    if int_end == digits {
        return;
    }
    // Keep one digit: "000" -> "  0".
    let zeros = n[digits..int_end]
        .iter()
        .take_while(|&&x| x == b'0')
        .count()
        .min(int_end - digits - 1);
    if zeros > 0 {
        // "-007" -> "  -7": the zeros move to the front as spaces, the sign after them.
        let mut v: Vec<u8> = vec![b' '; zeros];
        if neg {
            v.push(b'-');
        }
        v.extend_from_slice(&n[digits + zeros..int_end]);
        out[..int_end].copy_from_slice(&v);
    }
    if int_end < n.len()
        && n[int_end] == b'.'
        && !n.get(int_end + 1).is_some_and(u8::is_ascii_digit)
    {
        out[int_end] = b' ';
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str, expected: &str) {
        let got = strict(src);
        assert_eq!(got, expected);
        assert_eq!(got.len(), src.len(), "offsets kept");
    }

    #[test]
    fn trailing_commas_become_spaces() {
        check(r#"{"a": [1, 2,], "b": 3,}"#, r#"{"a": [1, 2 ], "b": 3 }"#);
        check("{\"a\": 1,\n   }", "{\"a\": 1 \n   }");
        // Commas inside strings are data.
        check(r#"{"a,}": ",]"}"#, r#"{"a,}": ",]"}"#);
    }

    #[test]
    fn single_quotes_literals_and_numbers() {
        check("{'run': 'x'}", r#"{"run": "x"}"#);
        // A single-quoted string holding a double quote is left for the parser to refuse.
        check(r#"{'a"b': 1}"#, r#"{'a"b': 1}"#);
        check("[True, FALSE, Null]", "[true, false, null]");
        check(
            "[007, -01, 0, 0.5, 1., 2.5e3, 10]",
            "[  7,  -1, 0, 0.5, 1 , 2.5e3, 10]",
        );
        // A key spelled like a literal is a string: untouched.
        check(r#"{"True": 1}"#, r#"{"True": 1}"#);
    }

    #[test]
    fn placeholders_are_found_outside_strings() {
        assert_eq!(
            find_placeholder("{\"global\": {\"duration\": __DURATION__}}"),
            Some(("__DURATION__".to_owned(), 24))
        );
        assert_eq!(find_placeholder(r#"{"logdir": "__LOGDIR__"}"#), None);
        assert_eq!(find_placeholder(r#"{"a": 1}"#), None);
    }
}
