//! JSON as rt-app files are written: objects keep every key in file order, repeated keys
//! included, and every key and value knows where it is in the file.
//!
//! serde_json's `Deserializer` drives a custom visitor that collects objects as ordered
//! `(key, value)` lists. Positions come from a byte-counting reader under serde_json's
//! `IoRead`, which pulls one byte at a time: when the visitor sees a key or is about to parse
//! a value, the count says where the parser stands. Comments (`//` and `/* */`, which json-c
//! accepts and rt-app files contain) are blanked out first, keeping every offset.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::rc::Rc;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value with its position (byte offset of its first character).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spanned {
    pub(crate) node: Node,
    pub(crate) at: usize,
}

/// An object key with its position (byte offset of its opening quote).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Key {
    pub(crate) name: String,
    pub(crate) at: usize,
}

/// A JSON value; objects keep duplicate keys in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Spanned>),
    Object(Vec<(Key, Spanned)>),
}

impl Node {
    /// The JSON type name, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Int(_) | Node::UInt(_) => "an integer",
            Node::Float(_) => "a number with a fraction",
            Node::Str(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }
}

struct CountingReader<'a> {
    data: &'a [u8],
    pos: Rc<Cell<usize>>,
}

impl io::Read for CountingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let p = self.pos.get();
        if p >= self.data.len() || buf.is_empty() {
            return Ok(0);
        }
        // One byte per call: the count then says exactly how far the parser has read.
        buf[0] = self.data[p];
        self.pos.set(p + 1);
        Ok(1)
    }
}

#[derive(Clone)]
struct Ctx<'a> {
    src: &'a [u8],
    pos: Rc<Cell<usize>>,
}

impl Ctx<'_> {
    /// Where the value about to be parsed starts. After an object's `:` the parser has
    /// consumed nothing of the value: skip blanks from the reader's position. In an array the
    /// parser has already peeked (read) the element's first byte: it is just behind.
    fn value_start(&self) -> usize {
        let mut p = self.pos.get();
        if p > 0
            && !matches!(
                self.src[p - 1],
                b':' | b',' | b'[' | b' ' | b'\t' | b'\n' | b'\r'
            )
        {
            return p - 1;
        }
        while p < self.src.len() && matches!(self.src[p], b' ' | b'\t' | b'\n' | b'\r') {
            p += 1;
        }
        p
    }

    /// The opening quote of the key the parser just read (it stands after the closing quote).
    fn key_start(&self) -> usize {
        let end = self.pos.get().saturating_sub(1);
        let mut p = end;
        while p > 0 {
            p -= 1;
            if self.src[p] == b'"' {
                let mut bs = 0;
                let mut q = p;
                while q > 0 && self.src[q - 1] == b'\\' {
                    bs += 1;
                    q -= 1;
                }
                if bs % 2 == 0 {
                    return p;
                }
            }
        }
        0
    }
}

struct ValueSeed<'a>(Ctx<'a>);

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Spanned;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Spanned, D::Error> {
        let at = self.0.value_start();
        let node = d.deserialize_any(NodeVisitor(self.0))?;
        Ok(Spanned { node, at })
    }
}

struct NodeVisitor<'a>(Ctx<'a>);

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Node::Int(i),
            Err(_) => Node::UInt(v),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element_seed(ValueSeed(self.0.clone()))? {
            v.push(x);
        }
        Ok(Node::Array(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut v = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            let at = self.0.key_start();
            let value = map.next_value_seed(ValueSeed(self.0.clone()))?;
            v.push((Key { name, at }, value));
        }
        Ok(Node::Object(v))
    }
}

/// Replaces `//` and `/* */` comments outside strings by spaces (newlines kept), so that
/// offsets, lines and columns are unchanged.
pub(crate) fn blank_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                out[i] = b' ';
                out[i + 1] = b' ';
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] != b'\n' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
                if i < b.len() {
                    out[i] = b' ';
                    out[i + 1] = b' ';
                    i += 2;
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes outside strings were replaced by spaces, and multi-byte UTF-8 sequences
    // are never split (their bytes are all >= 0x80, never '/', '*' or '\n'), so the result is
    // still UTF-8; an unterminated comment swallowing a multi-byte character is blanked whole.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A syntax error: message and 1-based line and column.
pub(crate) struct SyntaxError {
    pub(crate) message: String,
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// An object's entries in file order.
pub(crate) type Object = Vec<(Key, Spanned)>;

/// An object as json-c holds it (`json_object_object_add()`, json_object.c): a key given
/// again replaces the earlier value, in the earlier key's place, so the object has each key
/// once. Keys for which `keep_repeats` is true stay as given, every occurrence in file order
/// (rt-app's events, which `workgen` renames apart before rt-app reads them). Returns the
/// object and, for each replacement, the earlier key and the later one.
pub(crate) fn json_c_object(
    obj: &[(Key, Spanned)],
    keep_repeats: impl Fn(&str) -> bool,
) -> (Object, Vec<(Key, Key)>) {
    let mut out: Vec<(Key, Spanned)> = Vec::with_capacity(obj.len());
    let mut replaced = Vec::new();
    for (k, v) in obj {
        if !keep_repeats(&k.name)
            && let Some(slot) = out.iter_mut().find(|(e, _)| e.name == k.name)
        {
            replaced.push((slot.0.clone(), k.clone()));
            slot.1 = v.clone();
            continue;
        }
        out.push((k.clone(), v.clone()));
    }
    (out, replaced)
}

/// Parses `src` (comments already blanked, json-c's non-strict forms made strict) into a
/// spanned tree, and the offset of the first non-blank byte after the top-level value, if
/// any: json-c leaves such text unread, so the caller warns rather than fails.
pub(crate) fn parse(src: &str) -> Result<(Spanned, Option<usize>), SyntaxError> {
    let pos = Rc::new(Cell::new(0));
    let reader = CountingReader {
        data: src.as_bytes(),
        pos: Rc::clone(&pos),
    };
    let ctx = Ctx {
        src: src.as_bytes(),
        pos: Rc::clone(&pos),
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let err = |e: serde_json::Error| SyntaxError {
        message: e.to_string(),
        line: e.line(),
        column: e.column(),
    };
    let v = ValueSeed(ctx).deserialize(&mut de).map_err(err)?;
    let end = pos.get().min(src.len());
    let rest = src.as_bytes()[end..]
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .map(|i| end + i);
    Ok((v, rest))
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(src: &str, at: usize) -> (usize, usize) {
    let at = at.min(src.len());
    let before = &src.as_bytes()[..at];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}
