//! Values of the writes: incompressible bytes (`--value-kind random`, the
//! default) or JSON events shaped like an analytics trace
//! (`--value-kind json`), each of exactly `--value-size` bytes.

use fastrand::Rng;
use serde::{Deserialize, Serialize};

/// What the values of a run look like.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    /// Incompressible bytes: windows of a 1 MiB random pool at random
    /// offsets, each stamped with 8 fresh random bytes.
    #[default]
    Random,
    /// A JSON event of an analytics trace (app, timestamp, user, session,
    /// event, page, referrer, user agent, device, properties...) padded to
    /// the size: text that compresses like real event logs.
    Json,
}

impl ValueKind {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::Random => "random",
            ValueKind::Json => "json",
        }
    }

    /// What the values are, as reports state it.
    pub fn describe(self) -> &'static str {
        match self {
            ValueKind::Random => "random: incompressible bytes (windows of a 1 MiB random pool, each stamped with 8 fresh random bytes)",
            ValueKind::Json => "json: JSON events of an analytics trace (app, ts, user, session, event, page, referrer, user agent, device, properties), each value one valid JSON object of exactly the value size; field names and many field values repeat, numbers and ids vary",
        }
    }
}

/// Random bytes that random values are cut from.
const VALUE_POOL_BYTES: usize = 1 << 20;

/// Most bytes of JSON templates a worker keeps.
const JSON_TEMPLATE_BYTES: usize = 1 << 20;

/// Per-thread source of values. Random values are windows of a 1 MiB
/// random pool at a random offset (as db_bench does), stamped with 8 fresh
/// random bytes, so neither one value nor neighbouring values in a block
/// compress and no two writes store the same bytes.
///
/// JSON values come from templates: on the first value of a size, the
/// worker writes up to 1024 events of that size (at most 1 MiB of them)
/// field by field from fixed vocabularies and its RNG ([`json_event`]);
/// each value is then a copy of a random template with its timestamp
/// (the worker's clock, 1-50 ms later than the previous value's), user id
/// and session id written anew in place. About 50 ns a value instead of
/// 400 ns to write one from scratch, no allocation, no serializer; a
/// 4 KiB block holds values of different templates as good as always.
pub struct Values {
    kind: ValueKind,
    pool: Vec<u8>,
    buf: Vec<u8>,
    /// The JSON events' clock, in ms: it advances 1-50 ms per value.
    ts_ms: u64,
    /// JSON templates of `template_size` bytes each, back to back.
    templates: Vec<u8>,
    template_size: usize,
    /// Where each template's fields to restamp are.
    stamps: Vec<Stamps>,
}

impl Values {
    /// A source of values of `kind`, seeded from `rng`.
    pub fn new(kind: ValueKind, rng: &mut Rng) -> Values {
        let pool = match kind {
            ValueKind::Random => {
                let mut pool = vec![0u8; VALUE_POOL_BYTES];
                rng.fill(&mut pool);
                pool
            }
            ValueKind::Json => Vec::new(),
        };
        Values {
            kind,
            pool,
            buf: Vec::new(),
            ts_ms: 1_700_000_000_000 + rng.u64(0..86_400_000),
            templates: Vec::new(),
            template_size: 0,
            stamps: Vec::new(),
        }
    }

    /// The next value of `size` bytes.
    pub fn next(&mut self, size: usize, rng: &mut Rng) -> &[u8] {
        match self.kind {
            ValueKind::Random => self.next_random(size, rng),
            ValueKind::Json => self.next_json(size, rng),
        }
    }

    fn next_json(&mut self, size: usize, rng: &mut Rng) -> &[u8] {
        if self.template_size != size || self.stamps.is_empty() {
            let n = (JSON_TEMPLATE_BYTES / size.max(1)).clamp(16, 1024);
            self.templates.clear();
            self.stamps.clear();
            for _ in 0..n {
                self.stamps
                    .push(json_event(&mut self.buf, size, self.ts_ms, rng));
                self.templates.extend_from_slice(&self.buf);
            }
            self.template_size = size;
        }
        self.ts_ms += rng.u64(1..=50);
        let i = rng.usize(..self.stamps.len());
        self.buf.clear();
        self.buf
            .extend_from_slice(&self.templates[i * size..(i + 1) * size]);
        let s = self.stamps[i];
        if let Some(at) = s.ts {
            put_digits(&mut self.buf[at..at + TS_DIGITS], self.ts_ms);
        }
        if let Some(at) = s.user {
            put_digits(&mut self.buf[at..at + USER_DIGITS], rng.u64(0..2_000_000));
        }
        if let Some(at) = s.session {
            put_hex(&mut self.buf[at..at + 16], rng.u64(..));
        }
        &self.buf
    }

