//! An analytics event stream shaped like the paper's production trace (§5.2).
//!
//! Events are keyed `app_id (u32) | timestamp_us (u64) | seq (u32)`, all
//! big-endian so byte order is (app, time, seq) order. They arrive in
//! timestamp order, which is not key order: each new event lands at the end
//! of its own app's range, all over the key space.
//!
//! App popularity is heavy-tailed like the trace's: about 1% of the apps
//! produce ~94% of the events and 0.1% produce ~70%. We get that shape from
//! three popularity tiers (the top 0.1% of apps, the next 0.9%, the other
//! 99%) that receive 70%, 24% and 6% of the events, with a Zipfian (θ = 0.99)
//! inside each tier so popularity also falls off smoothly within a tier.
//! Popularity ranks are mapped to app ids by a fixed permutation, so popular
//! apps are not neighbours in the key space.

use fastrand::Rng;

use super::zipfian::Zipfian;

/// Bytes of a stream key.
pub const STREAM_KEY_SIZE: usize = 16;

/// The popularity model of app ids.
#[derive(Clone, Debug)]
pub struct AppPopularity {
    apps: u64,
    /// Cumulative event share of each tier and the tier's first rank.
    tiers: Vec<(f64, u64, Zipfian)>,
}

impl AppPopularity {
    /// Event shares of the three tiers.
    pub const TIER_SHARES: [f64; 3] = [0.70, 0.24, 0.06];

    /// Zipfian constant inside each tier.
    pub const TIER_THETA: f64 = 0.5;

    /// A model over `apps` app ids (at least 1000 so each tier is non-empty).
    pub fn new(apps: u64) -> anyhow::Result<Self> {
        anyhow::ensure!(apps >= 1000, "the stream needs at least 1000 apps");
        let bounds = [0, apps / 1000, apps / 100, apps];
        let mut tiers = Vec::new();
        let mut cumulative = 0.0;
        for (i, share) in Self::TIER_SHARES.iter().enumerate() {
            cumulative += share;
            let (lo, hi) = (bounds[i], bounds[i + 1]);
            tiers.push((
                cumulative,
                lo,
                Zipfian::new(0, hi - lo - 1, Self::TIER_THETA),
            ));
        }
        Ok(AppPopularity { apps, tiers })
    }

    /// Number of app ids.
    pub fn apps(&self) -> u64 {
        self.apps
    }

    /// Popularity rank of the next event's app (0 = most popular).
    pub fn next_rank(&mut self, rng: &mut Rng) -> u64 {
        let u = rng.f64();
        let last = self.tiers.len() - 1;
        for (i, (cumulative, lo, zipf)) in self.tiers.iter_mut().enumerate() {
            if u < *cumulative || i == last {
                return *lo + zipf.next(rng);
            }
        }
        unreachable!("the last tier always matches")
    }

    /// App id of a popularity rank: a permutation of `[0, apps)`.
    pub fn app_id(&self, rank: u64) -> u32 {
        // 7919 is prime and so coprime with any app count it does not divide.
        let mult = if self.apps.is_multiple_of(7919) {
            7927
        } else {
            7919
        };
        ((rank * mult + 12345) % self.apps) as u32
    }

    /// App id of the next event.
    pub fn next_app(&mut self, rng: &mut Rng) -> u32 {
        let rank = self.next_rank(rng);
        self.app_id(rank)
    }
}

/// The stream's clock and key layout.
#[derive(Clone, Debug)]
pub struct Stream {
    /// First event's timestamp, µs.
    pub start_us: u64,
    /// Stream time between consecutive events, in ns (the trace ran at
    /// ~13M events per minute, about 4,615 ns apart).
    pub spacing_ns: u64,
}

impl Default for Stream {
    fn default() -> Self {
        Stream {
            start_us: 1_600_000_000_000_000,
            spacing_ns: 60_000_000_000 / 13_000_000,
        }
    }
}

impl Stream {
    /// Timestamp (µs) of event number `seq`.
    pub fn timestamp(&self, seq: u64) -> u64 {
        self.start_us + seq * self.spacing_ns / 1000
    }

    /// Event number whose timestamp is the latest not after `ts`.
    pub fn seq_at(&self, ts: u64) -> u64 {
        (ts.saturating_sub(self.start_us) * 1000) / self.spacing_ns
    }

    /// Key of event `seq` of app `app`.
    pub fn key(&self, app: u32, seq: u64) -> [u8; STREAM_KEY_SIZE] {
        Self::key_at(app, self.timestamp(seq), seq as u32)
    }

    /// Key for `(app, ts, seq)`.
    pub fn key_at(app: u32, ts: u64, seq: u32) -> [u8; STREAM_KEY_SIZE] {
        let mut k = [0u8; STREAM_KEY_SIZE];
        k[..4].copy_from_slice(&app.to_be_bytes());
        k[4..12].copy_from_slice(&ts.to_be_bytes());
        k[12..].copy_from_slice(&seq.to_be_bytes());
        k
    }

    /// The key prefix of app `app`'s events.
    pub fn app_prefix(app: u32) -> [u8; 4] {
        app.to_be_bytes()
    }

    /// Scan bounds for app `app`'s events from `from_ts` on: `[start, end)`.
    pub fn recent_range(app: u32, from_ts: u64) -> ([u8; STREAM_KEY_SIZE], [u8; 4]) {
        let start = Self::key_at(app, from_ts, 0);
        // The end bound is the next app's 4-byte prefix (app ids < 2^32 - 1).
        (start, (app + 1).to_be_bytes())
    }
}
