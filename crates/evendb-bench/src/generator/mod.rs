//! Request generators: YCSB's Zipfian family, the paper's key distributions,
//! the analytics event stream and the values written.

pub mod keys;
pub mod stream;
pub mod values;
pub mod zipfian;

pub use keys::{Distribution, KeyChooser, KeySpace};
pub use stream::{AppPopularity, Stream};
pub use values::{ValueKind, Values};
pub use zipfian::{fnvhash64, ScrambledZipfian, SkewedLatest, ZipfItems, Zipfian};