    fn next_random(&mut self, size: usize, rng: &mut Rng) -> &[u8] {
        self.buf.clear();
        while self.buf.len() < size {
            let want = (size - self.buf.len()).min(VALUE_POOL_BYTES / 2);
            let at = rng.usize(0..=VALUE_POOL_BYTES - want);
            self.buf.extend_from_slice(&self.pool[at..at + want]);
        }
        let stamp = rng.u64(..).to_le_bytes();
        let n = size.min(8);
        self.buf[..n].copy_from_slice(&stamp[..n]);
        &self.buf
    }
}

const EVENTS: [&str; 10] = [
    "page_view",
    "page_view",
    "page_view",
    "click",
    "click",
    "scroll",
    "add_to_cart",
    "search",
    "purchase",
    "login",
];

const PAGES: [&str; 8] = [
    "/",
    "/products/",
    "/products/",
    "/products/",
    "/cart",
    "/search?q=",
    "/blog/",
    "/account/settings",
];

const REFERRERS: [&str; 6] = [
    "https://www.google.com/",
    "https://www.google.com/",
    "https://www.bing.com/search",
    "https://t.co/",
    "https://news.ycombinator.com/",
    "",
];

const USER_AGENTS: [&str; 6] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
];

const COUNTRIES: [&str; 10] = ["US", "US", "US", "DE", "GB", "FR", "IN", "BR", "JP", "CA"];

const DEVICES: [&str; 4] = ["desktop", "desktop", "mobile", "tablet"];

const LANGS: [&str; 5] = ["en-US", "en-US", "de-DE", "en-GB", "fr-FR"];

const CATEGORIES: [&str; 6] = ["shoes", "shirts", "electronics", "books", "garden", "toys"];

const CAMPAIGNS: [&str; 4] = ["none", "winter_sale", "newsletter", "retargeting"];

const WORDS: [&str; 16] = [
    "user", "clicked", "the", "banner", "on", "home", "page", "after", "search", "for", "red",
    "running", "shoes", "and", "viewed", "details",
];

fn pick<'a>(list: &[&'a str], rng: &mut Rng) -> &'a str {
    list[rng.usize(..list.len())]
}

