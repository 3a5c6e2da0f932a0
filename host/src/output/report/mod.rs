//! `gavel report`: one self-contained HTML file that shows a run: the summary with charts, a
//! table of the samples to filter and sort, and each sample with its input, ground truth,
//! grades and trajectory as a conversation.
//!
//! `results.jsonl` holds grades only; the input, ground truth, trajectory and memory come from
//! the dataset rows, read again with the run's own readers ([`crate::dataset`], the canonical
//! [`crate::input::trajectory::Trajectory`]). `gavel run` records where they are in `run.json` beside
//! the results ([`RunRecord`]); a results folder without it can be given the suite instead.
//!
//! Size: a report holds every aggregate of the run, but the detail of at most
//! [`Options::limit`] samples, the failing and errored ones first, so that a run of a million
//! samples gives a report that opens like one of ten thousand.

pub mod svg;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use crate::fsio;
use crate::grade::{Grade, GradeKey, Status};
use crate::input::dataset::SourceError;
use crate::input::dataset::{Items, Reading, RowParser};
use crate::input::sample::SampleId;
use crate::input::select::{Filter, Selected, Selection};
use crate::output::diff::{Diff, decimals};
use crate::output::junit::attribute as escape;
use crate::output::record::{RUN_FILE, RunRecord};
use crate::output::result::SampleResult;
use crate::output::result::{ResultsError, read_results};
use crate::output::summary::{Aggregator, Summary};

/// The page: styles and script, with the places the data goes.
const PAGE: &str = include_str!("page.html");

/// How a report is made.
#[derive(Debug, Clone)]
pub struct Options {
    /// Samples shown in detail at most: the failing and errored first, then the passing, each in
    /// run order.
    pub limit: usize,
    /// What the page is called; the suite's name by default.
    pub title: Option<String>,
}

/// The default [`Options::limit`]: a report of that many samples of a few KiB each opens in
/// about a second.
pub const DEFAULT_LIMIT: usize = 10_000;

/// A written report and what was left out of it.
pub struct Report {
    pub html: String,
    pub rows: u64,
    pub shown: usize,
    /// What the page lacks, for the user to see: the results of an unfinished run are only
    /// part of it, and detail is missing (no dataset found, rows that changed).
    pub notices: Vec<String>,
}

/// A result kept for the page, with its position in `results.jsonl` (0-based).
struct Kept {
    seq: u64,
    result: SampleResult,
}

/// Why a results folder has no report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: no such file; give the folder `gavel run` wrote (its -o)", .0.display())]
    NoResults(PathBuf),
    #[error("{}:{}: not JSON: {source}", path.display(), source.line())]
    SummaryNotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: cannot read: {source}", path.display())]
    SummaryUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Count(#[from] SourceError),
}

