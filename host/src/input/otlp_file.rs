//! OpenTelemetry collector files as datasets: the file exporter's JSON lines, each an OTLP export
//! object `{"resourceSpans": [...]}` holding a batch of spans, of any traces, in the order they
//! were exported. Each trace becomes a row, `{id: <traceId>, trajectory: [...]}`, in the order
//! the file first names it; its trajectory is the file's export objects cut down to that trace's
//! spans (their resources and scopes kept), read by the `otel` format. With `sample_per:
//! root_span`, each root span (a span whose `parentSpanId` is empty or names no span of its
//! trace in the file) becomes a row with the spans below it, `id` `<traceId>:<spanId>`. Every
//! row is converted once as the file is read, so a malformed span fails the dataset at its line.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::config::spec::SamplePer;
use crate::fsio;
use crate::input::csv_rows::Converted;
use crate::input::source::{RecordingError, SourceError};
use crate::input::trajectory::json::{self, Expecting, Object, Text};
use crate::input::trajectory::otel::Export;
use crate::input::trajectory::{self, Format};

/// The key a collector file's first object starts with.
const KEY: &[u8] = b"\"resourceSpans\"";

/// How far into a file its first object's first key is looked for: past blank lines and
/// indentation, which a file of JSON Lines may start with.
const HEAD_BYTES: u64 = 4096;

/// Whether the dataset at `path` is a collector file: its first object's first key, past any
/// blank lines and spaces, is `"resourceSpans"`, which no dataset row's is.
pub fn is_collector_file(path: &Path) -> bool {
    let mut head = Vec::new();
    let read = fsio::open_regular(path, fsio::cap::STREAM)
        .and_then(|(file, _)| file.take(HEAD_BYTES).read_to_end(&mut head));
    if read.is_err() {
        return false;
    }
    let blank = |b: &u8| b.is_ascii_whitespace();
    let rest = match head.iter().position(|b| !blank(b)) {
        Some(at) if head[at] == b'{' => &head[at + 1..],
        _ => return false,
    };
    let start = rest.iter().position(|b| !blank(b)).unwrap_or(rest.len());
    rest[start..].starts_with(KEY)
}

/// What a span is split by.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ids<'a> {
    #[serde(borrow)]
    trace_id: Text<'a>,
    #[serde(borrow, default)]
    span_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    parent_span_id: Option<Text<'a>>,
}

impl Expecting for Ids<'_> {
    const WHAT: &'static str = "a span object {traceId, spanId, name, attributes, ...}";
}

/// The spans of one trace that one export object's resource and scope hold.
struct Piece<'a> {
    resource: Option<&'a RawValue>,
    scope: Option<&'a RawValue>,
    spans: Vec<&'a RawValue>,
    /// Which export object (line), resource and scope of the file it is cut from.
    at: (usize, usize, usize),
}

/// A span as the file holds it: its ids, where it is, and its text.
struct Span<'a> {
    trace_id: Cow<'a, str>,
    span_id: Option<Cow<'a, str>>,
    parent_span_id: Option<Cow<'a, str>>,
    resource: Option<&'a RawValue>,
    scope: Option<&'a RawValue>,
    raw: &'a RawValue,
    at: (usize, usize, usize),
}

/// A row of the file: its id, the line the file first names it on, and its pieces in file
/// order.
struct Trace<'a> {
    id: String,
    line: usize,
    pieces: Vec<Piece<'a>>,
}

/// The traces of the collector file at `path` as JSONL rows, each numbered by the line that
/// first holds one of its spans.
pub fn convert(path: &Path, per: SamplePer) -> Result<Converted, SourceError> {
    Converted::from_text(path, |text| rows(text, per))
}

/// The spans of the collector file `text`, in file order.
fn spans(text: &str) -> Result<Vec<Span<'_>>, RecordingError> {
    let mut spans = Vec::new();
    for (number, line) in text.lines().enumerate().map(|(i, line)| (i + 1, line)) {
        if line.trim().is_empty() {
            continue;
        }
        let Object(export): Object<Export<&RawValue>> =
            json::parse(line, String::new).map_err(|e| {
                RecordingError::at_line(
                    number,
                    format!(
                        "{}; a collector file holds an OTLP export object a line",
                        e.0.strip_prefix(": ")
                            .unwrap_or(e.0.trim_start_matches('.'))
                    ),
                )
            })?;
        for (r, Object(resource)) in export.resource_spans.into_iter().enumerate() {
            for (s, Object(scope)) in resource.scope_spans.into_iter().enumerate() {
                for (k, raw) in scope.spans.into_iter().enumerate() {
                    let Object(ids): Object<Ids> = json::parse(raw.get(), || {
                        format!("resourceSpans[{r}].scopeSpans[{s}].spans[{k}]")
                    })
                    .map_err(|e| RecordingError::at_line(number, e))?;
                    spans.push(Span {
                        trace_id: ids.trace_id.0,
                        span_id: ids.span_id.map(|id| id.0),
                        parent_span_id: ids.parent_span_id.map(|id| id.0),
                        resource: resource.resource,
                        scope: scope.scope,
                        raw,
                        at: (number, r, s),
                    });
                }
            }
        }
    }
    Ok(spans)
}