/// Appends `n` in decimal, at least `width` digits (zero-padded).
fn push_u64(buf: &mut Vec<u8>, mut n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for _ in (digits.len() - i)..width {
        buf.push(b'0');
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Appends `n` as 16 lower-case hex digits.
fn push_hex(buf: &mut Vec<u8>, n: u64) {
    let at = buf.len();
    buf.resize(at + 16, 0);
    put_hex(&mut buf[at..], n);
}

/// Writes `n` as lower-case hex digits filling `out`.
fn put_hex(out: &mut [u8], mut n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for c in out.iter_mut().rev() {
        *c = HEX[(n & 0xF) as usize];
        n >>= 4;
    }
}

/// Writes the low decimal digits of `n` filling `out` (zero-padded).
fn put_digits(out: &mut [u8], mut n: u64) {
    for c in out.iter_mut().rev() {
        *c = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Digits of a millisecond timestamp until the year 2286.
const TS_DIGITS: usize = 13;

/// Digits of a user id.
const USER_DIGITS: usize = 7;

/// Where [`json_event`] wrote the fields that vary from value to value:
/// the timestamp's 13 digits, the user id's 7 digits, the session id's 16
/// hex digits; `None` for a field the size left out.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stamps {
    pub ts: Option<usize>,
    pub user: Option<usize>,
    pub session: Option<usize>,
}

/// Writes JSON fields into a buffer of a fixed final size: each field is
/// kept only if the object can still be closed within the size.
struct Fields<'a> {
    buf: &'a mut Vec<u8>,
    size: usize,
    /// Closing braces still owed after the current field.
    closers: usize,
    /// Whether the current object has no field yet.
    first: bool,
    /// Whether a field did not fit: no later field is tried.
    full: bool,
}

impl Fields<'_> {
    /// Starts a field `"name":` (with its comma; `"name<index>":` with an
    /// index), returning where it began.
    fn open(&mut self, name: &str, index: Option<u64>) -> usize {
        let mark = self.buf.len();
        if !self.first {
            self.buf.push(b',');
        }
        self.buf.push(b'"');
        self.buf.extend_from_slice(name.as_bytes());
        if let Some(i) = index {
            push_u64(self.buf, i, 0);
        }
        self.buf.extend_from_slice(b"\":");
        mark
    }

    /// Keeps the field begun at `mark` if the object still closes within
    /// the size, else drops it and stops adding fields.
    fn close(&mut self, mark: usize) -> bool {
        if self.buf.len() + self.closers <= self.size {
            self.first = false;
            true
        } else {
            self.buf.truncate(mark);
            self.full = true;
            false
        }
    }

    /// A field whose value `write` appends (a number, an object...).
    fn raw(&mut self, name: &str, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        self.indexed(name, None, write)
    }

    /// [`Fields::raw`] named `name<index>` with an index.
    fn indexed(
        &mut self,
        name: &str,
        index: Option<u64>,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> bool {
        if self.full {
            return false;
        }
        let mark = self.open(name, index);
        write(self.buf);
        self.close(mark)
    }

    /// A string field whose contents `write` appends (no escaping: the
    /// vocabularies need none).
    fn string(&mut self, name: &str, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        self.raw(name, |b| {
            b.push(b'"');
            write(b);
            b.push(b'"');
        })
    }
}

/// Writes into `buf` one JSON event of exactly `size` bytes: one object
/// (valid JSON for any size of 2 or more; `"0"`-digits below) whose fields
/// are added in order while they fit, the last gap filled by a `note`
/// field of words, or spaces when even that does not fit.
pub fn json_event(buf: &mut Vec<u8>, size: usize, ts_ms: u64, rng: &mut Rng) -> Stamps {
    let mut stamps = Stamps::default();
    buf.clear();
    if size < 2 {
        buf.resize(size, b'0');
        return stamps;
    }
    buf.push(b'{');
    let mut f = Fields {
        buf,
        size,
        closers: 1,
        first: true,
        full: false,
    };
    // A few popular apps, a long tail of others.
    let app = if rng.bool() {
        rng.u64(0..8)
    } else {
        rng.u64(0..5000)
    };
    f.string("app", |b| {
        b.extend_from_slice(b"app");
        push_u64(b, app, 4);
    });
    let mut at = 0;
    if f.raw("ts", |b| {
        at = b.len();
        push_u64(b, ts_ms, TS_DIGITS)
    }) {
        stamps.ts = Some(at);
    }
    if f.string("user", |b| {
        b.push(b'u');
        at = b.len();
        push_u64(b, rng.u64(0..2_000_000), USER_DIGITS);
    }) {
        stamps.user = Some(at);
    }
    if f.string("session", |b| {
        at = b.len();
        push_hex(b, rng.u64(..))
    }) {
        stamps.session = Some(at);
    }
    f.string("event", |b| {
        b.extend_from_slice(pick(&EVENTS, rng).as_bytes())
    });
    f.string("page", |b| {
        let page = pick(&PAGES, rng);
        b.extend_from_slice(page.as_bytes());
        if page.ends_with('/') && page.len() > 1 {
            push_u64(b, rng.u64(1..20_000), 0);
        } else if page.ends_with('=') {
            b.extend_from_slice(pick(&WORDS, rng).as_bytes());
        }
    });
    f.string("ref", |b| {
        b.extend_from_slice(pick(&REFERRERS, rng).as_bytes())
    });
    f.string("ua", |b| {
        b.extend_from_slice(pick(&USER_AGENTS, rng).as_bytes())
    });
    f.string("ip", |b| {
        for i in 0..4 {
            if i > 0 {
                b.push(b'.');
            }
            push_u64(b, rng.u64(1..255), 0);
        }
    });
    f.string("country", |b| {
        b.extend_from_slice(pick(&COUNTRIES, rng).as_bytes())
    });
    f.string("device", |b| {
        b.extend_from_slice(pick(&DEVICES, rng).as_bytes())
    });
    f.string("lang", |b| {
        b.extend_from_slice(pick(&LANGS, rng).as_bytes())
    });
    f.raw("duration_ms", |b| push_u64(b, rng.u64(0..30_000), 0));
    f.string("campaign", |b| {
        b.extend_from_slice(pick(&CAMPAIGNS, rng).as_bytes())
    });
    // "props": items of a cart or listing, as many as fit.
    if !f.full {
        let mark = f.open("props", None);
        f.buf.push(b'{');
        f.closers += 1;
        if f.close(mark) {
            f.first = true;
            for item in 0u64.. {
                let kept = f.indexed("item", Some(item), |b| {
                    b.extend_from_slice(b"{\"sku\":\"SKU-");
                    push_u64(b, rng.u64(0..1_000_000), 6);
                    b.extend_from_slice(b"\",\"qty\":");
                    push_u64(b, rng.u64(1..5), 0);
                    b.extend_from_slice(b",\"price\":");
                    push_u64(b, rng.u64(1..500), 0);
                    b.push(b'.');
                    push_u64(b, rng.u64(0..100), 2);
                    b.extend_from_slice(b",\"category\":\"");
                    b.extend_from_slice(pick(&CATEGORIES, rng).as_bytes());
                    b.extend_from_slice(b"\"}");
                });
                if !kept {
                    break;
                }
            }
            f.buf.push(b'}');
            f.first = false;
        }
        f.closers -= 1;
        f.full = false;
    }
    // The gap: a note of words, else spaces.
    let gap = size - 1 - f.buf.len();
    let overhead = if f.first { 9 } else { 10 }; // [,]"note":""
    if gap >= overhead {
        let mark = f.open("note", None);
        f.buf.push(b'"');
        let end = mark + gap - 1;
        while f.buf.len() < end {
            f.buf.extend_from_slice(pick(&WORDS, rng).as_bytes());
            f.buf.push(b' ');
        }
        f.buf.truncate(end);
        f.buf.push(b'"');
    } else {
        f.buf.resize(size - 1, b' ');
    }
    f.buf.push(b'}');
    debug_assert_eq!(f.buf.len(), size);
    stamps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_are_json_objects_of_the_requested_size_and_differ() {
        let mut rng = Rng::with_seed(7);
        let mut values = Values::new(ValueKind::Json, &mut rng);
        for size in [
            2, 3, 8, 9, 10, 11, 17, 20, 40, 64, 100, 101, 199, 256, 400, 800, 1000, 4096, 10_000,
            100_000,
        ] {
            let mut seen = Vec::new();
            for _ in 0..50 {
                let v = values.next(size, &mut rng).to_vec();
                assert_eq!(v.len(), size);
                assert!(v.iter().all(|&c| (b' '..=b'~').contains(&c)), "{v:?}");
                let parsed: serde_json::Value = serde_json::from_slice(&v)
                    .unwrap_or_else(|e| panic!("{size}: {e}: {}", String::from_utf8_lossy(&v)));
                let object = parsed.as_object().expect("an object");
                if size >= 64 {
                    assert!(object.contains_key("app") && object.contains_key("ts"));
                }
                if size >= 800 {
                    for field in ["user", "session", "event", "page", "ua", "props"] {
                        assert!(object.contains_key(field), "{field} in {parsed}");
                    }
                }
                seen.push(v);
            }
            if size >= 40 {
                // The clock advances with every value.
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), 50, "size {size}");
            }
        }
        assert_eq!(values.next(0, &mut rng), b"");
        assert_eq!(values.next(1, &mut rng), b"0");
    }

    #[test]
    fn json_values_repeat_their_vocabulary() {
        // Text with repeated names and values: far fewer distinct bytes
        // than random values, and every value names the same fields.
        let mut rng = Rng::with_seed(1);
        let mut values = Values::new(ValueKind::Json, &mut rng);
        let a = values.next(800, &mut rng).to_vec();
        let b = values.next(800, &mut rng).to_vec();
        for v in [&a, &b] {
            let o: serde_json::Value = serde_json::from_slice(v).unwrap();
            for field in [
                "app",
                "ts",
                "user",
                "session",
                "event",
                "page",
                "ref",
                "ua",
                "ip",
                "country",
                "device",
                "lang",
                "duration_ms",
                "campaign",
                "props",
            ] {
                assert!(o.get(field).is_some(), "{field} in {o}");
            }
        }
        // Many 6-byte windows of one value occur in the other: what LZ4
        // finds in a block of such values.
        let windows = b.windows(6).count();
        let shared = b
            .windows(6)
            .filter(|w| a.windows(6).any(|x| x == *w))
            .count();
        eprintln!("shared 6-byte windows: {shared} of {windows}");
        assert!(shared * 5 > windows * 2, "{shared} of {windows}");
    }

    #[test]
    fn json_values_are_stamped_in_place() {
        let mut rng = Rng::with_seed(5);
        let mut values = Values::new(ValueKind::Json, &mut rng);
        let mut last_ts = 0;
        for _ in 0..2000 {
            let v: serde_json::Value = serde_json::from_slice(values.next(800, &mut rng)).unwrap();
            let ts = v["ts"].as_u64().unwrap();
            assert!(ts > last_ts && ts < 1_800_000_000_000, "{ts}");
            last_ts = ts;
            let user = v["user"].as_str().unwrap();
            assert!(user.len() == 8 && user.starts_with('u'), "{user}");
            assert_eq!(v["session"].as_str().unwrap().len(), 16);
        }
        // A new size makes new templates.
        assert_eq!(values.next(300, &mut rng).len(), 300);
        assert_eq!(values.next(800, &mut rng).len(), 800);
    }

    #[test]
    fn random_values_keep_their_size_and_differ() {
        let mut rng = Rng::with_seed(3);
        let mut values = Values::new(ValueKind::Random, &mut rng);
        let a = values.next(800, &mut rng).to_vec();
        let b = values.next(800, &mut rng).to_vec();
        assert_eq!((a.len(), b.len()), (800, 800));
        assert_ne!(a, b);
        assert_eq!(values.next(3, &mut rng).len(), 3);
    }

    #[test]
    fn value_kinds_parse_and_default_to_random() {
        use clap::ValueEnum;
        assert_eq!(ValueKind::default(), ValueKind::Random);
        for kind in [ValueKind::Random, ValueKind::Json] {
            assert_eq!(ValueKind::from_str(kind.name(), false), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
    }
}
