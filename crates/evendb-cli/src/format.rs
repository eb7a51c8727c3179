//! The exchange formats of `load` and `dump`.
//!
//! - **JSON lines** (`.jsonl`, `.ndjson`, `.json`): one object per line with
//!   exactly one of `key` / `key_hex` and one of `value` / `value_hex`.
//!   `key` and `value` are JSON strings taken as their UTF-8 bytes;
//!   `key_hex` and `value_hex` are hex strings (with or without `0x`) for any
//!   bytes. `dump` writes `key`/`value` when the bytes are valid UTF-8 and
//!   the `_hex` field otherwise (always `_hex` with `--hex`), so a dump loads
//!   back to exactly the same bytes.
//! - **CSV** (`.csv`): two fields per record, key then value, RFC 4180
//!   quoting (a field with commas, quotes or newlines is quoted).
//! - **TSV** (`.tsv`, `.tab`): `key<TAB>value` per line, no quoting, so
//!   neither may hold a tab or newline.
//!
//! CSV and TSV fields are taken as bytes; with `--hex` both are hex. Blank
//! lines are skipped in every format.

use crate::bytes;
use std::io::{BufRead, Read};
use std::path::Path;

/// An input or output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// JSON lines: {"key": ..., "value": ...} or key_hex / value_hex.
    Jsonl,
    /// Comma-separated key,value with RFC 4180 quoting.
    Csv,
    /// Tab-separated key<TAB>value, no quoting.
    Tsv,
}

impl Format {
    /// The format a file name's extension implies, if any.
    pub fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" | "json" => Some(Format::Jsonl),
            "csv" => Some(Format::Csv),
            "tsv" | "tab" => Some(Format::Tsv),
            _ => None,
        }
    }
}

/// One key-value pair read from an input, with the line it starts on.
#[derive(Debug)]
pub struct Record {
    pub line: u64,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// A malformed input line.
#[derive(Debug)]
pub struct BadLine {
    pub line: u64,
    pub message: String,
}

/// Reads records from an input in one format.
pub struct Records<'a> {
    inner: Inner<'a>,
    hex: bool,
}

enum Inner<'a> {
    Jsonl {
        input: Box<dyn BufRead + 'a>,
        line: u64,
        position: u64,
        buf: Vec<u8>,
    },
    Delimited {
        csv: bool,
        input: csv::Reader<Box<dyn BufRead + 'a>>,
        record: csv::ByteRecord,
        skip_header: bool,
    },
}

impl<'a> Records<'a> {
    /// Reads `format` from `input`. `hex`: CSV/TSV fields are hex.
    /// `header`: skip the first CSV/TSV record.
    pub fn new(input: Box<dyn BufRead + 'a>, format: Format, hex: bool, header: bool) -> Self {
        let inner = match format {
            Format::Jsonl => Inner::Jsonl {
                input,
                line: 0,
                position: 0,
                buf: Vec::new(),
            },
            Format::Csv | Format::Tsv => Inner::Delimited {
                csv: format == Format::Csv,
                input: csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .delimiter(if format == Format::Csv { b',' } else { b'\t' })
                    .quoting(format == Format::Csv)
                    .from_reader(input),
                record: csv::ByteRecord::new(),
                skip_header: header,
            },
        };
        Records { inner, hex }
    }

    /// Bytes of input consumed so far.
    pub fn position(&self) -> u64 {
        match &self.inner {
            Inner::Jsonl { position, .. } => *position,
            Inner::Delimited { input, .. } => input.position().byte(),
        }
    }