/// Makes the report of the results folder `dir`. `inputs` says where the samples are (else
/// only grades are shown); `diff` adds a comparison with an earlier run.
pub fn build(
    dir: &Path,
    inputs: Option<&RunRecord>,
    diff: Option<&Diff>,
    options: &Options,
) -> Result<Report, ReportError> {
    let results_path = dir.join(super::RESULTS_FILE);
    if !results_path.exists() {
        return Err(ReportError::NoResults(results_path));
    }
    let summary_file = read_summary(dir)?;
    let mut notices: Vec<String> = inputs
        .and_then(|record| record.unfinished_notice(dir))
        .into_iter()
        .collect();
    let keys = metric_keys(summary_file.as_ref(), &results_path)?;

    // One pass: the aggregates over every row, and the rows to show.
    let rows = crate::input::dataset::count_rows(&results_path)?;
    let mut aggregator = Aggregator::streaming(
        keys.iter().cloned().map(GradeKey::Owned).collect(),
        move || rows,
    );
    let (mut failing, mut passing) = (Vec::new(), Vec::new());
    let mut seq = 0u64;
    read_results(&results_path, |result| {
        aggregator.add(&result);
        let kept = if result.status() == Status::Pass {
            &mut passing
        } else {
            &mut failing
        };
        if kept.len() < options.limit {
            kept.push(Kept {
                seq,
                result: shown(result),
            });
        }
        seq += 1;
    })?;
    aggregator.regroup_file(&results_path)?;
    let summary = aggregator.finish();
    passing.truncate(options.limit.saturating_sub(failing.len()));
    let mut kept = failing;
    kept.append(&mut passing);
    kept.sort_by_key(|k| k.seq);
    if (kept.len() as u64) < seq {
        notices.push(format!(
            "{} of {seq} samples are shown in detail (failing and errored first); every \
             statistic counts all of them; `gavel report --limit N` shows more",
            kept.len()
        ));
    }

    let samples = match inputs {
        Some(inputs) => read_samples(inputs, &kept, &mut notices),
        None => {
            notices.push(format!(
                "no {RUN_FILE} in {}: inputs and trajectories are not shown; give the suite \
                 with --suite",
                dir.display()
            ));
            vec![None; kept.len()]
        }
    };

    let title = options
        .title
        .clone()
        .or_else(|| inputs.map(|i| i.name.clone()))
        .unwrap_or_else(|| dir.display().to_string());
    let gate = summary_file.as_ref().and_then(|s| s.get("gate")).cloned();
    let mut body = String::new();
    summary_html(&mut body, &summary, gate.as_ref(), seq);
    if let Some(diff) = diff {
        diff_html(&mut body, diff, &kept);
    }
    let table = table_data(&keys, &kept, &samples);
    let meta = json!({
        "metrics": keys,
        "rows": seq,
        "shown": kept.len(),
        "notices": notices,
        "results": results_path.display().to_string(),
    });
    let details: Vec<Value> = kept
        .iter()
        .zip(samples)
        .map(|(k, sample)| detail(k, sample))
        .collect();
    let title = escape(&title);
    let html = fill(
        PAGE,
        &[
            ("{{TITLE}}", &title),
            ("{{TITLE}}", &title),
            ("{{BODY}}", &body),
            ("{{META}}", &script_json(&meta)),
            ("{{ROWS}}", &script_json(&table)),
            ("{{DETAILS}}", &script_json(&Value::Array(details))),
        ],
    );
    Ok(Report {
        html,
        rows: seq,
        shown: kept.len(),
        notices,
    })
}

/// The most of one text of a grade (its rationale, its submission, the JSON of its metadata,
/// `expected` or `actual`) or of a sample's error that the page holds, in bytes: a grader's text
/// can be as long as a line of `results.jsonl`, and a page of such texts would not open.
const TEXT_SHOWN: usize = 16 << 10;
/// The most of a dataset row (its input, trajectory, memory, ...) that the page holds, in bytes.
const ROW_SHOWN: usize = 1 << 20;

/// `result` as the page shows it: each text longer than [`TEXT_SHOWN`] cut there, each JSON
/// value longer replaced by a note saying so. Cut as it is read, so that the report holds no
/// more than the page.
fn shown(mut result: SampleResult) -> SampleResult {
    for (_, grade) in &mut result.grades {
        if let Some(rationale) = cut(&grade.rationale) {
            grade.rationale = rationale.into();
        }
        if let Some(submission) = cut(&grade.submission) {
            grade.submission = submission;
        }
        let details = grade.details();
        let large = |value: &Value| json_len(value) > TEXT_SHOWN;
        let metadata = Value::Object(details.metadata.clone());
        if large(&metadata)
            || details.expected.as_ref().is_some_and(large)
            || details.actual.as_ref().is_some_and(large)
        {
            let mut details = details.clone();
            if large(&metadata) {
                details.metadata = serde_json::Map::from_iter([(
                    "not shown".to_string(),
                    not_shown(json_len(&metadata)),
                )]);
            }
            for value in [&mut details.expected, &mut details.actual] {
                if let Some(v) = value.as_mut().filter(|v| large(v)) {
                    *v = not_shown(json_len(v));
                }
            }
            *grade = std::mem::replace(grade, Grade::pass("")).with_details(details);
        }
    }
    if let Some(error) = &mut result.error
        && let Some(message) = cut(&error.message)
    {
        error.message = message;
    }
    result
}

