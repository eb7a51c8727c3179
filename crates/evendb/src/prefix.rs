//! Binary search of sorted keys through 8-byte integer prefixes.
//!
//! Sorted keys of one chunk or one table usually share their leading bytes
//! (a table name, an app id). [`PrefixIndex`] keeps, for each key, the 8
//! bytes after the part all keys share, big-endian in a `u64` (zero-padded
//! when the key is shorter). A search compares integers in one compact
//! array instead of following a pointer to each key and calling `memcmp`;
//! only the keys whose 8 bytes tie with the searched key's are compared
//! whole, by the caller. When every key has one length and ends within
//! those 8 bytes (fixed-size keys, as most stores of composite keys have),
//! equal prefixes mean equal keys, and a search of a key of that length
//! compares no key at all.
//!
//! Why the narrowing is exact: every key starts with `shared`, so a key
//! below `shared` is below all of them and one above it (not starting with
//! it) is above all. For keys starting with `shared`, a smaller zero-padded
//! prefix means a smaller key: at the first differing byte the smaller side
//! either has a smaller byte or has ended (a shorter key is smaller).

use std::cmp::Ordering;
use std::ops::Range;

/// Prefixes per sample (four cache lines of them).
const STRIDE: usize = 32;

#[derive(Debug, Default)]
pub(crate) struct PrefixIndex {
    /// The leading bytes every key shares.
    shared: Box<[u8]>,
    prefixes: Box<[u64]>,
    /// Every [`STRIDE`]th prefix: a search finds its stretch here (a small
    /// array that stays in the CPU cache) and then reads one stretch of
    /// `prefixes`, instead of jumping through the whole array (a cache miss
    /// at each of the last steps: 7% of a get-only profile).
    samples: Box<[u64]>,
    /// The length every key has, if they all have one and it ends within
    /// the prefixes: then equal prefixes mean equal keys.
    exact_len: Option<usize>,
}

