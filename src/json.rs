//! The JSON the core reads and writes: a small value model and a strict
//! parser. Numbers keep their text (the decisions never do arithmetic), so
//! no float parsing or formatting is compiled in: serde_json's share of the
//! wasm was a tenth of it.

use std::fmt::{self, Write};

/// Deeper nesting than this is refused instead of recursing on (a server
/// sending `[[[[...` must not overflow the stack).
const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Bool(bool),
    /// The number as written (already checked against JSON's grammar).
    Number(String),
    String(String),
    Array(Vec<Value>),
    /// Members in document order.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// Parses one JSON document; `Err` says where it went wrong.
    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = Parser { text: text.as_bytes(), at: 0 };
        let value = p.value(0)?;
        p.skip_space();
        if p.at != p.text.len() {
            return Err(p.error("trailing characters"));
        }
        Ok(value)
    }

    /// A member of an object; the last one wins, as in `JSON.parse`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Python's truthiness of the value.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            // Zero whatever its spelling (`0`, `-0.0`, `0e5`): every digit
            // of the mantissa is 0.
            Value::Number(n) => {
                n.split(['e', 'E']).next().is_some_and(|m| m.bytes().any(|b| (b'1'..=b'9').contains(&b)))
            }
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }

    /// The type's name in messages.
    /// What Python's `json` makes of this value, by its type's name, as
    /// python-ironicclient's messages name it.
    pub fn python_type(&self) -> &'static str {
        match self {
            Value::Null => "NoneType",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.contains(['.', 'e', 'E']) => "float",
            Value::Number(_) => "int",
            Value::String(_) => "str",
            Value::Array(_) => "list",
            Value::Object(_) => "dict",
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

/// Compact JSON text.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Number(n) => f.write_str(n),
            Value::String(s) => write_string(f, s),
            Value::Array(items) => {
                f.write_char('[')?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_char(']')
            }
            Value::Object(members) => {
                f.write_char('{')?;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write_string(f, k)?;
                    write!(f, ":{v}")?;
                }
                f.write_char('}')
            }
        }
    }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.at)
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += found as usize;
        found
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.skip_space();
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.skip_space();
                if self.eat(b'}') {
                    return Ok(Value::Object(members));
                }
                loop {
                    self.skip_space();
                    if self.peek() != Some(b'"') {
                        return Err(self.error("expected a member name"));
                    }
                    let key = self.string()?;
                    self.skip_space();
                    if !self.eat(b':') {
                        return Err(self.error("expected ':'"));
                    }
                    members.push((key, self.value(depth + 1)?));
                    self.skip_space();
                    if self.eat(b'}') {
                        return Ok(Value::Object(members));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected ',' or '}'"));
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.eat(b']') {
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_space();
                    if self.eat(b']') {
                        return Ok(Value::Array(items));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected ',' or ']'"));
                    }
                }
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => {
                for (word, value) in [("null", Value::Null), ("true", Value::Bool(true)), ("false", Value::Bool(false))]
                {
                    if self.text[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(value);
                    }
                }
                Err(self.error(if self.at == self.text.len() { "unexpected end" } else { "unexpected character" }))
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let from = p.at;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.at += 1;
            }
            p.at - from
        };
        let leading_zero = self.peek() == Some(b'0');
        let whole = digits(self);
        if whole == 0 || (leading_zero && whole > 1) {
            return Err(self.error("invalid number"));
        }
        if self.eat(b'.') && digits(self) == 0 {
            return Err(self.error("invalid number"));
        }
        if self.eat(b'e') || self.eat(b'E') {
            let _ = self.eat(b'+') || self.eat(b'-');
            if digits(self) == 0 {
                return Err(self.error("invalid number"));
            }
        }
        // Only ASCII was consumed, so this slice is valid UTF-8.
        let text = std::str::from_utf8(&self.text[start..self.at]).map_err(|_| self.error("invalid number"))?;
        Ok(Value::Number(text.to_string()))
    }

    fn string(&mut self) -> Result<String, String> {
        self.at += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            let Some(byte) = self.peek() else { return Err(self.error("unterminated string")) };
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).map_err(|_| self.error("invalid UTF-8 in string")),
                b'\\' => {
                    let Some(escape) = self.peek() else { return Err(self.error("unterminated string")) };
                    self.at += 1;
                    let c = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(self.error("invalid escape")),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return Err(self.error("control character in string")),
                b => out.push(b),
            }
        }
    }

    /// `\uXXXX`, joining surrogate pairs; a lone surrogate becomes U+FFFD,
    /// as lenient as `JSON.parse` without producing invalid UTF-8.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) && self.text[self.at..].starts_with(b"\\u") {
            let save = self.at;
            self.at += 2;
            let second = self.hex4()?;
            if (0xDC00..0xE000).contains(&second) {
                let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return Ok(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            self.at = save;
        }
        Ok(char::from_u32(first).unwrap_or('\u{FFFD}'))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let hex = self.text.get(self.at..self.at + 4).ok_or_else(|| self.error("invalid \\u escape"))?;
        let mut n = 0;
        for &b in hex {
            let d = (b as char).to_digit(16).ok_or_else(|| self.error("invalid \\u escape"))?;
            n = n * 16 + d;
        }
        self.at += 4;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value {
        Value::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_documents_and_prints_them_back() {
        let text = r#"{"a":[1,-2.5,3e-7,true,false,null],"b":{"c":"d\"\\\n\u00e9"},"e":[],"f":{}}"#;
        let v = parse(text);
        assert_eq!(v.to_string(), r#"{"a":[1,-2.5,3e-7,true,false,null],"b":{"c":"d\"\\\né"},"e":[],"f":{}}"#);
        assert_eq!(v.get("b").and_then(|b| b.get("c")).and_then(Value::as_str), Some("d\"\\\né"));
        assert_eq!(parse(" \n[ 1 , {\"x\" : null} ]\t").to_string(), "[1,{\"x\":null}]");
        assert_eq!(parse("\"\\ud83d\\ude00\"").as_str(), Some("😀"));
        assert_eq!(parse("\"\\ud83d x\"").as_str(), Some("\u{FFFD} x"), "a lone surrogate is replaced");
        assert_eq!(parse("\"\\u0001\"").to_string(), "\"\\u0001\"");
        assert_eq!(parse(r#"{"k":1,"k":2}"#).get("k"), Some(&Value::Number("2".into())), "last wins");
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in [
            "",
            " ",
            "{",
            "[1,",
            "{\"a\"}",
            "{\"a\":}",
            "{a:1}",
            "[1 2]",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\nb\"",
            "[1]x",
            "<html>",
            "{\"a\":1,}",
            "[,]",
            "NaN",
        ] {
            assert!(Value::parse(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(Value::parse("{\"provision_state\": \"act").unwrap_err(), "unterminated string at byte 24");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert_eq!(Value::parse(&deep).unwrap_err(), "nesting too deep at byte 129");
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(Value::parse(&ok).is_ok());
    }

    #[test]
    fn truthiness_is_pythons() {
        for falsy in ["null", "false", "0", "-0", "0.0", "0e9", "\"\"", "[]", "{}"] {
            assert!(!parse(falsy).truthy(), "{falsy}");
        }
        for truthy in ["true", "1", "0.5", "-3", "1e-9", "\"x\"", "[0]", "{\"a\":0}"] {
            assert!(parse(truthy).truthy(), "{truthy}");
        }
    }
}