/// A sample's id as the page shows it: a string id cut as [`cut`] cuts a text. Only the page's
/// copies are cut; the results keep the whole id, which pairs results with rows and runs.
fn id_shown(id: &SampleId) -> Value {
    match id {
        SampleId::Str(text) => json!(cut(text).as_deref().unwrap_or(text)),
        SampleId::Int(n) => json!(n),
    }
}

/// `text` cut to [`TEXT_SHOWN`] bytes with a note of what is left out, when it is longer.
fn cut(text: &str) -> Option<String> {
    if text.len() <= TEXT_SHOWN {
        return None;
    }
    let mut end = TEXT_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!(
        "{}… ({} more bytes not shown: results.jsonl has the whole text)",
        &text[..end],
        text.len() - end
    ))
}

/// What stands for a JSON value of `len` bytes that the page does not hold.
fn not_shown(len: usize) -> Value {
    Value::String(format!(
        "not shown: {len} bytes of JSON, more than the report shows ({TEXT_SHOWN}); \
         results.jsonl has it"
    ))
}

/// The length of `value` as compact JSON, counted without writing it.
fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The template with each marker replaced by its value, the markers met in the template's
/// order: a value is never searched for markers, so no text of the run can move one.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    for (marker, value) in values {
        let (before, after) = rest
            .split_once(marker)
            .expect("the page has each marker, in this order");
        out.push_str(before);
        out.push_str(value);
        rest = after;
    }
    out.push_str(rest);
    out
}

fn read_summary(dir: &Path) -> Result<Option<Value>, ReportError> {
    let path = dir.join(super::SUMMARY_FILE);
    match fsio::read_text(&path, fsio::cap::DOCUMENT) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|source| ReportError::SummaryNotJson { path, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ReportError::SummaryUnreadable { path, source }),
    }
}

/// The metrics in the suite's order: summary.json's, else the first result's that has grades.
fn metric_keys(summary: Option<&Value>, results: &Path) -> Result<Vec<String>, ResultsError> {
    if let Some(Value::Object(metrics)) = summary.and_then(|s| s.get("metrics")) {
        return Ok(metrics.keys().cloned().collect());
    }
    let mut keys = Vec::new();
    read_results(results, |result| {
        for (key, _) in &result.grades {
            if !keys.iter().any(|k: &String| k == key) {
                keys.push(key.to_string());
            }
        }
    })?;
    Ok(keys)
}

