//! How keys and values cross the command line: the input rule for key and
//! value arguments and the display rule for output.
//!
//! Input (key arguments: `KEY`, `--from`, `--to`, `--prefix`):
//! - default: an argument starting with `0x` is hex (`0x00ff` is the two
//!   bytes 00 FF, `0x` alone is the empty key); anything else is taken as
//!   its UTF-8 bytes;
//! - `--hex`: every key and value argument is hex, with or without `0x`;
//! - `--text`: every argument is taken as its UTF-8 bytes, even one that
//!   starts with `0x`.
//!
//! Values (`put KEY VALUE`) are text unless `--hex` is given: a value such as
//! `0x10` is stored as those four characters.
//!
//! Output: bytes that are valid UTF-8, hold no control character (tab,
//! newline, NUL, ...) and do not start with `0x` are shown as text; anything
//! else is shown as `0x` followed by lowercase hex. With `--hex`, everything
//! is shown as hex. Either way, a key as shown is a valid key argument that
//! names the same bytes.

/// How key and value arguments are read; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// `0x...` is hex, the rest is text.
    Auto,
    /// Everything is hex.
    Hex,
    /// Everything is text.
    Text,
}

/// Decodes a key argument under `mode`.
pub fn parse_key(arg: &str, mode: InputMode) -> Result<Vec<u8>, String> {
    match mode {
        InputMode::Text => Ok(arg.as_bytes().to_vec()),
        InputMode::Hex => from_hex(arg.strip_prefix("0x").unwrap_or(arg))
            .map_err(|e| format!("{arg:?} is not valid hex ({e})")),
        InputMode::Auto => match arg.strip_prefix("0x") {
            Some(digits) => from_hex(digits).map_err(|e| {
                format!(
                    "{arg:?} starts with 0x but is not valid hex ({e}); \
                     pass --text to use it as text"
                )
            }),
            None => Ok(arg.as_bytes().to_vec()),
        },
    }
}

/// Decodes a value argument: hex under [`InputMode::Hex`], text otherwise.
pub fn parse_value(arg: &str, mode: InputMode) -> Result<Vec<u8>, String> {
    match mode {
        InputMode::Hex => parse_key(arg, InputMode::Hex),
        InputMode::Auto | InputMode::Text => Ok(arg.as_bytes().to_vec()),
    }
}

/// Shows bytes as text where that is unambiguous, else as `0x` hex; always
/// as hex with `hex`.
pub fn show(bytes: &[u8], hex: bool) -> String {
    if !hex {
        if let Ok(s) = std::str::from_utf8(bytes) {
            if !s.starts_with("0x") && !s.chars().any(char::is_control) {
                return s.to_string();
            }
        }
    }
    format!("0x{}", to_hex(bytes))
}

/// Lowercase hex, two digits per byte.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// Decodes hex digits (either case, no prefix).
pub fn from_hex(digits: &str) -> Result<Vec<u8>, String> {
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits: {}", digits.len()));
    }
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    digits
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| match (nibble(pair[0]), nibble(pair[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(format!(
                "{:?} is not a hex digit pair",
                String::from_utf8_lossy(pair)
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_keys_parse_back_to_the_same_bytes() {
        let samples: [&[u8]; 8] = [
            b"",
            b"plain",
            b"0x41",
            b"0x",
            b"tab\there",
            b"\x00\xff",
            "caf\u{e9}".as_bytes(),
            b"line\n",
        ];
        for s in samples {
            for hex in [false, true] {
                let shown = show(s, hex);
                assert_eq!(parse_key(&shown, InputMode::Auto).unwrap(), s, "{shown}");
            }
        }
    }

    #[test]
    fn text_that_looks_like_hex_is_shown_as_hex() {
        assert_eq!(show(b"0xab", false), "0x30786162");
        assert_eq!(show(b"abc", false), "abc");
        assert_eq!(show(b"abc", true), "0x616263");
        assert_eq!(show(b"", false), "");
        assert_eq!(show(b"", true), "0x");
    }

    #[test]
    fn auto_mode_rejects_bad_hex_and_text_mode_keeps_it() {
        assert!(parse_key("0xzz", InputMode::Auto).is_err());
        assert!(parse_key("0xabc", InputMode::Auto).is_err());
        assert_eq!(parse_key("0xzz", InputMode::Text).unwrap(), b"0xzz");
        assert_eq!(parse_key("00FF", InputMode::Hex).unwrap(), [0, 0xff]);
        assert_eq!(parse_key("0x00ff", InputMode::Hex).unwrap(), [0, 0xff]);
        assert_eq!(parse_value("0x10", InputMode::Auto).unwrap(), b"0x10");
    }
}
