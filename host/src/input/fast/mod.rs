//! The fast path of reading rows: a scanner over a row's bytes and the trajectory read in place.

pub mod inline;
pub mod scan;