/// What the page shows of a dataset row.
#[derive(Clone, Serialize)]
struct SampleView {
    file: String,
    line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ground_truth: Option<Value>,
    tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trajectory: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<Value>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    metadata: serde_json::Map<String, Value>,
    /// Why the row could not be shown (it no longer parses, or it is not the row graded).
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// The dataset rows of the kept results, read as `gavel run` read them: the same files, the
/// same selection, in the same order, so that the n-th selected item is the n-th result.
fn read_samples(
    inputs: &RunRecord,
    kept: &[Kept],
    notices: &mut Vec<String>,
) -> Vec<Option<SampleView>> {
    let mut views = vec![None; kept.len()];
    let Some(last) = kept.last().map(|k| k.seq) else {
        return views;
    };
    let reading = Reading {
        format: inputs.format,
        sample_per: inputs.sample_per,
    };
    let items = match Items::open(&inputs.dataset, &inputs.trajectories, reading) {
        Ok(items) => items,
        Err(e) => {
            notices.push(format!(
                "the samples cannot be read ({e}): inputs and trajectories are not shown"
            ));
            return views;
        }
    };
    let base_dir = inputs
        .suite
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let parser = RowParser::new(inputs.format, base_dir);
    let mut selected = Selected::new(
        items,
        Selection {
            max_samples: inputs.max_samples,
            filters: inputs.filters.iter().map(|f| Filter::parse(f)).collect(),
            skip: 0,
            shard: inputs.shard,
        },
    );
    let mut mismatched = 0u64;
    let mut wanted = kept.iter().zip(views.iter_mut()).peekable();
    let mut seq = 0u64;
    while seq <= last {
        let Some(item) = selected.next_item() else {
            break;
        };
        let Some((k, view)) = wanted.next_if(|(k, _)| k.seq == seq) else {
            seq += 1;
            continue;
        };
        seq += 1;
        let item = match item {
            Ok(item) => item,
            Err(e) => {
                *view = Some(SampleView::problem(e.to_string()));
                continue;
            }
        };
        let file = item
            .run
            .as_ref()
            .unwrap_or(&item.row)
            .file
            .display()
            .to_string();
        *view = Some(match parser.parse(&item) {
            Ok(sample) if sample.id() == k.result.sample_id => {
                let view = SampleView::of(&sample, file);
                match json_len(&view) {
                    len if len > ROW_SHOWN => SampleView {
                        file: view.file,
                        line: view.line,
                        ..SampleView::problem(format!(
                            "this row is {len} bytes as JSON, more than the report shows of a \
                             row ({ROW_SHOWN}): its input, trajectory and memory are not shown"
                        ))
                    },
                    _ => view,
                }
            }
            Ok(sample) => {
                mismatched += 1;
                SampleView {
                    problem: Some(format!(
                        "the row read at this position has id {}, not {}: the dataset changed \
                         after the run",
                        sample.id(),
                        k.result.sample_id
                    )),
                    ..SampleView::problem(String::new())
                }
            }
            Err(e) => SampleView::problem(e.to_string()),
        });
    }
    if mismatched > 0 {
        notices.push(format!(
            "{mismatched} shown samples are not at their place in {}: it changed after the run, \
             and their inputs are not shown",
            inputs.dataset.display()
        ));
    }
    views
}

impl SampleView {
    fn problem(message: String) -> SampleView {
        SampleView {
            file: String::new(),
            line: 0,
            input: None,
            ground_truth: None,
            tags: Vec::new(),
            trajectory: None,
            memory: None,
            expected: None,
            metadata: serde_json::Map::new(),
            problem: (!message.is_empty()).then_some(message),
        }
    }

    fn of(sample: &crate::input::sample::Sample, file: String) -> SampleView {
        SampleView {
            file,
            line: sample.line,
            input: sample.input.as_ref().map(to_value),
            ground_truth: sample.ground_truth.as_ref().map(to_value),
            tags: sample.tags.clone(),
            trajectory: sample.trajectory.as_ref().map(to_value),
            memory: sample.agent_state.as_ref().map(|m| to_value(&m.blocks)),
            expected: sample.expected.as_deref().map(to_value),
            metadata: sample.metadata.clone(),
            problem: None,
        }
    }
}

fn to_value<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What the table needs of each shown sample: `[seq, id, status, [[score, status] per metric],
/// tags, why, search text]`.
fn table_data(keys: &[String], kept: &[Kept], samples: &[Option<SampleView>]) -> Value {
    let rows = kept
        .iter()
        .zip(samples)
        .map(|(k, sample)| {
            let r = &k.result;
            let grades: Vec<Value> = keys
                .iter()
                .map(|key| match r.grade(key) {
                    Some(g) => json!([finite(g.score), g.status.as_str()]),
                    None => Value::Null,
                })
                .collect();
            let why = match &r.error {
                Some(error) => error.message.clone(),
                None => r
                    .grades
                    .iter()
                    .find(|(_, g)| matches!(g.status, Status::Fail | Status::Error))
                    .map(|(key, g)| format!("{key}: {}", g.rationale))
                    .unwrap_or_default(),
            };
            let id = id_shown(&r.sample_id);
            let mut text = format!(
                "{}\n{why}",
                id.as_str().map_or(id.to_string(), str::to_owned)
            );
            if let Some(input) = sample.as_ref().and_then(|s| s.input.as_ref()) {
                let input = match input {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                text.push('\n');
                text.extend(input.chars().take(SEARCHED_INPUT));
            }
            for (_, g) in &r.grades {
                text.push('\n');
                text.push_str(&g.rationale);
            }
            json!([
                k.seq,
                id,
                r.status().as_str(),
                grades,
                sample.as_ref().map(|s| s.tags.clone()).unwrap_or_default(),
                why,
                text.to_lowercase(),
            ])
        })
        .collect();
    Value::Array(rows)
}

/// How much of an input the table's text filter searches.
const SEARCHED_INPUT: usize = 400;

fn finite(value: f64) -> Value {
    if value.is_finite() {
        json!(value)
    } else {
        Value::Null
    }
}

/// The sample view's data: the grades and the dataset row.
fn detail(kept: &Kept, sample: Option<SampleView>) -> Value {
    let r = &kept.result;
    let grades: Vec<Value> = r
        .grades
        .iter()
        .map(|(key, grade)| {
            let mut value = serde_json::to_value(grade).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.insert("key".into(), json!(key));
                map.insert("score".into(), finite(grade.score));
            }
            value
        })
        .collect();
    json!({
        "grades": grades,
        "reward": r.reward.map(finite),
        "error": r.error,
        "sample": sample,
    })
}

/// JSON for a `<script type="application/json">`: `<` written as `\u003c`, so that no text in
/// it can end the element (`</script>`) or open a comment.
fn script_json(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    text.replace('<', "\\u003c")
}

fn fmt(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), |v| decimals(v, false))
}

