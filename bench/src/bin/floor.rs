//! `bench-floor DATASET.jsonl`: the parse-only floor. Reads the file line by line, parses each
//! row into gavel's `RawRow` and converts its trajectory to the canonical model (format
//! auto-detected, as `gavel run` does), and does nothing else: no grading, no output. Prints
//! `{"rows", "events", "seconds"}`.

use std::fs::File;
use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::process::ExitCode;
use std::time::Instant;

use gavel::sample::RawRow;
use gavel::trajectory::convert;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: bench-floor DATASET.jsonl");
        return ExitCode::from(2);
    };
    match floor(&path) {
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

fn floor(path: &str) -> Result<(u64, u64, f64), String> {
    let start = Instant::now();
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    let (mut rows, mut events, mut number) = (0u64, 0u64, 0u64);
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .map_err(|e| format!("{path}:{}: {e}", number + 1))?;
        if read == 0 {
            break;
        }
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        let row: RawRow = serde_json::from_str(&line)
            .map_err(|e| format!("{path}:{number}:{}: {e}", e.column()))?;
        if let Some(raw) = row.trajectory {
            let trajectory =
                convert(raw, None).map_err(|e| format!("{path}:{number}: trajectory: {e}"))?;
            events += trajectory.events().count() as u64;
            black_box(&trajectory);
        }
        black_box(&row);
        rows += 1;
    }
    Ok((rows, events, start.elapsed().as_secs_f64()))
}
