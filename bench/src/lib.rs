//! The peer benchmark's Rust side: the synthetic workload generator (`bench-gen`) and the
//! parse-only floor (`bench-floor`). `bench/run.sh` drives them together with the peers.

pub mod files;
pub mod workload;