    /// The next record, a malformed line, or `None` at the end.
    pub fn next_record(&mut self) -> Option<Result<Record, BadLine>> {
        let r = match &mut self.inner {
            Inner::Jsonl {
                input,
                line,
                position,
                buf,
            } => loop {
                buf.clear();
                *line += 1;
                match input.read_until(b'\n', buf) {
                    Ok(0) => return None,
                    Ok(n) => *position += n as u64,
                    Err(e) => break Err(bad(*line, format!("cannot read: {e}"))),
                }
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                break decode_json(buf)
                    .map_err(|m| bad(*line, m))
                    .map(|(key, value)| Record {
                        line: *line,
                        key,
                        value,
                    });
            },
            Inner::Delimited {
                csv,
                input,
                record,
                skip_header,
            } => loop {
                let line = input.position().line();
                match input.read_byte_record(record) {
                    Ok(false) => return None,
                    Ok(true) => {}
                    Err(e) => break Err(bad(line, format!("cannot read: {e}"))),
                }
                let line = record.position().map_or(line, csv::Position::line);
                if std::mem::take(skip_header) {
                    continue;
                }
                if record.len() != 2 {
                    break Err(bad(
                        line,
                        format!(
                            "expected 2 fields (key, value), found {}; {}",
                            record.len(),
                            if *csv {
                                "quote a field that holds a comma: \"a,b\""
                            } else {
                                "TSV has no quoting: use JSON lines, or --hex, \
                                 for keys or values with tabs"
                            }
                        ),
                    ));
                }
                let field = |i: usize, what: &str| -> Result<Vec<u8>, BadLine> {
                    let raw = &record[i];
                    if !self.hex {
                        return Ok(raw.to_vec());
                    }
                    let text = std::str::from_utf8(raw)
                        .map_err(|_| bad(line, format!("{what} is not hex (not even ASCII)")))?;
                    bytes::parse_key(text, bytes::InputMode::Hex)
                        .map_err(|e| bad(line, format!("{what}: {e}")))
                };
                break field(0, "key").and_then(|key| {
                    Ok(Record {
                        line,
                        key,
                        value: field(1, "value")?,
                    })
                });
            },
        };
        Some(r.and_then(check_limits))
    }
}

fn bad(line: u64, message: String) -> BadLine {
    BadLine { line, message }
}

fn check_limits(r: Record) -> Result<Record, BadLine> {
    if r.key.len() > evendb::MAX_KEY_SIZE {
        return Err(bad(
            r.line,
            format!(
                "key of {} bytes is over the limit of {} bytes",
                r.key.len(),
                evendb::MAX_KEY_SIZE
            ),
        ));
    }
    if r.value.len() > evendb::MAX_VALUE_SIZE {
        return Err(bad(
            r.line,
            format!(
                "value of {} bytes is over the limit of {} bytes",
                r.value.len(),
                evendb::MAX_VALUE_SIZE
            ),
        ));
    }
    Ok(r)
}

