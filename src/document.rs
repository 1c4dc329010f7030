//! The JSON documents the core reads. It parses none itself: the runtime
//! that received the body parses it (`JSON.parse` in the wasm shell,
//! serde_json natively), and the core reads only the few members a decision
//! needs, one by one with [`Document::get`] (no serde deserializing: its
//! code for each shape read would cost the wasm kilobytes). A body handed
//! back to the caller (a node that settled, an allocation) is the runtime's
//! own document, never rebuilt. What the core writes as JSON (request
//! bodies, the tables, the shell's reports and events) it writes itself:
//! [`quote`], [`object`] and [`ObjectWriter`].

use std::fmt;

/// A parsed JSON document of the runtime's.
pub trait Document: Clone + fmt::Debug + 'static {
    /// JSON text -> a document; `None` when the text is not JSON.
    fn parse(text: &str) -> Option<Self>;

    /// What Python's `json` would make of it, by its type's name
    /// (`dict`, `list`, `str`, `int`, `float`, `bool`, `NoneType`), as
    /// python-ironicclient's messages name it.
    fn python_type(&self) -> &'static str;

    /// Python's truthiness: `null`, `false`, `0`, `""`, `[]` and `{}` are false.
    fn truthy(&self) -> bool;

    /// The string, when it is one.
    fn as_string(&self) -> Option<String>;

    /// The items, when it is a list.
    fn items(&self) -> Option<Vec<Self>>;

    /// An object's member (`null` included), when it is an object that
    /// has it; `None` when it has no such member or is no object (a list
    /// included). A missing member and a null one are different rows of
    /// the decision table, so `Some(null)` is never taken for `None`.
    fn get(&self, key: &str) -> Option<Self>;

    /// A whole number from 0 to 2^53, when it is one.
    fn as_u64(&self) -> Option<u64>;

    /// The number, when it is one.
    fn as_f64(&self) -> Option<f64>;

    /// The boolean, when it is one.
    fn as_bool(&self) -> Option<bool>;

    /// An object's keys in its order (none when it is no object).
    fn keys(&self) -> Vec<String>;

    /// The document as JSON text, for request bodies and for a field shown
    /// as `%s` shows it.
    fn to_json(&self) -> String;
}

/// `value` as a JSON string literal, for the request bodies the core writes.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    quote_into(&mut out, value);
    out
}

/// [`quote`], written at the end of `out` (a large document is written in
/// one buffer).
pub fn quote_into(out: &mut String, value: &str) {
    out.push('"');
    // Runs of plain characters are copied whole. What needs escaping is
    // ASCII, and no byte of a multi-byte character is: bytes are scanned.
    let mut plain = 0;
    for (i, &b) in value.as_bytes().iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // `get`, not indexing: the bounds are ASCII, and indexing would
        // bring the formatting of a panic's message into the wasm.
        out.push_str(value.get(plain..i).unwrap_or_default());
        plain = i + 1;
        if escaped.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        } else {
            out.push_str(escaped);
        }
    }
    out.push_str(value.get(plain..).unwrap_or_default());
    out.push('"');
}

/// `n` in decimal at the end of `out`, without the formatting machinery
/// (a large document has many).
pub fn number_into(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| d as char));
}

/// A JSON object's text from members already written as JSON.
pub fn object(members: &[(&str, String)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(key));
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}

/// A JSON object's text, written member by member: what the core hands a
/// caller as data (the tables; the wasm shell's reports, events and errors,
/// which it parses once with `JSON.parse`).
pub struct ObjectWriter(String);

impl Default for ObjectWriter {
    fn default() -> Self {
        ObjectWriter(String::from("{"))
    }
}

impl ObjectWriter {
    /// Starts member `key`: its value is written next, into the text.
    pub fn key(&mut self, key: &str) -> &mut String {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        quote_into(&mut self.0, key);
        self.0.push(':');
        &mut self.0
    }

    pub fn str(&mut self, key: &str, value: &str) -> &mut Self {
        quote_into(self.key(key), value);
        self
    }

    /// A string, or `null`.
    pub fn nullable(&mut self, key: &str, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.str(key, v),
            None => self.raw(key, "null"),
        }
    }

    pub fn number(&mut self, key: &str, n: u64) -> &mut Self {
        number_into(self.key(key), n);
        self
    }

    /// Milliseconds as seconds: `1.5` for 1500 (no float formatting, which
    /// would cost the wasm kilobytes).
    pub fn seconds(&mut self, key: &str, ms: u64) -> &mut Self {
        let out = self.key(key);
        number_into(out, ms / 1000);
        if ms % 1000 != 0 {
            // 1234 ms: "1" then the digits of 1234 after its leading 1, less trailing zeros.
            let mut fraction = String::new();
            number_into(&mut fraction, 1000 + ms % 1000);
            out.push('.');
            out.push_str(fraction.get(1..).unwrap_or_default().trim_end_matches('0'));
        }
        self
    }

    pub fn bool(&mut self, key: &str, b: bool) -> &mut Self {
        self.raw(key, if b { "true" } else { "false" })
    }

    /// A value already written as JSON.
    pub fn raw(&mut self, key: &str, json: &str) -> &mut Self {
        self.key(key).push_str(json);
        self
    }

    /// A list of strings.
    pub fn strings(&mut self, key: &str, list: &[&str]) -> &mut Self {
        let out = self.key(key);
        out.push('[');
        for (i, s) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            quote_into(out, s);
        }
        out.push(']');
        self
    }

    pub fn end(&mut self) -> String {
        let mut text = std::mem::take(&mut self.0);
        text.push('}');
        text
    }
}

