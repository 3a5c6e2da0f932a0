//! What a run writes: results, the summary and JUnit.

pub mod gate;
pub mod junit;
pub mod result;
pub mod summary;
pub mod diff;
pub mod report;
