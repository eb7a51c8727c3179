//! Memory: the one budget, and what draws from it besides funk metadata —
//! the munk cache, the row cache and Bloom filters.

pub(crate) mod bloom;
pub(crate) mod budget;
pub(crate) mod munks;
pub(crate) mod row;
pub(crate) mod trim;