/// Natively (tests, doctests, a Rust embedder) documents are serde_json's.
#[cfg(not(target_arch = "wasm32"))]
impl Document for serde_json::Value {
    fn parse(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    fn python_type(&self) -> &'static str {
        use serde_json::Value::*;
        match self {
            Null => "NoneType",
            Bool(_) => "bool",
            Number(n) if n.is_f64() => "float",
            Number(_) => "int",
            String(_) => "str",
            Array(_) => "list",
            Object(_) => "dict",
        }
    }

    fn truthy(&self) -> bool {
        use serde_json::Value::*;
        match self {
            Null => false,
            Bool(b) => *b,
            Number(n) => n.as_f64() != Some(0.0),
            String(s) => !s.is_empty(),
            Array(a) => !a.is_empty(),
            Object(o) => !o.is_empty(),
        }
    }

    fn as_string(&self) -> Option<String> {
        self.as_str().map(str::to_string)
    }

    fn items(&self) -> Option<Vec<Self>> {
        self.as_array().cloned()
    }

    fn get(&self, key: &str) -> Option<Self> {
        self.as_object()?.get(key).cloned()
    }

    fn as_u64(&self) -> Option<u64> {
        self.as_u64().filter(|&n| n <= 1 << 53)
    }

    fn as_f64(&self) -> Option<f64> {
        self.as_f64()
    }

    fn as_bool(&self) -> Option<bool> {
        self.as_bool()
    }

    fn keys(&self) -> Vec<String> {
        self.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
    }

    fn to_json(&self) -> String {
        self.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quote_escapes_what_json_must() {
        for text in ["a\"b\\c\n\t\u{1}é", "", "\"", "é\u{1f}", "\\\\ü\r", "plain 🙂 text", "\u{7f}\u{0}"] {
            assert_eq!(serde_json::from_str::<String>(&quote(text)).unwrap(), text);
        }
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 99, 1234567890, u64::MAX] {
            let mut out = String::from("x");
            number_into(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }

    #[test]
    fn an_object_is_written_member_by_member() {
        let mut o = ObjectWriter::default();
        o.str("a", "x\"y").nullable("b", None).number("c", 7).bool("d", true).strings("e", &["p", "q"]);
        for (key, ms) in [("s0", 0), ("s1", 1), ("s2", 1500), ("s3", 1230), ("s4", 60_007)] {
            o.seconds(key, ms);
        }
        let v: serde_json::Value = serde_json::from_str(&o.end()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "x\"y", "b": null, "c": 7, "d": true, "e": ["p", "q"],
                "s0": 0, "s1": 0.001, "s2": 1.5, "s3": 1.23, "s4": 60.007})
        );
        assert_eq!(ObjectWriter::default().end(), "{}");
    }

    #[test]
    fn object_is_json() {
        let text = object(&[("target", quote("active")), ("steps", "[1, 2]".into())]);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            json!({"target": "active", "steps": [1, 2]})
        );
    }

    #[test]
    fn truthiness_and_type_names_are_pythons() {
        let falsy = [json!(null), json!(false), json!(0), json!(-0.0), json!(""), json!([]), json!({})];
        assert!(falsy.iter().all(|v| !v.truthy()));
        let truthy = [json!(true), json!(1), json!(0.5), json!("x"), json!([0]), json!({"a": null})];
        assert!(truthy.iter().all(Document::truthy));
        let types: Vec<_> = [json!(null), json!(1), json!(1.5), json!("s"), json!([]), json!({}), json!(true)]
            .iter()
            .map(Document::python_type)
            .collect();
        assert_eq!(types, ["NoneType", "int", "float", "str", "list", "dict", "bool"]);
    }

    #[test]
    fn get_tells_missing_from_null() {
        let object = json!({"a": null, "c": 1});
        assert_eq!(Document::get(&object, "a"), Some(json!(null)));
        assert_eq!(Document::get(&object, "b"), None);
        assert_eq!(Document::get(&json!([1, 2]), "0"), None, "a list is no object");
        assert_eq!(Document::get(&json!("a"), "a"), None);
    }
}
