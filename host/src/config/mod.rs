//! What a suite asks for, read from its file: the suite, its gate and its reward.

pub mod gate;
pub mod position;
pub mod reward;
pub mod suite;
