//! The Redis serialization protocol: reading requests, writing replies.
//!
//! Requests are arrays of bulk strings (`*<n>\r\n` then `$<len>\r\n<bytes>\r\n`
//! per argument), or inline commands (a line of words, as typed into telnet).
//! [`Parser`] reads them from whatever bytes have arrived and resumes where
//! it stopped when more come. It allocates an argument only once all of its
//! bytes are there, reserves room for at most [`PREALLOCATED_ARGS`]
//! arguments up front whatever count is declared, and refuses declared
//! sizes past its [`Limits`] at once, before the bytes arrive: a client
//! cannot make the server reserve memory it has not sent.
//!
//! Replies go through [`Out`], which writes RESP2 or RESP3 (`HELLO 3`)
//! straight into the connection's output buffer.

use std::fmt;

/// What a request may declare; the server passes the engine's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Arguments per command (the command name included).
    pub max_args: usize,
    /// Bytes of one argument.
    pub max_arg: usize,
    /// Bytes of all arguments of one command together.
    pub max_request: usize,
    /// Bytes of an inline command's line.
    pub max_inline: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_args: 1 << 20,
            max_arg: evendb::MAX_VALUE_SIZE,
            max_request: evendb::MAX_BATCH_SIZE + (1 << 20),
            max_inline: 64 << 10,
        }
    }
}

/// How many arguments a parser reserves room for before they arrive.
pub const PREALLOCATED_ARGS: usize = 16;

/// A request the protocol cannot read: the server answers
/// `-ERR Protocol error: ...` and closes the connection, as Redis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

/// One command: its arguments, the name first.
pub type Command = Vec<Vec<u8>>;

/// Where the parser is within a command.
#[derive(Debug, Default)]
enum State {
    /// Between commands.
    #[default]
    Idle,
    /// Inside an array: `remaining` arguments to go, `bytes` read so far.
    Array {
        args: Command,
        remaining: usize,
        bytes: usize,
    },
}

/// A resumable request reader; see the module docs.
#[derive(Debug, Default)]
pub struct Parser {
    limits: Limits,
    state: State,
}

impl Parser {
    /// A parser that enforces `limits`.
    pub fn new(limits: Limits) -> Self {
        Parser {
            limits,
            state: State::Idle,
        }
    }

    /// Reads from `buf` (the bytes that have arrived and are not yet
    /// consumed). Returns how many bytes it consumed, which the caller
    /// drops from the front of its buffer, and the command they completed,
    /// if any. Call again while it consumes bytes or returns a command.
    ///
    /// # Errors
    /// A malformed request or one past the limits; the connection cannot go
    /// on, since where the next command starts is unknown.
    pub fn next(&mut self, buf: &[u8]) -> Result<(usize, Option<Command>), ProtocolError> {
        let mut used = 0;
        loop {
            let rest = &buf[used..];
            match &mut self.state {
                State::Idle => {
                    let Some(&first) = rest.first() else {
                        return Ok((used, None));
                    };
                    if first != b'*' {
                        return self.inline(rest).map(|(n, c)| (used + n, c));
                    }
                    let Some((n, line)) = line(rest, 32)? else {
                        return Ok((used, None));
                    };
                    let count = number(&line[1..], "multibulk length")?;
                    used += n;
                    if count <= 0 {
                        // `*0` and `*-1` are empty: Redis skips them.
                        continue;
                    }
                    let count = count as usize;
                    if count > self.limits.max_args {
                        return Err(ProtocolError(format!(
                            "invalid multibulk length {count} (at most {})",
                            self.limits.max_args
                        )));
                    }
                    self.state = State::Array {
                        args: Vec::with_capacity(count.min(PREALLOCATED_ARGS)),
                        remaining: count,
                        bytes: 0,
                    };
                }
                State::Array {
                    args,
                    remaining,
                    bytes,
                } => {
                    let Some((n, header)) = line(rest, 32)? else {
                        return Ok((used, None));
                    };
                    if header.first() != Some(&b'$') {
                        return Err(ProtocolError(format!(
                            "expected '$', got '{}'",
                            header.first().map_or('?', |&b| b as char)
                        )));
                    }
                    let len = number(&header[1..], "bulk length")?;
                    if len < 0 || len as usize > self.limits.max_arg {
                        return Err(ProtocolError(format!(
                            "invalid bulk length {len} (at most {})",
                            self.limits.max_arg
                        )));
                    }
                    let len = len as usize;
                    if *bytes + len > self.limits.max_request {
                        return Err(ProtocolError(format!(
                            "request larger than {} bytes",
                            self.limits.max_request
                        )));
                    }
                    // The header is consumed only with its data: until all
                    // of it is here, nothing is allocated for it.
                    let Some(data) = rest.get(n..n + len + 2) else {
                        return Ok((used, None));
                    };
                    if &data[len..] != b"\r\n" {
                        return Err(ProtocolError("bulk string not ended by CRLF".into()));
                    }
                    args.push(data[..len].to_vec());
                    *bytes += len;
                    *remaining -= 1;
                    used += n + len + 2;
                    if *remaining == 0 {
                        if let State::Array { args, .. } = std::mem::take(&mut self.state) {
                            return Ok((used, Some(args)));
                        }
                    }
                }
            }
        }
    }