/// The 8 bytes of `key` from `skip` on, zero-padded, big-endian.
pub(crate) fn prefix_at(key: &[u8], skip: usize) -> u64 {
    let mut b = [0u8; 8];
    let tail = key.get(skip..).unwrap_or_default();
    let n = tail.len().min(8);
    b[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(b)
}

impl PrefixIndex {
    /// The index of `keys`, which must be sorted (ascending, ties allowed).
    pub fn new<'a, I>(keys: I) -> PrefixIndex
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone,
    {
        let it = keys.into_iter();
        let (first, last) = (it.clone().next(), it.clone().last());
        let shared: Box<[u8]> = match (first, last) {
            (Some(a), Some(z)) => {
                let n = a.iter().zip(z).take_while(|(x, y)| x == y).count();
                a[..n].into()
            }
            _ => Box::default(),
        };
        let skip = shared.len();
        let len = first.map_or(0, <[u8]>::len);
        let exact_len = (len <= skip + 8 && it.clone().all(|k| k.len() == len)).then_some(len);
        let prefixes: Box<[u64]> = it.map(|k| prefix_at(k, skip)).collect();
        PrefixIndex {
            samples: prefixes.iter().step_by(STRIDE).copied().collect(),
            prefixes,
            shared,
            exact_len,
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.shared.len() + (self.prefixes.len() + self.samples.len()) * 8
    }

    /// The number of prefixes below `p`.
    fn below(&self, p: u64) -> usize {
        // Samples `0..j` are below `p`, so the answer is past sample
        // `j - 1`'s position and at most sample `j`'s.
        let j = self.samples.partition_point(|&x| x < p);
        if j == 0 {
            return 0;
        }
        let from = (j - 1) * STRIDE + 1;
        let to = (j * STRIDE).min(self.prefixes.len());
        from + self.prefixes[from..to].partition_point(|&x| x < p)
    }

    /// The positions whose key may equal `key`: every key before the range
    /// is smaller than `key`, every key after it larger.
    pub fn narrow(&self, key: &[u8]) -> Range<usize> {
        let n = self.prefixes.len();
        let head = &key[..key.len().min(self.shared.len())];
        match head.cmp(&self.shared) {
            Ordering::Less => return 0..0,
            Ordering::Greater => return n..n,
            // `key` is `shared` itself or longer and starts with it.
            Ordering::Equal if head.len() < self.shared.len() => return 0..0,
            Ordering::Equal => {}
        }
        let p = prefix_at(key, self.shared.len());
        let lo = self.below(p);
        // Ties are few: gallop from `lo` instead of searching all the rest.
        let rest = &self.prefixes[lo..];
        let mut step = 1;
        while step < rest.len() && rest[step - 1] == p {
            step *= 2;
        }
        let window = &rest[step / 2..step.min(rest.len())];
        let hi = lo + step / 2 + window.partition_point(|&x| x <= p);
        lo..hi
    }

    /// Whether the prefixes hold the keys exactly (see the module doc).
    pub fn is_exact(&self) -> bool {
        self.exact_len.is_some()
    }

    /// Key `i` compared with `key`, when the prefixes hold the keys
    /// exactly; `None` otherwise.
    pub fn cmp_exact(&self, i: usize, key: &[u8]) -> Option<Ordering> {
        let len = self.exact_len?;
        let p = self.prefixes.get(i)?.to_be_bytes();
        let s = self.shared.len();
        let n = s.min(key.len());
        // Key `i` is `shared` followed by the first `len - s` prefix bytes.
        Some(
            self.shared[..n]
                .cmp(&key[..n])
                .then_with(|| p[..len - s].cmp(key.get(s..).unwrap_or_default()))
                .then(s.cmp(&n)),
        )
    }

    /// The positions of the keys equal to `key`, when the prefixes alone
    /// tell (see the module doc); `None` when keys must be compared.
    pub fn exact(&self, key: &[u8]) -> Option<Range<usize>> {
        (self.exact_len == Some(key.len())).then(|| self.narrow(key))
    }

    /// The number of keys smaller than `key`; `less(i)` tells whether key
    /// `i` is, for the keys the prefixes cannot place.
    pub fn lower_bound(&self, key: &[u8], less: impl Fn(usize) -> bool) -> usize {
        match self.exact(key) {
            Some(r) => r.start,
            None => partition(self.narrow(key), less),
        }
    }

    /// The number of keys at or below `key`; `at_most(i)` tells whether key
    /// `i` is, for the keys the prefixes cannot place.
    pub fn upper_bound(&self, key: &[u8], at_most: impl Fn(usize) -> bool) -> usize {
        match self.exact(key) {
            Some(r) => r.end,
            None => partition(self.narrow(key), at_most),
        }
    }
}

/// The first position of `range` where `pred` fails, for a `pred` that
/// holds on a prefix of the range and fails on the rest (a binary search
/// over positions whose keys live elsewhere).
pub(crate) fn partition(range: Range<usize>, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (range.start, range.end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: &[&[u8]], probes: &[&[u8]]) {
        let index = PrefixIndex::new(keys.iter().copied());
        for &p in probes {
            let lt = index.lower_bound(p, |i| keys[i] < p);
            assert_eq!(lt, keys.partition_point(|k| *k < p), "< {p:?}");
            let le = index.upper_bound(p, |i| keys[i] <= p);
            assert_eq!(le, keys.partition_point(|k| *k <= p), "<= {p:?}");
            for (i, k) in keys.iter().enumerate() {
                if let Some(o) = index.cmp_exact(i, p) {
                    assert_eq!(o, k.cmp(&p), "{k:?} vs {p:?}");
                }
            }
            if let Some(r) = index.exact(p) {
                assert!(keys[r.clone()].iter().all(|k| *k == p), "exact {p:?}");
                assert_eq!(r.len(), keys.iter().filter(|k| **k == p).count());
            }
        }
    }

    #[test]
    fn agrees_with_a_plain_binary_search() {
        let keys: Vec<&[u8]> = vec![
            b"user0001",
            b"user00010",
            b"user0001\0",
            b"user0001\0\0",
            b"user0002aaaaaaaaaaaa",
            b"user0002aaaaaaaaaaab",
            b"user0002aaaaaaaaaaab",
            b"user0003",
            b"user9",
        ];
        let mut sorted = keys.clone();
        sorted.sort();
        let probes: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"user",
            b"user0",
            b"user0001",
            b"user0001\0",
            b"user0001\0\0\0",
            b"user00010",
            b"user0002",
            b"user0002aaaaaaaaaaab",
            b"user0002aaaaaaaaaaac",
            b"user8",
            b"user9",
            b"user90",
            b"usf",
            b"\xff",
        ];
        check(&sorted, &probes);
        check(&sorted[..1], &probes);
        check(&[], &probes);
    }

    #[test]
    fn agrees_on_random_keys() {
        let mut rng = fastrand::Rng::with_seed(7);
        for round in 0..200 {
            let len = rng.usize(0..40);
            let alphabet: &[u8] = if round % 2 == 0 { b"\0ab" } else { b"ab" };
            let mut key = || {
                let n = rng.usize(0..14);
                let mut k = b"pre".to_vec();
                k.truncate(rng.usize(0..=3));
                k.extend((0..n).map(|_| alphabet[rng.usize(0..alphabet.len())]));
                k
            };
            let mut keys: Vec<Vec<u8>> = (0..len).map(|_| key()).collect();
            keys.sort();
            let probes: Vec<Vec<u8>> = (0..40).map(|_| key()).chain(keys.clone()).collect();
            let kr: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let pr: Vec<&[u8]> = probes.iter().map(|k| k.as_slice()).collect();
            check(&kr, &pr);
        }
    }

    #[test]
    fn long_arrays_are_searched_through_their_samples() {
        let mut rng = fastrand::Rng::with_seed(5);
        for n in [0, 1, STRIDE - 1, STRIDE, STRIDE + 1, 5 * STRIDE, 1000] {
            // Big-endian integers with runs of ties, some longer than a
            // stride.
            let mut keys: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let v = rng.u64(0..300) * 3;
                    [b"k".as_slice(), &v.to_be_bytes()].concat()
                })
                .collect();
            keys.extend(std::iter::repeat_n(
                b"k\0\0\0\0\0\0\x01\x2c".to_vec(),
                2 * STRIDE,
            ));
            keys.sort();
            let kr: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let probes: Vec<Vec<u8>> = (0..1000u64)
                .map(|v| [b"k".as_slice(), &v.to_be_bytes()].concat())
                .chain([b"j".to_vec(), b"l".to_vec(), b"k".to_vec()])
                .collect();
            let pr: Vec<&[u8]> = probes.iter().map(|k| k.as_slice()).collect();
            check(&kr, &pr);
        }
    }

    #[test]
    fn fixed_size_keys_are_placed_without_comparing_keys() {
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..200 {
            // Keys of one length that ends within the prefixes (at most 8
            // bytes after the shared part), with ties and zero bytes.
            let len = 3 + round % 8;
            let count = rng.usize(1..40);
            let mut key = || -> Vec<u8> {
                let mut k = b"ab".to_vec();
                k.extend((2..len).map(|_| [0u8, 1, 7][rng.usize(0..3)]));
                k
            };
            let mut keys: Vec<Vec<u8>> = (0..count).map(|_| key()).collect();
            keys.sort();
            let kr: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let index = PrefixIndex::new(kr.iter().copied());
            let probes: Vec<Vec<u8>> = (0..40).map(|_| key()).chain(keys.clone()).collect();
            assert!(index.is_exact());
            for p in &probes {
                assert!(index.exact(p).is_some(), "{kr:?} {p:?}");
                let never = |_: usize| -> bool { panic!("compared a key") };
                let lt = index.lower_bound(p, never);
                assert_eq!(lt, kr.partition_point(|k| *k < p.as_slice()));
                let le = index.upper_bound(p, never);
                assert_eq!(le, kr.partition_point(|k| *k <= p.as_slice()));
            }
            // Probes of other lengths are placed by comparing keys.
            let mut others: Vec<Vec<u8>> = vec![b"a".to_vec(), b"ab".to_vec(), b"b".to_vec()];
            for p in &probes {
                others.push(p[..p.len() - 1].to_vec());
                others.push([p.as_slice(), &[0]].concat());
            }
            let pr: Vec<&[u8]> = probes.iter().chain(&others).map(|k| k.as_slice()).collect();
            check(&kr, &pr);
        }
    }
}
