//! Reading rows: dataset lines, samples and their recorded runs in canonical form.

pub mod dataset;
pub mod fast;
pub mod sample;
pub mod trajectory;
