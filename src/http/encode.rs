//! The encodings requests need: base64 for Basic auth (a checkpoint's
//! packed UUIDs use it too), percent-encoding of path segments and query
//! values, and decoding a query parameter.

/// `Authorization: Basic ...` for HTTP Basic auth (UTF-8, then base64).
pub fn basic_auth(username: &str, password: &str) -> String {
    let mut out = String::from("Basic ");
    base64_into(&mut out, format!("{username}:{password}").as_bytes());
    // Padded to whole groups of four.
    while out.len() % 4 != "Basic ".len() % 4 {
        out.push('=');
    }
    out
}

/// The base64 alphabet.
pub const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in base64, unpadded, at the end of `out`.
pub fn base64_into(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(BASE64[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
}

/// A query value, percent-encoded like a path segment.
pub fn query_escape(value: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
    out
}

/// A query parameter's value, percent-decoded.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1.split('#').next()?;
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    percent_decode(raw).filter(|v| !v.is_empty())
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_is_base64_of_utf8() {
        assert_eq!(basic_auth("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(basic_auth("a", "b"), "Basic YTpi");
        assert_eq!(basic_auth("ab", "c"), "Basic YWI6Yw==");
        assert_eq!(basic_auth("ab", "cd"), "Basic YWI6Y2Q=");
        assert_eq!(basic_auth("é", ""), "Basic w6k6");
    }
}