    /// An inline command: words separated by spaces, up to a newline.
    fn inline(&self, rest: &[u8]) -> Result<(usize, Option<Command>), ProtocolError> {
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            if rest.len() > self.limits.max_inline {
                return Err(ProtocolError("too big inline request".into()));
            }
            return Ok((0, None));
        };
        if end > self.limits.max_inline {
            return Err(ProtocolError("too big inline request".into()));
        }
        let text = rest[..end].strip_suffix(b"\r").unwrap_or(&rest[..end]);
        let words: Command = text
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|w| !w.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        // An empty line is skipped, as Redis does.
        Ok((end + 1, (!words.is_empty()).then_some(words)))
    }
}

/// The first line of `buf` without its CRLF, and its length with it; `None`
/// until the line is complete. A line longer than `max` is an error (headers
/// are short).
fn line(buf: &[u8], max: usize) -> Result<Option<(usize, &[u8])>, ProtocolError> {
    match buf.iter().take(max + 2).position(|&b| b == b'\r') {
        Some(i) => match buf.get(i + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some((i + 2, &buf[..i]))),
            Some(_) => Err(ProtocolError("header not ended by CRLF".into())),
        },
        None if buf.len() > max + 1 => Err(ProtocolError("header line too long".into())),
        None => Ok(None),
    }
}

/// A header's decimal number.
fn number(digits: &[u8], what: &str) -> Result<i64, ProtocolError> {
    std::str::from_utf8(digits)
        .ok()
        .filter(|s| !s.is_empty() && !s.starts_with('+'))
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| ProtocolError(format!("invalid {what}")))
}

/// The protocol version a connection speaks (`HELLO 2` / `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// RESP2, the default.
    Resp2,
    /// RESP3: typed nulls, maps and verbatim strings.
    Resp3,
}

/// Replies written straight into a connection's output buffer.
#[derive(Debug)]
pub struct Out {
    /// The encoded replies.
    pub buf: Vec<u8>,
    /// The protocol they are written in.
    pub proto: Proto,
}

impl Out {
    /// An empty buffer writing `proto`.
    pub fn new(proto: Proto) -> Self {
        Out {
            buf: Vec::new(),
            proto,
        }
    }

