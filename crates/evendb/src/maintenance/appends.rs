//! Where a chunk takes time-ordered appends: stretches of keys that are
//! neighbours in key order and also arrived in key order. Such a stretch
//! is one app's new events (`app | time` keys): apps' key ranges do not
//! interleave, so the keys of one are neighbours, and a key of another app
//! put meanwhile breaks the arrival order at either end. Runs
//! (`rebuild::write_run`) and munk splits (`split`) cut chunks around them
//! so that each such place takes its appends in a chunk of its own.

/// The fewest keys a stretch must hold for a split to give it a chunk of
/// its own (fewer say little about where puts go).
pub(super) const STRETCH_MIN: usize = 32;

/// Puts by which a key may arrive before a smaller one (than the largest
/// put before it in the stretch) and still count as arriving in key order:
/// writer threads interleave their puts. Below [`STRETCH_MIN`], so keys
/// put in descending order never make a stretch.
const ARRIVAL_SLACK: u64 = 16;

/// The stretches among keys fed in key order, each with the counter of its
/// (newest) put; older keys between them, fed through
/// [`interrupt`](Self::interrupt), end a stretch without being counted.
#[derive(Default)]
pub(super) struct InsertionPoints {
    /// Keys fed through `add`.
    keys: usize,
    /// The stretch being fed, and its largest counter.
    current: Option<(Stretch, u64)>,
    /// Stretches of at least [`STRETCH_MIN`] keys.
    long: Vec<Stretch>,
}

/// A stretch of keys that arrived in key order (see [`InsertionPoints`]).
pub(super) struct Stretch {
    pub first: Vec<u8>,
    pub last: Vec<u8>,
    pub keys: usize,
    /// The next key fed (`None` for a stretch that ends the keys).
    pub above: Option<Vec<u8>>,
}

impl InsertionPoints {
    /// Feeds the next key, put with `counter`.
    pub fn add(&mut self, key: &[u8], counter: u64) {
        self.keys += 1;
        if let Some((stretch, latest)) = &mut self.current {
            if counter + ARRIVAL_SLACK > *latest {
                stretch.keys += 1;
                *latest = (*latest).max(counter);
                stretch.last.clear();
                stretch.last.extend_from_slice(key);
                return;
            }
        }
        self.end_stretch(Some(key));
        let stretch = Stretch {
            first: key.to_vec(),
            last: key.to_vec(),
            keys: 1,
            above: None,
        };
        self.current = Some((stretch, counter));
    }

    /// Feeds the next key, an older one (not put since whatever `add`
    /// counts from): it ends the stretch being fed.
    pub fn interrupt(&mut self, key: &[u8]) {
        self.end_stretch(Some(key));
    }

    fn end_stretch(&mut self, above: Option<&[u8]>) {
        if let Some((mut stretch, _)) = self.current.take() {
            if stretch.keys >= STRETCH_MIN {
                stretch.above = above.map(<[u8]>::to_vec);
                self.long.push(stretch);
            }
        }
    }

    /// Keys fed through [`add`](Self::add).
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// The stretches holding at least an eighth of the keys fed through
    /// `add` (and [`STRETCH_MIN`]), in key order. Cut at a stretch's first
    /// key and above its last, the part between takes the app's next
    /// events and, most likely, no other key.
    pub fn stretches(mut self) -> Vec<Stretch> {
        self.end_stretch(None);
        let least = self.keys / 8;
        self.long.retain(|s| s.keys >= least);
        self.long
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(app: u32, seq: u32) -> Vec<u8> {
        let mut k = app.to_be_bytes().to_vec();
        k.extend_from_slice(&seq.to_be_bytes());
        k
    }

    /// The cuts a run of the keys `app | seq` put in the order `order`
    /// gives: each stretch's first key and the run's next key above it.
    fn cuts(order: &[(u32, u32)]) -> Vec<Vec<u8>> {
        let mut run: Vec<(Vec<u8>, u64)> = order
            .iter()
            .enumerate()
            .map(|(c, &(app, seq))| (key(app, seq), c as u64))
            .collect();
        run.sort_unstable();
        let mut places = InsertionPoints::default();
        for (k, c) in &run {
            places.add(k, *c);
        }
        let mut cuts = Vec::new();
        for s in places.stretches() {
            cuts.push(s.first);
            cuts.extend(s.above);
        }
        cuts
    }

    #[test]
    fn each_app_taking_appends_gets_cut_out() {
        // Apps 2 and 7 append 200 events each, interleaved; apps 1, 5 and
        // 9 a few, at random times.
        let mut order = Vec::new();
        for s in 0..200 {
            order.push((2, s));
            order.push((7, s));
            if s % 40 == 3 {
                order.push((1 + (s % 3) * 4, s));
            }
        }
        let cuts = cuts(&order);
        assert_eq!(
            cuts,
            vec![key(2, 0), key(5, 43), key(7, 0), key(9, 83)],
            "cut around apps 2 and 7, up to the next key of another app"
        );
    }

    #[test]
    fn neighbouring_puts_swapped_by_writer_threads_stay_one_stretch() {
        // Two threads put one app's events: neighbours swap.
        let mut order: Vec<(u32, u32)> = (0..300).map(|s| (4, s ^ 1)).collect();
        order.insert(150, (6, 0));
        assert_eq!(cuts(&order), vec![key(4, 0), key(6, 0)]);
    }

    #[test]
    fn keys_put_out_of_order_make_no_stretch() {
        let order: Vec<(u32, u32)> = (0..300).rev().map(|s| (4, s)).collect();
        assert!(cuts(&order).is_empty());
        let mut rng = fastrand::Rng::with_seed(7);
        let mut order: Vec<(u32, u32)> = (0..300).map(|s| (4, s)).collect();
        rng.shuffle(&mut order);
        assert!(cuts(&order).is_empty());
    }
}
