//! What a run writes: results, the summary and JUnit.

pub mod diff;
pub mod gate;
pub mod junit;
pub mod record;
pub mod report;
pub mod result;
pub mod summary;