/// Decodes one JSON line into a key and a value.
fn decode_json(line: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let parsed: serde_json::Value = serde_json::from_slice(line).map_err(|e| {
        let full = e.to_string();
        let reason = full.split(" at line ").next().unwrap_or(&full);
        format!("not valid JSON at column {}: {reason}", e.column())
    })?;
    let serde_json::Value::Object(fields) = parsed else {
        return Err(r#"expected an object like {"key": "...", "value": "..."}"#.into());
    };
    let (mut key, mut value) = (None, None);
    for (name, field) in fields {
        let (slot, hex) = match name.as_str() {
            "key" => (&mut key, false),
            "key_hex" => (&mut key, true),
            "value" => (&mut value, false),
            "value_hex" => (&mut value, true),
            other => {
                return Err(format!(
                    "unknown field {other:?}; expected key or key_hex, and value or value_hex"
                ))
            }
        };
        let serde_json::Value::String(text) = field else {
            return Err(format!("field {name:?} must be a JSON string"));
        };
        if slot.is_some() {
            return Err(format!("{name:?} given twice (as text and as hex)"));
        }
        *slot = Some(if hex {
            bytes::parse_key(&text, bytes::InputMode::Hex).map_err(|e| format!("{name}: {e}"))?
        } else {
            text.into_bytes()
        });
    }
    match (key, value) {
        (Some(k), Some(v)) => Ok((k, v)),
        (None, _) => Err("no key (expected \"key\" or \"key_hex\")".into()),
        (_, None) => Err("no value (expected \"value\" or \"value_hex\")".into()),
    }
}

/// Writes one pair as a JSON line (see the module docs).
pub fn write_json_line(
    out: &mut impl std::io::Write,
    key: &[u8],
    value: &[u8],
    hex: bool,
) -> std::io::Result<()> {
    fn field(
        out: &mut impl std::io::Write,
        name: &str,
        b: &[u8],
        hex: bool,
    ) -> std::io::Result<()> {
        match std::str::from_utf8(b) {
            Ok(text) if !hex => {
                write!(out, "\"{name}\":")?;
                serde_json::to_writer(&mut *out, text).map_err(std::io::Error::from)
            }
            _ => write!(out, "\"{name}_hex\":\"{}\"", bytes::to_hex(b)),
        }
    }
    out.write_all(b"{")?;
    field(out, "key", key, hex)?;
    out.write_all(b",")?;
    field(out, "value", value, hex)?;
    out.write_all(b"}\n")
}

/// Reads all of standard input (which cannot be read twice).
pub fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut all = Vec::new();
    std::io::stdin().lock().read_to_end(&mut all)?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    fn read_all(text: &[u8], format: Format, hex: bool) -> Result<Pairs, BadLine> {
        let mut r = Records::new(Box::new(text), format, hex, false);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record() {
            let rec = rec?;
            out.push((rec.key, rec.value));
        }
        Ok(out)
    }

    #[test]
    fn json_lines_written_read_back_exactly() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"a".to_vec(), b"".to_vec()),
            (vec![0, 0xff, b'\n'], b"x\"y\\z\n".to_vec()),
            (b"".to_vec(), vec![0x80]),
            ("caf\u{e9}".into(), b"\t".to_vec()),
        ];
        for hex in [false, true] {
            let mut out = Vec::new();
            for (k, v) in &pairs {
                write_json_line(&mut out, k, v, hex).unwrap();
            }
            assert_eq!(read_all(&out, Format::Jsonl, false).unwrap(), pairs);
        }
    }

    #[test]
    fn malformed_json_line_names_its_line() {
        let input = b"{\"key\":\"a\",\"value\":\"1\"}\n\n{\"key\":\"b\",\"value\":2}\n";
        let err = read_all(input, Format::Jsonl, false).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(
            err.message.contains("must be a JSON string"),
            "{}",
            err.message
        );
        let err = read_all(b"{\"key\":\"a\"}\n", Format::Jsonl, false).unwrap_err();
        assert!(err.message.contains("no value"), "{}", err.message);
        let err = read_all(b"{\"key\":\"a\",\"vale\":\"b\"}\n", Format::Jsonl, false).unwrap_err();
        assert!(err.message.contains("unknown field"), "{}", err.message);
    }

    #[test]
    fn csv_quotes_and_tsv_tabs() {
        let csv = b"k1,v1\n\"k,2\",\"multi\nline \"\"v\"\"\"\nk3,\n";
        assert_eq!(
            read_all(csv, Format::Csv, false).unwrap(),
            vec![
                (b"k1".to_vec(), b"v1".to_vec()),
                (b"k,2".to_vec(), b"multi\nline \"v\"".to_vec()),
                (b"k3".to_vec(), b"".to_vec()),
            ]
        );
        let tsv = b"a\t\"1\"\r\nb\t2\n";
        assert_eq!(
            read_all(tsv, Format::Tsv, false).unwrap(),
            vec![
                (b"a".to_vec(), b"\"1\"".to_vec()),
                (b"b".to_vec(), b"2".to_vec())
            ]
        );
        let err = read_all(b"a\t1\nb\t2\t3\n", Format::Tsv, false).unwrap_err();
        assert_eq!(err.line, 2);
        let hex = b"0x00ff,6869\n";
        assert_eq!(
            read_all(hex, Format::Csv, true).unwrap(),
            vec![(vec![0, 0xff], b"hi".to_vec())]
        );
        assert_eq!(read_all(b"zz,00\n", Format::Csv, true).unwrap_err().line, 1);
    }
}
