//! `bench-floor DATASET.jsonl`: the parse-only floor. Streams the file through gavel's own
//! dataset reader (`Items`) and row parser (`RowParser`: each row into a `Sample`, its
//! trajectory converted to the canonical model, format auto-detected as `gavel run` does) on one
//! thread, and does nothing else: no grading, no output. Prints `{"rows", "events", "seconds"}`.

use std::hint::black_box;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use gavel::input::dataset::{Items, Reading, RowParser};

/// The allocator `gavel` itself runs with, so that the floor measures the same parsing.
#[global_allocator]
static ALLOCATOR: gavel::alloc::MiMalloc = gavel::alloc::MiMalloc;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: bench-floor DATASET.jsonl");
        return ExitCode::from(2);
    };
    match floor(Path::new(&path)) {
        Ok((rows, events, seconds)) => {
            println!("{{\"rows\": {rows}, \"events\": {events}, \"seconds\": {seconds}}}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("bench-floor: {message}");
            ExitCode::FAILURE
        }
    }
}

fn floor(path: &Path) -> Result<(u64, u64, f64), String> {
    let start = Instant::now();
    let mut items = Items::open(path, &[], Reading::default()).map_err(|e| e.to_string())?;
    let base_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let parser = RowParser::new(None, base_dir);
    let (mut rows, mut events) = (0u64, 0u64);
    while let Some(item) = items.next_item() {
        let item = item.map_err(|e| e.to_string())?;
        let sample = parser.parse(&item).map_err(|e| e.to_string())?;
        events += sample.trajectory().events().count() as u64;
        black_box(&sample);
        rows += 1;
    }
    Ok((rows, events, start.elapsed().as_secs_f64()))
}
