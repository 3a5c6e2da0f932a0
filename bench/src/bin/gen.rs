//! `bench-gen OUT_DIR SAMPLES [--seed N] [--parts letta,cached,evaldeck]`: writes the synthetic
//! workload (see `gavel_bench::files` for the layout).

use std::path::PathBuf;
use std::process::ExitCode;

use gavel_bench::files::{Parts, write_workload};

const USAGE: &str = "usage: bench-gen OUT_DIR SAMPLES [--seed N] [--parts letta,cached,evaldeck]";

struct Args {
    out: PathBuf,
    samples: u64,
    seed: u64,
    parts: Parts,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut positional = Vec::new();
    let mut seed = 1234;
    let mut parts = Parts::ALL;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seed" => {
                let value = args.next().ok_or("--seed needs a value")?;
                seed = value
                    .parse()
                    .map_err(|_| format!("--seed: `{value}` is not a non-negative integer"))?;
            }
            "--parts" => parts = Parts::parse(&args.next().ok_or("--parts needs a value")?)?,
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            _ => positional.push(arg),
        }
    }
    let [out, samples] = <[String; 2]>::try_from(positional)
        .map_err(|_| "expected OUT_DIR and SAMPLES".to_string())?;
    let samples = samples
        .parse()
        .map_err(|_| format!("SAMPLES: `{samples}` is not a non-negative integer"))?;
    Ok(Args {
        out: PathBuf::from(out),
        samples,
        seed,
        parts,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("bench-gen: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match write_workload(&args.out, args.samples, args.seed, args.parts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-gen: writing {}: {e}", args.out.display());
            ExitCode::FAILURE
        }
    }
}
