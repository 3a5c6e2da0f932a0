//! What a run shows while it grades: a progress bar with rate, ETA and running pass rates on a
//! terminal; plain lines when piped; nothing with `--quiet`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use gavel::grade::Status;
use gavel::input::dataset::RowCount;
use gavel::output::result::SampleResult;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often a piped run prints a progress line.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    mode: Mode,
    count: RowCount,
    done: u64,
    started: Instant,
    last_line: Instant,
    metrics: Vec<Running>,
}

enum Mode {
    Quiet,
    Plain,
    Bar(ProgressBar),
}

struct Running {
    key: String,
    passed: u64,
    graded: u64,
}

/// Whether a stream may be coloured: a terminal, and `NO_COLOR` unset or empty.
pub fn colour(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `text` in the ANSI colour `code` (31 red, 32 green) when stdout may be coloured.
pub fn paint(text: &str, code: u8) -> String {
    if colour(&std::io::stdout()) {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

impl Progress {
    pub fn new(count: RowCount, already: u64, metric_keys: &[String], quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            count.begin();
            let bar =
                ProgressBar::with_draw_target(count.now(), ProgressDrawTarget::stderr_with_hz(10));
            let template = if colour(&std::io::stderr()) {
                "{bar:30.green/dim} {pos}/{len} {percent}% {rate} ETA {eta} {msg}"
            } else {
                "{bar:30} {pos}/{len} {percent}% {rate} ETA {eta} {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                // Whole samples per second: indicatif's own `{per_sec}` prints four decimals.
                let rate = |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                    let _ = write!(out, "{:.0}/s", state.per_sec());
                };
                bar.set_style(style.progress_chars("=> ").with_key("rate", rate));
            }
            bar.set_position(already);
            Mode::Bar(bar)
        } else {
            Mode::Plain
        };
        Progress {
            mode,
            count,
            done: already,
            started: Instant::now(),
            last_line: Instant::now(),
            metrics: metric_keys
                .iter()
                .map(|k| Running {
                    key: k.clone(),
                    passed: 0,
                    graded: 0,
                })
                .collect(),
        }
    }

    pub fn record(&mut self, result: &SampleResult) {
        self.done += 1;
        for (running, (_, grade)) in self.metrics.iter_mut().zip(&result.grades) {
            if grade.status != Status::Skip {
                running.graded += 1;
                running.passed += u64::from(grade.status == Status::Pass);
            }
        }
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => {
                let total = self.count.now();
                if let Some(total) = total.filter(|_| bar.length().is_none()) {
                    bar.set_length(total);
                }
                bar.inc(1);
                if self.done.is_multiple_of(64) || Some(self.done) == total {
                    bar.set_message(self.rates());
                }
            }
            Mode::Plain => {
                if self.last_line.elapsed() >= PLAIN_EVERY {
                    // A run long enough to report is long enough to pay for counting its rows.
                    self.count.begin();
                    self.last_line = Instant::now();
                    eprintln!("{}", self.line(self.count.now()));
                }
            }
        }
    }

    fn rates(&self) -> String {
        self.metrics
            .iter()
            .filter(|m| m.graded > 0)
            .map(|m| {
                format!(
                    "{} {:.0}%",
                    m.key,
                    100.0 * m.passed as f64 / m.graded as f64
                )
            })
            .collect::<Vec<_>>()
            .join("  ")
    }

    fn line(&self, total: Option<u64>) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        let total = total.map_or_else(|| "?".to_string(), |total| total.to_string());
        format!(
            "graded {}/{total} ({:.0}/s)  {}",
            self.done,
            self.done as f64 / secs,
            self.rates()
        )
    }

    /// Ctrl-C was pressed: says so on its own line, even with `--quiet`, since the run may
    /// still wait for calls in flight.
    pub fn stopping(&mut self) {
        let note = "stopping: no new samples; waiting for those in flight \
                    (Ctrl-C again quits at once, keeping every finished result)";
        match &self.mode {
            Mode::Bar(bar) => bar.println(note),
            Mode::Quiet | Mode::Plain => eprintln!("{note}"),
        }
    }

    /// Ends the display; `complete` when every selected item was graded.
    pub fn finish(&mut self, complete: bool) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.finish_and_clear(),
            // A plain run's last line shows the total: all that was graded, when nothing was
            // left, else the count, whenever it comes in.
            Mode::Plain => {
                let total = if complete {
                    Some(self.done)
                } else {
                    self.count.wait()
                };
                eprintln!("{}", self.line(total));
            }
        }
    }
}
