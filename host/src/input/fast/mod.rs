//! The fast path of reading rows: a scanner over a row's bytes, which the row's reader and the
//! trajectory's in-place readers (`input::trajectory`) are built on.

pub mod scan;
