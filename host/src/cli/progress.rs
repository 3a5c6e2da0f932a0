//! What a run shows while it grades: a progress bar with elapsed time, rate, ETA, errors, the
//! judges' requests in flight and retries, and running pass rates on a terminal (cut to its
//! width); plain lines of at most 80 columns when piped; nothing with `--quiet`. The ETA comes
//! from the recent rate (indicatif's weighted estimate on a terminal, the last minute's rate in
//! plain lines), so a run that speeds up or slows down says so.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gavel::grade::Status;
use gavel::input::dataset::RowCount;
use gavel::output::result::SampleResult;
use gavel::plan::Plan;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often a piped run prints a progress line.
const PLAIN_EVERY: Duration = Duration::from_secs(5);
/// The span a plain line's rate and ETA are measured over.
const RECENT: Duration = Duration::from_secs(60);
/// The widest a plain line gets.
const PLAIN_WIDTH: usize = 80;

pub struct Progress {
    mode: Mode,
    count: RowCount,
    done: u64,
    errored: u64,
    started: Instant,
    last_line: Instant,
    /// (when, done) at each plain line within [`RECENT`], oldest first.
    recent: VecDeque<(Instant, u64)>,
    metrics: Vec<Running>,
    plan: Arc<Plan>,
    /// The plan has a judge (asked once, not for every sample).
    judged: bool,
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
    pub fn new(count: RowCount, already: u64, plan: Arc<Plan>, quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            count.begin();
            let bar =
                ProgressBar::with_draw_target(count.now(), ProgressDrawTarget::stderr_with_hz(10));
            let template = if colour(&std::io::stderr()) {
                "{elapsed:>3} {bar:20.green/dim} {pos}/{len} {rate} ETA {eta} {wide_msg}"
            } else {
                "{elapsed:>3} {bar:20} {pos}/{len} {rate} ETA {eta} {wide_msg}"
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
            errored: 0,
            started: Instant::now(),
            last_line: Instant::now(),
            recent: VecDeque::from([(Instant::now(), already)]),
            metrics: plan
                .metrics
                .iter()
                .map(|m| Running {
                    // A suite's metric key can hold anything; it is shown on every line.
                    key: gavel::terminal::printable(m.key),
                    passed: 0,
                    graded: 0,
                })
                .collect(),
            judged: plan.has_judge(),
            plan,
        }
    }

    pub fn record(&mut self, result: &SampleResult) {
        self.done += 1;
        self.errored += u64::from(result.status() == Status::Error);
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
                // A judged sample takes long enough for its counters to be worth reading.
                if self.judged || self.done.is_multiple_of(64) || Some(self.done) == total {
                    bar.set_message(self.rates());
                }
            }
            Mode::Plain => {
                if self.last_line.elapsed() >= PLAIN_EVERY {
                    // A run long enough to report is long enough to pay for counting its rows.
                    self.count.begin();
                    self.last_line = Instant::now();
                    eprintln!("{}", self.line(self.count.now()));
                    self.recent.push_back((self.last_line, self.done));
                    while self
                        .recent
                        .front()
                        .is_some_and(|(at, _)| at.elapsed() > RECENT && self.recent.len() > 2)
                    {
                        self.recent.pop_front();
                    }
                }
            }
        }
    }

    /// Errors, the judges' activity and each metric's pass rate so far.
    fn rates(&self) -> String {
        let mut parts = Vec::new();
        if self.errored > 0 {
            parts.push(format!("{} errored", self.errored));
        }
        if let Some((live, retried)) = self.plan.judge_activity() {
            parts.push(format!("judge {live} live {retried} retried"));
        }
        parts.extend(self.metrics.iter().filter(|m| m.graded > 0).map(|m| {
            format!(
                "{} {:.0}%",
                m.key,
                100.0 * m.passed as f64 / m.graded as f64
            )
        }));
        parts.join("  ")
    }

    /// A plain progress line: counts, the recent rate and the ETA it gives, elapsed time.
    fn line(&self, total: Option<u64>) -> String {
        let (since, done_then) = self.recent.front().copied().unwrap_or((self.started, 0));
        let rate =
            (self.done - done_then.min(self.done)) as f64 / since.elapsed().as_secs_f64().max(1e-9);
        let eta = match total {
            Some(total) if total > self.done && rate > 0.0 => {
                format!(" ETA {}", clock((total - self.done) as f64 / rate))
            }
            _ => String::new(),
        };
        let total = total.map_or_else(|| "?".to_string(), |total| total.to_string());
        let line = format!(
            "{} graded {}/{total} ({rate:.0}/s){eta}  {}",
            clock(self.started.elapsed().as_secs_f64()),
            self.done,
            self.rates()
        );
        super::one_line(line.trim_end(), PLAIN_WIDTH - "...".len())
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

/// Seconds as `m:ss`, or `h:mm:ss` from an hour.
fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gavel::grade::Grade;
    use gavel::input::sample::SampleId;

    /// A piped run's line: elapsed time, counts, the recent rate and its ETA, errors and pass
    /// rates, in 80 columns however many metrics there are.
    #[test]
    fn a_plain_line_fits_80_columns_and_says_how_far_and_how_fast() {
        let dir = tempfile::tempdir().unwrap();
        let graders: String = (0..12)
            .map(|i| {
                format!("  metric_with_a_long_name_{i}:\n    kind: tool\n    function: contains\n")
            })
            .collect();
        std::fs::write(
            dir.path().join("suite.yaml"),
            format!("name: wide\ndataset: data.jsonl\ngraders:\n{graders}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("data.jsonl"), "").unwrap();
        let options = gavel::run::Options {
            cache_dir: None,
            no_judge_cache: false,
            trajectories: Vec::new(),
            serving: false,
        };
        let prepared = gavel::run::prepare(&dir.path().join("suite.yaml"), &options)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let mut progress = Progress::new(RowCount::known(10), 0, prepared.plan.clone(), false);
        assert!(matches!(progress.mode, Mode::Plain), "tests run piped");
        for i in 0..3 {
            let grades = prepared
                .plan
                .metrics
                .iter()
                .map(|m| (m.key.to_string().into(), Grade::scored(1.0, "")))
                .collect();
            progress.record(&SampleResult {
                sample_id: SampleId::Int(i),
                grades,
                reward: None,
                error: None,
            });
        }
        let line = progress.line(Some(10));
        assert!(line.chars().count() <= PLAIN_WIDTH, "{line}");
        assert!(line.starts_with("0:00 graded 3/10 ("), "{line}");
        assert!(line.contains("ETA 0:00"), "{line}");
        assert!(line.contains("metric_with_a_long_name_0 100%"), "{line}");
        assert!(line.ends_with("..."), "{line}");
    }

    #[test]
    fn clock_reads_as_minutes_then_hours() {
        assert_eq!(clock(0.4), "0:00");
        assert_eq!(clock(65.0), "1:05");
        assert_eq!(clock(3725.0), "1:02:05");
    }
}
