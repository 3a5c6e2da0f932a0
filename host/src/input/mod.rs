//! Reading rows: dataset lines (JSONL, or CSV made into JSON lines), samples and their recorded
//! runs in canonical form.

pub mod csv_rows;
pub mod dataset;
pub mod evaldeck_cases;
pub mod fast;
pub mod id_clash;
pub mod inspect_log;
pub mod otlp_file;
pub mod sample;
pub mod select;
pub mod session_files;
pub mod shard;
pub mod source;
pub mod trajectory;