    fn header(&mut self, tag: u8, n: usize) {
        self.buf.push(tag);
        self.buf.extend_from_slice(n.to_string().as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+text`.
    pub fn simple(&mut self, text: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `-text`: text starts with the error's code (`ERR`, `NOAUTH`, ...).
    /// Line breaks in it become spaces (they would end the reply).
    pub fn error(&mut self, text: &str) {
        self.buf.push(b'-');
        let clean = text.replace(['\r', '\n'], " ");
        self.buf.extend_from_slice(clean.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `:n`.
    pub fn int(&mut self, n: i64) {
        self.buf.push(b':');
        self.buf.extend_from_slice(n.to_string().as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string.
    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len());
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    pub fn nil(&mut self) {
        match self.proto {
            Proto::Resp2 => self.buf.extend_from_slice(b"$-1\r\n"),
            Proto::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// A bulk string or a missing value.
    pub fn maybe_bulk(&mut self, data: Option<&[u8]>) {
        match data {
            Some(d) => self.bulk(d),
            None => self.nil(),
        }
    }

    /// An array of `n` replies, written next.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n);
    }

    /// A map of `n` key-value pairs, written next (key, value, key, ...):
    /// `%n` in RESP3, an array of `2n` in RESP2.
    pub fn map(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.header(b'*', 2 * n),
            Proto::Resp3 => self.header(b'%', n),
        }
    }

    /// Text for people (`INFO`): a verbatim string in RESP3, bulk in RESP2.
    pub fn text(&mut self, text: &str) {
        match self.proto {
            Proto::Resp2 => self.bulk(text.as_bytes()),
            Proto::Resp3 => {
                self.header(b'=', text.len() + 4);
                self.buf.extend_from_slice(b"txt:");
                self.buf.extend_from_slice(text.as_bytes());
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parser: &mut Parser, mut buf: &[u8]) -> Result<Vec<Command>, ProtocolError> {
        let mut out = Vec::new();
        loop {
            let (n, cmd) = parser.next(buf)?;
            buf = &buf[n..];
            match cmd {
                Some(c) => out.push(c),
                None if n == 0 => return Ok(out),
                None => {}
            }
        }
    }

    #[test]
    fn reads_arrays_inline_commands_and_pipelines() {
        let mut p = Parser::default();
        let got = all(
            &mut p,
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*3\r\n$3\r\nSET\r\n$0\r\n\r\n$2\r\n\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                vec![b"GET".to_vec(), b"k".to_vec()],
                vec![b"PING".to_vec()],
                vec![b"SET".to_vec(), b"".to_vec(), b"\r\n".to_vec()],
            ]
        );
    }

    #[test]
    fn resumes_at_any_split_of_the_input() {
        let frame = b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$5\r\nworld\r\n";
        for cut in 0..frame.len() {
            let mut p = Parser::default();
            let mut buf = frame[..cut].to_vec();
            let (n, cmd) = p.next(&buf).unwrap();
            assert!(cmd.is_none(), "complete at {cut}");
            buf.drain(..n);
            buf.extend_from_slice(&frame[cut..]);
            let got = all(&mut p, &buf).unwrap();
            assert_eq!(got.len(), 1, "cut at {cut}");
            assert_eq!(got[0][2], b"world");
        }
    }

    #[test]
    fn refuses_declared_sizes_past_the_limits_before_the_bytes_arrive() {
        let limits = Limits {
            max_args: 10,
            max_arg: 100,
            max_request: 150,
            max_inline: 20,
        };
        for bad in [
            &b"*11\r\n"[..],
            b"*2\r\n$101\r\n",
            b"*2\r\n$-5\r\n",
            b"*3\r\n$100\r\n",
            b"*1\r\n:5\r\n",
            b"*x\r\n",
            b"*99999999999999999999999\r\n",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ] {
            let mut p = Parser::new(limits);
            let mut buf = bad.to_vec();
            if bad.starts_with(b"*3\r\n$100") {
                // Over the request limit only with the second argument.
                buf = b"*3\r\n$1\r\nx\r\n$100\r\n".to_vec();
                buf.extend_from_slice(&[b'a'; 100]);
                buf.extend_from_slice(b"\r\n$100\r\n");
            }
            assert!(
                all(&mut p, &buf).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn writes_both_protocols() {
        let mut o = Out::new(Proto::Resp2);
        o.nil();
        o.map(1);
        o.text("a");
        assert_eq!(o.buf, b"$-1\r\n*2\r\n$1\r\na\r\n");
        let mut o = Out::new(Proto::Resp3);
        o.nil();
        o.map(1);
        o.text("a");
        assert_eq!(o.buf, b"_\r\n%1\r\n=5\r\ntxt:a\r\n");
    }
}