/// The id of the row each of `spans` belongs to: its trace's id, or with `per` a root span,
/// `<traceId>:<spanId>` of the root span above it. Spans whose parents loop have no root, and
/// are refused at the line of the first of them.
fn row_ids(spans: &[Span], per: SamplePer) -> Result<Vec<String>, RecordingError> {
    if per == SamplePer::Trace {
        return Ok(spans.iter().map(|span| span.trace_id.to_string()).collect());
    }
    // Each span's parent, by (trace, span); each span's root once found, so that a chain is
    // walked once however deep it is.
    // A span written twice (an export sent again) is one span; with two parents it is not.
    let mut parents: HashMap<(&str, &str), Option<&str>> = HashMap::new();
    for span in spans {
        let Some(id) = span.span_id.as_deref() else {
            continue;
        };
        let parent = span.parent_span_id.as_deref().filter(|p| !p.is_empty());
        let trace = &*span.trace_id;
        if let Some(first) = parents.insert((trace, id), parent)
            && first != parent
        {
            let said = |parent: Option<&str>| parent.map_or("none".to_string(), |p| p.to_string());
            return Err(RecordingError::at_line(
                span.at.0,
                format!(
                    "span {id} of trace {trace} is written again with another parentSpanId \
                     ({} here, {} before), so its root span is not known; give each span an \
                     id of its own, or leave out `sample_per: root_span`",
                    said(parent),
                    said(first)
                ),
            ));
        }
    }
    let mut roots: HashMap<(&str, &str), &str> = HashMap::new();
    let mut ids = Vec::with_capacity(spans.len());
    for span in spans {
        let trace = &*span.trace_id;
        let Some(id) = span.span_id.as_deref() else {
            // The span is refused when its trace is converted.
            ids.push(trace.to_string());
            continue;
        };
        // Up the parents while they are in the file and their root is not known yet.
        let (mut at, mut path) = (id, Vec::new());
        let root = loop {
            if let Some(root) = roots.get(&(trace, at)) {
                break *root;
            }
            match parents.get(&(trace, at)) {
                Some(Some(parent)) if parents.contains_key(&(trace, *parent)) => {
                    path.push(at);
                    if path.len() > parents.len() {
                        return Err(RecordingError::at_line(
                            span.at.0,
                            format!(
                                "span {id} of trace {trace}: its parentSpanId chain loops, so \
                                 it has no root span; give the root span an empty \
                                 parentSpanId, or leave out `sample_per: root_span`"
                            ),
                        ));
                    }
                    at = parent;
                }
                _ => break at,
            }
        };
        for node in path {
            roots.insert((trace, node), root);
        }
        ids.push(format!("{trace}:{root}"));
    }
    Ok(ids)
}

fn rows(text: &str, per: SamplePer) -> Result<Converted, RecordingError> {
    let spans = spans(text)?;
    let ids = row_ids(&spans, per)?;
    let mut traces: Vec<Trace> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (span, id) in spans.iter().zip(&ids) {
        let slot = *index.entry(id).or_insert_with(|| {
            traces.push(Trace {
                id: id.clone(),
                line: span.at.0,
                pieces: Vec::new(),
            });
            traces.len() - 1
        });
        let pieces = &mut traces[slot].pieces;
        match pieces.last_mut() {
            Some(piece) if piece.at == span.at => piece.spans.push(span.raw),
            _ => pieces.push(Piece {
                resource: span.resource,
                scope: span.scope,
                spans: vec![span.raw],
                at: span.at,
            }),
        }
    }
    let mut converted = Converted::default();
    for trace in &traces {
        let recorded = trajectory_text(trace);
        let raw: &RawValue =
            serde_json::from_str(&recorded).map_err(|e| RecordingError::at_line(trace.line, e))?;
        trajectory::convert(raw, Some(Format::Otel))
            .map_err(|e| RecordingError::at_line(trace.line, format!("trace {}: {e}", trace.id)))?;
        let id =
            serde_json::to_string(&trace.id).map_err(|e| RecordingError::at_line(trace.line, e))?;
        converted
            .text
            .push_str(&format!("{{\"id\":{id},\"trajectory\":{recorded}}}\n"));
        converted.lines.push(trace.line);
    }
    if traces.is_empty() {
        return Err(RecordingError::File(
            "the collector file holds no spans".to_string(),
        ));
    }
    Ok(converted)
}