fn interval(value: Option<[f64; 2]>) -> String {
    value.map_or_else(
        || "–".into(),
        |[a, b]| format!("[{}, {}]", decimals(a, false), decimals(b, false)),
    )
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{:.1}%", 100.0 * v))
}

/// The summary section: counts, the metrics table, the gate, the charts.
fn summary_html(out: &mut String, summary: &Summary, gate: Option<&Value>, rows: u64) {
    let c = &summary.counts;
    let _ = write!(
        out,
        r#"<section id="summary"><div class="counts"><span class="count" id="count-total"><b>{}</b> samples</span><span class="count pass" id="count-passed"><b>{}</b> passed</span><span class="count fail" id="count-failed"><b>{}</b> failed</span><span class="count error" id="count-errored"><b>{}</b> errored</span>"#,
        c.total, c.passed, c.failed, c.errored
    );
    if c.samples != rows {
        let _ = write!(
            out,
            r#"<span class="count">{} distinct ids</span>"#,
            c.samples
        );
    }
    out.push_str("</div>");
    match gate {
        Some(gate) if !gate.is_null() => {
            let passed = gate.get("passed").and_then(Value::as_bool) == Some(true);
            let message = gate.get("message").and_then(Value::as_str).unwrap_or("");
            // The summary's message opens with the verdict the page says in bold already.
            let reason = crate::output::gate::reason(message);
            let _ = write!(
                out,
                r#"<p id="gate" class="gate {}"><b>gate {}</b>: <bdi>{}</bdi></p>"#,
                if passed { "pass" } else { "fail" },
                if passed { "passed" } else { "FAILED" },
                escape(reason)
            );
        }
        _ => out.push_str(r#"<p id="gate" class="gate none">no gate</p>"#),
    }
    out.push_str(
        r#"<table id="metrics"><thead><tr><th>metric</th><th>n</th><th>mean</th><th>95% CI (mean)</th><th>pass rate</th><th>95% CI (pass rate)</th><th>errored</th><th>skipped</th></tr></thead><tbody>"#,
    );
    for (key, m) in &summary.metrics {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(key),
            m.stats.n,
            fmt(m.stats.mean),
            interval(m.stats.ci95),
            percent(m.pass_rate),
            interval(m.pass_rate_ci95),
            m.errored,
            m.skipped
        );
    }
    out.push_str("</tbody></table>");
    if let Some(reward) = &summary.reward {
        let _ = write!(
            out,
            r#"<p id="reward">reward: mean {} {} (n {})</p>"#,
            fmt(reward.mean),
            interval(reward.ci95),
            reward.n
        );
    }
    out.push_str(r#"<div class="charts">"#);
    for (key, m) in &summary.metrics {
        let _ = write!(
            out,
            r#"<figure><figcaption>{}</figcaption>{}</figure>"#,
            escape(key),
            svg::histogram(key, m.scores())
        );
    }
    for (key, m) in &summary.metrics {
        if let (Some(at), Some(hat)) = (&m.pass_at_k, &m.pass_hat_k) {
            let points =
                |map: &BTreeMap<u32, f64>| map.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>();
            let _ = write!(
                out,
                r#"<figure class="pass-at-k"><figcaption>{} over repeated runs</figcaption>{}</figure>"#,
                escape(key),
                svg::pass_at_k(key, &points(at), &points(hat))
            );
        }
    }
    out.push_str("</div></section>");
}

/// The comparison section of `gavel diff --html`.
fn diff_html(out: &mut String, diff: &Diff, kept: &[Kept]) {
    let level = format!("{:.0}%", diff.level * 100.0);
    let _ = write!(
        out,
        r#"<section id="diff"><h2>Changes from the base run</h2><p>{} base rows, {} candidate rows, {} paired by id; {} only in the base, {} only in the candidate.</p><table id="diff-metrics"><thead><tr><th>metric</th><th>pairs</th><th>mean: base → candidate</th><th>change ({level} CI)</th><th>p</th><th>pass rate: base → candidate</th><th>pass → fail</th><th>fail → pass</th><th>McNemar p</th><th></th></tr></thead><tbody>"#,
        diff.base_rows, diff.candidate_rows, diff.shared, diff.only_in_base, diff.only_in_candidate
    );
    for m in &diff.metrics {
        let verdict = if m.regressed {
            r#"<span class="fail">regressed</span>"#
        } else if m.improved {
            r#"<span class="pass">improved</span>"#
        } else {
            "no significant change"
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td>{} {}</td><td>{}</td><td>{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td>{verdict}</td></tr>",
            escape(&m.metric),
            m.pairs,
            fmt(m.base.mean),
            fmt(m.candidate.mean),
            decimals(m.mean_change.mean, true),
            interval(m.mean_change.interval),
            escape(&m.mean_change.p_value.map_or_else(|| "–".into(), p_value)),
            percent(m.base.pass_rate),
            percent(m.candidate.pass_rate),
            m.pass_to_fail,
            m.fail_to_pass,
            escape(&p_value(m.mcnemar_p))
        );
    }
    out.push_str("</tbody></table>");
    let shown: std::collections::HashMap<(String, u32), u64> = {
        let mut runs: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        kept.iter()
            .map(|k| {
                let id = k.result.sample_id.to_string();
                let run = runs.entry(id.clone()).or_default();
                *run += 1;
                ((id, *run - 1), k.seq)
            })
            .collect()
    };
    for m in &diff.metrics {
        for (title, flips, total) in [
            ("pass → fail", &m.flipped_to_fail, m.pass_to_fail),
            ("fail → pass", &m.flipped_to_pass, m.fail_to_pass),
        ] {
            if flips.is_empty() {
                continue;
            }
            let _ = write!(
                out,
                r#"<details class="flips"><summary><bdi>{}</bdi>: {total} {title}</summary><ul>"#,
                escape(&m.metric)
            );
            for flip in flips {
                let id = flip.sample_id.to_string();
                let id = format!("<bdi>{}</bdi>", escape(cut(&id).as_deref().unwrap_or(&id)));
                let link = match shown.get(&(flip.sample_id.to_string(), flip.run)) {
                    Some(seq) => format!(r##"<a href="#sample={seq}">{id}</a>"##),
                    None => id,
                };
                let rationale = cut(&flip.rationale);
                let _ = write!(
                    out,
                    "<li>{link}: <bdi>{}</bdi></li>",
                    escape(rationale.as_deref().unwrap_or(&flip.rationale))
                );
            }
            out.push_str("</ul></details>");
        }
    }
    out.push_str("</section>");
}

/// A p-value as printed: three significant digits, or a bound below 0.0001.
pub fn p_value(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}
