//! Gets of a log segment, and the freezing that swaps a banded segment's
//! directory for a block index and a filter (see the parent module).

use super::*;

/// Bits per record of a frozen banded segment's Bloom filter (about 1%
/// false positives with its five probes).
const FROZEN_FILTER_BITS: usize = 10;

/// The hash a frozen segment's filter takes for a fingerprint: its 32 bits
/// spread over 64 (the filter picks its block from the high bits and its
/// probes from the low ones).
fn fingerprint_hash(fp: u32) -> u64 {
    (u64::from(fp) | 1 << 32).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl LogSegment {
    /// Marks the segment as taking no more appends (the caller diverted
    /// its chunks' puts and flushed it). A banded segment then swaps its
    /// per-record directory and filter for the smaller block index its
    /// span built (see `span`); gets read a block instead of a record.
    pub fn freeze(&self) -> Result<()> {
        let mut a = self.append.lock();
        if a.frozen {
            return Ok(());
        }
        self.write_buffer(&mut a)?;
        a.frozen = true;
        a.buffer = Vec::new();
        // No more writes: the last page's bytes are not needed.
        a.tail = Vec::new();
        self.recharge_buffer(&mut a);
        let len = a.len;
        if let Some(blocks) = a.span.freeze(len) {
            let old = self.parts.load_full();
            // The filter is built from the directory it replaces.
            let fps: Vec<u32> = old
                .fingerprints
                .iter()
                .copied()
                .chain(a.open_part.records.iter().map(|&(fp, _)| fp))
                .collect();
            let filter = Bloom::with_bits((fps.len() * FROZEN_FILTER_BITS).max(512));
            for fp in fps {
                filter.insert(fingerprint_hash(fp));
            }
            let new = Parts {
                blocks: Some((Arc::new(blocks), filter)),
                ..Parts::default()
            };
            // Only if it is smaller than what it replaces (a small segment's
            // directory may be): return that first.
            let budget = &self.config.budget;
            let open_part = a.open_part.charged;
            if new.bytes() < old.bytes() + open_part {
                budget.release(Kind::Filters, old.bytes());
                a.open_part.clear(budget);
                budget.add(Kind::Filters, new.bytes());
                self.parts.store(Arc::new(new));
            }
        }
        self.recharge_span(&mut a);
        Ok(())
    }

    /// Bytes of log per section of the segment's band check.
    pub fn section_bytes(&self) -> u64 {
        self.append.lock().span.section_bytes()
    }

    /// The newest record of `key` that `accept(version, counter)` admits, with
    /// its value, reading only the parts whose filter may hold the key
    /// (`probe` counts what the filters did).
    pub fn lookup(
        &self,
        key: &[u8],
        hash: u64,
        accept: &dyn Fn(u64, u64) -> bool,
        probe: &mut FilterProbe,
    ) -> Result<Option<(RecordPtr, Option<Vec<u8>>)>> {
        let end = self.len();
        let parts = self.parts.load();
        if let Some(blocks) = &parts.blocks {
            if !blocks.1.may_contain(fingerprint_hash(fingerprint(hash))) {
                probe.skipped += 1;
                return Ok(None);
            }
            return self.lookup_blocks(&blocks.0, key, accept, probe);
        }
        let mut best: Option<(RecordPtr, Option<Vec<u8>>)> = None;
        let mut consider = |r: RecordPtr, buf: &[u8], local: usize| -> bool {
            let start = local + HEADER_LEN;
            if buf.get(start..start + r.key_len as usize) != Some(key) {
                return false;
            }
            if accept(r.version, r.counter)
                && best.as_ref().is_none_or(|(b, _)| b.stamp() < r.stamp())
            {
                let value = if r.tombstone {
                    None
                } else {
                    let v = start + r.key_len as usize;
                    buf.get(v..v + r.value_len as usize).map(<[u8]>::to_vec)
                };
                best = Some((r, value));
            }
            true
        };
        // The readable records at `locs`, each read alone and checked:
        // whether any was read, and whether any held the key.
        let mut search = |locs: &mut dyn Iterator<Item = (u64, u64)>| -> Result<(bool, bool)> {
            let (mut read, mut has_key) = (false, false);
            for (from, len) in locs {
                if from + len > end {
                    continue; // appended but not readable yet
                }
                read = true;
                let buf = self.read_bytes(from, from + len)?;
                let (records, pos) = self.decode_read(&buf, from);
                let (Some(r), true) = (records.into_iter().next(), pos == buf.len()) else {
                    return Err(Error::corruption(
                        &self.path,
                        from,
                        "log record failed its checksum",
                    ));
                };
                has_key |= consider(r, &buf, 0);
            }
            Ok((read, has_key))
        };
        let fp = fingerprint(hash);
        // Sealed parts: only the records whose fingerprint matches.
        let (read, has_key) = search(&mut parts.matches(fp))?;
        if read {
            probe.searched += 1;
            probe.false_positives += u64::from(!has_key);
        } else if parts.sealed > 0 {
            probe.skipped += 1;
        }
        // The unsealed part, if its filter may hold the key: the records
        // its list says match, when the list can be had without waiting
        // and no seal happened since `parts` was loaded; else the whole
        // part.
        if let Some(tail) = parts.tail.as_ref().filter(|t| t.start < end) {
            if tail.bloom.may_contain(hash) {
                probe.searched += 1;
                let listed: Option<Vec<(u64, u64)>> = self.append.try_lock().and_then(|a| {
                    Arc::ptr_eq(&self.parts.load(), &parts).then(|| {
                        a.open_part
                            .records
                            .iter()
                            .filter(|&&(f, _)| f == fp)
                            .map(|&(_, loc)| unpack(loc))
                            .collect()
                    })
                });
                let found = if let Some(listed) = listed {
                    search(&mut listed.into_iter())?.1
                } else {
                    let buf = self.read_bytes(tail.start, end)?;
                    let (records, pos) = self.decode_read(&buf, tail.start);
                    if pos != buf.len() {
                        return Err(Error::corruption(
                            &self.path,
                            tail.start + pos as u64,
                            "log record failed its checksum",
                        ));
                    }
                    let mut found = false;
                    for r in records {
                        let local = (r.offset - tail.start) as usize;
                        found |= consider(r, &buf, local);
                    }
                    found
                };
                probe.false_positives += u64::from(!found);
            } else {
                probe.skipped += 1;
            }
        }
        Ok(best)
    }

    /// [`lookup`](Self::lookup) in a frozen banded segment: reads the
    /// blocks (and outlier records) that may hold `key`.
    fn lookup_blocks(
        &self,
        blocks: &BlockIndex,
        key: &[u8],
        accept: &dyn Fn(u64, u64) -> bool,
        probe: &mut FilterProbe,
    ) -> Result<Option<(RecordPtr, Option<Vec<u8>>)>> {
        let candidates = blocks.candidates(key);
        if candidates.is_empty() {
            probe.skipped += 1;
            return Ok(None);
        }
        probe.searched += 1;
        let mut best: Option<(RecordPtr, Option<Vec<u8>>)> = None;
        for (start, end) in candidates {
            // Walk the records by their checked headers; only a record of
            // the key has its body checked (most of a block is other keys).
            let end = end.min(self.len());
            let buf = self.read_bytes(start.min(end), end)?;
            let damaged = |at: usize| {
                Error::corruption(
                    &self.path,
                    start + at as u64,
                    "log record failed its checksum",
                )
            };
            let mut pos = 0usize;
            while pos < buf.len() {
                let h = buf
                    .get(pos..pos + HEADER_LEN)
                    .and_then(|b| format::decode_header(b, self.seed))
                    .ok_or_else(|| damaged(pos))?;
                let body = buf
                    .get(pos + HEADER_LEN..pos + HEADER_LEN + h.body_len())
                    .ok_or_else(|| damaged(pos))?;
                let at = pos;
                pos += HEADER_LEN + h.body_len();
                if body.get(..h.key_len as usize) != Some(key) || !accept(h.version, h.counter) {
                    continue;
                }
                if !format::body_matches(&h, body, self.seed) {
                    return Err(damaged(at));
                }
                let r = RecordPtr {
                    version: h.version,
                    counter: h.counter,
                    offset: start + at as u64,
                    key_len: h.key_len,
                    value_len: h.value_len,
                    tombstone: h.kind == crate::entry::KIND_DELETE,
                };
                if best.as_ref().is_none_or(|(b, _)| b.stamp() < r.stamp()) {
                    let value = (!r.tombstone).then(|| body[h.key_len as usize..].to_vec());
                    best = Some((r, value));
                }
            }
        }
        probe.false_positives += u64::from(best.is_none());
        Ok(best)
    }
}