/// The export objects of `trace`: one per line, resource and scope that hold its spans.
fn trajectory_text(trace: &Trace) -> String {
    let mut out = String::from("[");
    for (i, piece) in trace.pieces.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"resourceSpans\":[{");
        if let Some(resource) = piece.resource {
            out.push_str("\"resource\":");
            out.push_str(resource.get());
            out.push(',');
        }
        out.push_str("\"scopeSpans\":[{");
        if let Some(scope) = piece.scope {
            out.push_str("\"scope\":");
            out.push_str(scope.get());
            out.push(',');
        }
        out.push_str("\"spans\":[");
        for (j, span) in piece.spans.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push_str(span.get());
        }
        out.push_str("]}]}]}");
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::trajectory::testing::recorded_file;

    fn rows_of(converted: &Converted) -> Vec<serde_json::Value> {
        converted
            .text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn spans(value: &serde_json::Value) -> Vec<String> {
        let mut ids = Vec::new();
        for export in value.as_array().unwrap() {
            for resource in export["resourceSpans"].as_array().unwrap() {
                for scope in resource["scopeSpans"].as_array().unwrap() {
                    for span in scope["spans"].as_array().unwrap() {
                        ids.push(span["spanId"].as_str().unwrap().to_string());
                    }
                }
            }
        }
        ids
    }

    /// A span of trace `t` whose parent is `parent` (none when empty).
    fn span(id: &str, parent: &str) -> String {
        format!(r#"{{"traceId": "t", "spanId": "{id}", "parentSpanId": "{parent}"}}"#)
    }

    /// A collector file's line holding `spans`.
    fn line(spans: &[String]) -> String {
        format!(
            "{{\"resourceSpans\": [{{\"scopeSpans\": [{{\"spans\": [{}]}}]}}]}}\n",
            spans.join(",")
        )
    }

    /// A span written twice with the same parent is one span; with two parents its root is
    /// not known, and the file is refused at the second.
    #[test]
    fn a_span_written_again_with_another_parent_is_refused() {
        let again = line(&[span("r", ""), span("a", "r")]) + &line(&[span("a", "r")]);
        let once = rows_of(&rows(&again, SamplePer::RootSpan).unwrap());
        assert_eq!(once.len(), 1);
        let other = line(&[span("r", ""), span("a", "r")]) + &line(&[span("a", "")]);
        let Err(error) = rows(&other, SamplePer::RootSpan) else {
            panic!("a span with two parents is refused")
        };
        let error = error.to_string();
        assert!(
            error.contains("line 2")
                && error.contains("span a of trace t is written again with another parentSpanId (none here, r before)"),
            "{error}"
        );
        // Split by trace, a span's parent does not matter.
        assert_eq!(rows_of(&rows(&other, SamplePer::Trace).unwrap()).len(), 1);
    }

    /// A collector file is told by its first object's first key, past blank lines and spaces.
    #[test]
    fn a_collector_file_is_told_past_blank_lines_and_spaces() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("{\"resourceSpans\": []}\n", true),
            ("\n\r\n  { \"resourceSpans\": []}\n", true),
            ("{\n  \"resourceSpans\": []}", true),
            ("{\"id\": 1, \"resourceSpans\": []}\n", false),
            ("\u{feff}{\"resourceSpans\": []}\n", false),
            ("[{\"resourceSpans\": []}]", false),
            ("", false),
        ];
        for (i, (text, collector)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("{i}.jsonl"));
            std::fs::write(&path, text).unwrap();
            assert_eq!(is_collector_file(&path), collector, "{text:?}");
        }
    }

    #[test]
    fn a_root_span_is_a_span_without_a_parent_in_the_file() {
        // `b` below `a`, then `c` whose parent is not in the file, then `d` below `b`.
        let text =
            line(&[span("b", "a"), span("a", ""), span("c", "gone")]) + &line(&[span("d", "b")]);
        let converted = rows(&text, SamplePer::RootSpan).unwrap();
        let rows = rows_of(&converted);
        let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["t:a", "t:c"]);
        assert_eq!(spans(&rows[0]["trajectory"]), ["b", "a", "d"]);
        assert_eq!(converted.lines, [1, 1]);
        assert_eq!(
            rows_of(&self::rows(&text, SamplePer::Trace).unwrap()).len(),
            1
        );
        // Parents that loop give no root.
        let text = line(&[span("a", "")]) + &line(&[span("x", "y"), span("y", "x")]);
        let err = self::rows(&text, SamplePer::RootSpan)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "line 2: span x of trace t: its parentSpanId chain loops, so it has no root \
                 span; give the root span an empty parentSpanId, or leave out \
                 `sample_per: root_span`"
            )
        );
        // A chain thousands deep, its spans leaf first, is one row: each span's walk stops
        // where the one before it found the root.
        let deep: Vec<String> = (1..=5000)
            .rev()
            .map(|i| span(&format!("s{i}"), &format!("s{}", i - 1)))
            .chain([span("s0", "")])
            .collect();
        let converted = self::rows(&line(&deep), SamplePer::RootSpan).unwrap();
        let rows = rows_of(&converted);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["id"], "t:s0");
        assert_eq!(spans(&rows[0]["trajectory"]).len(), 5001);
        // A loop below a chain is still found, at the first span that leads into it.
        let looped = [
            span("q", "p"),
            span("p", "x"),
            span("x", "y"),
            span("y", "x"),
        ];
        let err = self::rows(&line(&looped), SamplePer::RootSpan).err();
        assert!(
            err.is_some_and(|e| e.to_string().starts_with("line 1: span q of trace t: its")),
            "the span whose chain loops"
        );
    }

    #[test]
    fn interleaved_traces_become_a_row_each() {
        let text = recorded_file("otel-genai.jsonl");
        let converted = rows(&text, SamplePer::Trace).unwrap();
        let rows = rows_of(&converted);
        let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                "00000000000000000000000000000001",
                "00000000000000000000000000000005"
            ]
        );
        // Both traces start on the first line, which mixes them.
        assert_eq!(converted.lines, [1, 1]);
        let paris = spans(&rows[0]["trajectory"]);
        let oslo = spans(&rows[1]["trajectory"]);
        assert_eq!(
            paris,
            ["0000000000000002", "0000000000000004", "0000000000000003"]
        );
        assert_eq!(
            oslo,
            ["0000000000000006", "0000000000000008", "0000000000000007"]
        );
        // Every span of the file is in one row.
        let file: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let mut all = spans(&serde_json::Value::Array(file));
        let mut split = [paris, oslo].concat();
        all.sort();
        split.sort();
        assert_eq!(split, all);
        // The first trace reads as the same run recorded alone.
        let same_run = recorded_file("same-run.jsonl");
        let alone: serde_json::Value = same_run
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .find(|row: &serde_json::Value| row["id"] == "genai")
            .unwrap();
        let convert = |value: &serde_json::Value| {
            let text = value.to_string();
            let raw: &RawValue = serde_json::from_str(&text).unwrap();
            format!(
                "{:?}",
                trajectory::convert(raw, Some(Format::Otel)).unwrap()
            )
        };
        assert_eq!(
            convert(&rows[0]["trajectory"]),
            convert(&alone["trajectory"])
        );
    }

    #[test]
    fn malformed_lines_and_spans_are_refused_at_their_line() {
        let span = |trace: &str, id: &str, extra: &str| {
            format!(r#"{{"traceId": "{trace}", "spanId": "{id}", "name": "x"{extra}}}"#)
        };
        let line = |spans: &[String]| {
            format!(
                r#"{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{}]}}]}}]}}"#,
                spans.join(",")
            )
        };
        for (text, expected) in [
            (
                format!("{}\n[1]\n", line(&[span("t1", "a", "")])),
                "line 2: invalid type: sequence, expected an OTLP export object {resourceSpans: \
                 [...]}; a collector file holds an OTLP export object a line",
            ),
            (
                format!(
                    "{}\n{}\n",
                    line(&[span("t1", "a", "")]),
                    line(&[span("t2", "b", ""), r#"{"spanId": "c"}"#.to_string()])
                ),
                "line 2: resourceSpans[0].scopeSpans[0].spans[1]: missing field `traceId`",
            ),
            (
                format!(
                    "{}\n{}\n",
                    line(&[span("t1", "a", "")]),
                    line(&[span("t2", "b", r#", "attributes": [{"key": "k"}]"#)])
                ),
                "line 2: trace t2: trajectory[0].resourceSpans[0].scopeSpans[0].spans[0].\
                 attributes[0]: missing field `value`",
            ),
            ("\n".to_string(), "the collector file holds no spans"),
        ] {
            let err = rows(&text, SamplePer::Trace).err().map(|e| e.to_string());
            assert_eq!(err.as_deref(), Some(expected), "for {text}");
        }
    }
}
