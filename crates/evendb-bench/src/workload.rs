//! Workload definitions: the operation mix of each YCSB core workload, the
//! paper's additions (P, E10/E100/E1000) and the analytics stream.

use fastrand::Rng;

use crate::generator::Distribution;

/// A named workload.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
pub enum Workload {
    /// 50% get, 50% update.
    #[value(name = "A", alias = "a")]
    A,
    /// 95% get, 5% update.
    #[value(name = "B", alias = "b")]
    B,
    /// 100% get.
    #[value(name = "C", alias = "c")]
    C,
    /// 95% get, 5% insert; reads favour recent inserts.
    #[value(name = "D", alias = "d")]
    D,
    /// 95% scan of 1..=100 records, 5% insert.
    #[value(name = "E", alias = "e")]
    E,
    /// 50% get, 50% read-modify-write.
    #[value(name = "F", alias = "f")]
    F,
    /// 100% put (ingestion).
    #[value(name = "P", alias = "p")]
    P,
    /// 95% scan of 1..=10 records, 5% insert.
    #[value(name = "E10", alias = "e10")]
    E10,
    /// 95% scan of 1..=100 records, 5% insert.
    #[value(name = "E100", alias = "e100")]
    E100,
    /// 95% scan of 1..=1000 records, 5% insert.
    #[value(name = "E1000", alias = "e1000")]
    E1000,
    /// The analytics stream: time-ordered ingestion, then 95% scans of one
    /// app's recent events and 5% puts.
    #[value(name = "stream")]
    Stream,
}

/// One operation kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Point read.
    Get,
    /// Overwrite of an existing record.
    Update,
    /// Write of a new record.
    Insert,
    /// Range read.
    Scan,
    /// Get, then put of a new value under the same key.
    Rmw,
    /// Any put in the load phase or workload P.
    Put,
}

impl Op {
    /// Every kind, in report order.
    pub const ALL: [Op; 6] = [Op::Get, Op::Update, Op::Insert, Op::Scan, Op::Rmw, Op::Put];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Update => "update",
            Op::Insert => "insert",
            Op::Scan => "scan",
            Op::Rmw => "rmw",
            Op::Put => "put",
        }
    }

    /// Whether the operation writes (and so goes into write batches).
    pub fn writes(self) -> bool {
        matches!(self, Op::Update | Op::Insert | Op::Rmw | Op::Put)
    }

    /// Position in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Proportions of each operation; they sum to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    pub get: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub rmw: f64,
    pub put: f64,
}

impl Mix {
    const ZERO: Mix = Mix {
        get: 0.0,
        update: 0.0,
        insert: 0.0,
        scan: 0.0,
        rmw: 0.0,
        put: 0.0,
    };

    /// Draws the next operation.
    pub fn choose(&self, rng: &mut Rng) -> Op {
        let mut u = rng.f64();
        for (p, op) in [
            (self.get, Op::Get),
            (self.update, Op::Update),
            (self.insert, Op::Insert),
            (self.scan, Op::Scan),
            (self.rmw, Op::Rmw),
        ] {
            if u < p {
                return op;
            }
            u -= p;
        }
        if self.put > 0.0 {
            Op::Put
        } else {
            Op::Get
        }
    }

    /// Share of `op` in the mix.
    pub fn share(&self, op: Op) -> f64 {
        match op {
            Op::Get => self.get,
            Op::Update => self.update,
            Op::Insert => self.insert,
            Op::Scan => self.scan,
            Op::Rmw => self.rmw,
            Op::Put => self.put,
        }
    }
}

impl Workload {
    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "A",
            Workload::B => "B",
            Workload::C => "C",
            Workload::D => "D",
            Workload::E => "E",
            Workload::F => "F",
            Workload::P => "P",
            Workload::E10 => "E10",
            Workload::E100 => "E100",
            Workload::E1000 => "E1000",
            Workload::Stream => "stream",
        }
    }

    /// The operation mix.
    pub fn mix(self) -> Mix {
        match self {
            Workload::A => Mix {
                get: 0.5,
                update: 0.5,
                ..Mix::ZERO
            },
            Workload::B => Mix {
                get: 0.95,
                update: 0.05,
                ..Mix::ZERO
            },
            Workload::C => Mix {
                get: 1.0,
                ..Mix::ZERO
            },
            Workload::D => Mix {
                get: 0.95,
                insert: 0.05,
                ..Mix::ZERO
            },
            Workload::E | Workload::E10 | Workload::E100 | Workload::E1000 | Workload::Stream => {
                Mix {
                    scan: 0.95,
                    insert: 0.05,
                    ..Mix::ZERO
                }
            }
            Workload::F => Mix {
                get: 0.5,
                rmw: 0.5,
                ..Mix::ZERO
            },
            Workload::P => Mix {
                put: 1.0,
                ..Mix::ZERO
            },
        }
    }

    /// Longest scan; scan lengths are uniform in `[1, max]`.
    pub fn max_scan_length(self) -> usize {
        match self {
            Workload::E10 => 10,
            Workload::E1000 | Workload::Stream => 1000,
            _ => 100,
        }
    }

    /// YCSB's request distribution for the workload.
    pub fn default_distribution(self) -> Distribution {
        match self {
            Workload::D => Distribution::Latest,
            _ => Distribution::ZipfSimple,
        }
    }

    /// Fraction of operations that add records (sizes the key space).
    pub fn insert_share(self) -> f64 {
        self.mix().insert
    }
}
