//! Request generators: YCSB's Zipfian family, the paper's key distributions
//! and the analytics event stream.

pub mod keys;
pub mod stream;
pub mod zipfian;

pub use keys::{Distribution, KeyChooser, KeySpace};
pub use stream::{AppPopularity, Stream};
pub use zipfian::{fnvhash64, ScrambledZipfian, SkewedLatest, ZipfItems, Zipfian};
