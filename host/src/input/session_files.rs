//! Claude Code session transcripts as datasets: a session file
//! (`~/.claude/projects/<project>/<sessionId>.jsonl`, a record a line) is a row
//! `{id: <sessionId>, trajectory: [records]}` read by the `claude_code` format. A file is a session when its first line is a transcript record (`sessionId`,
//! `parentUuid` or `leafUuid` its first such key) and not a dataset row; a first line that is
//! both is refused, with what to change. Every session is converted as it is read, so a
//! malformed record fails the dataset at its file and line.
//!
//! A folder of session files (a project's folder) is a dataset of a row per `*.jsonl` file in
//! it, in the order of their names, each numbered by its place in that order; every file must
//! be a session, and two files of one session are refused, naming both.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::fsio;
use crate::input::csv_rows::Converted;
use crate::input::source::{RecordingError, SourceError};
use crate::input::trajectory::claude_code::RECORD_KEYS;
use crate::input::trajectory::json::first_key_among;
use crate::input::trajectory::{self, Format};

/// Keys of a dataset row that hold or name a recorded run, which no transcript record has.
const ROW_KEYS: [&str; 3] = ["trajectory", "sample_id", "ground_truth"];

/// Whether the dataset at `path` is a session file: its first line is a transcript record. A
/// first line that is both a record and a dataset row is an error that says what to change.
pub fn is_session(path: &Path) -> Result<bool, SourceError> {
    match first_line_keys(path) {
        Some((Some(record), Some(row))) => Err(SourceError {
            path: path.to_path_buf(),
            message: format!(
                "line 1 is both a Claude Code transcript record (`{record}`) and a dataset row \
                 (`{row}`): for a session file, remove `{row}` from its records; for rows, put \
                 each session under a row's `trajectory` and `{record}` inside it"
            ),
        }),
        Some((Some(_), None)) => Ok(true),
        _ => Ok(false),
    }
}

/// Whether the first line of the file at `path` is a dataset row or run record (a JSON object
/// with `trajectory`, `sample_id` or `ground_truth`), as no transcript, log or export line is.
pub fn starts_with_row(path: &Path) -> bool {
    matches!(first_line_keys(path), Some((_, Some(_))))
}

/// The first transcript record key and the first dataset row key of the first line of the file
/// at `path`; `None` when that line is no JSON object.
fn first_line_keys(path: &Path) -> Option<(Option<&'static str>, Option<&'static str>)> {
    let (file, _) = fsio::open_regular(path, fsio::cap::STREAM).ok()?;
    let mut first = String::new();
    let mut reader = BufReader::new(std::io::Read::take(file, fsio::cap::TEXT));
    if reader.read_line(&mut first).is_err() || !first.trim_start().starts_with('{') {
        return None;
    }
    let raw = serde_json::from_str::<&RawValue>(first.trim()).ok()?;
    Some((
        first_key_among(raw, &RECORD_KEYS),
        first_key_among(raw, &ROW_KEYS),
    ))
}

/// The session file at `path` as a JSONL row, numbered by its first record's line.
pub fn convert(path: &Path) -> Result<Converted, SourceError> {
    Converted::from_text(path, |text| -> Result<Converted, RecordingError> {
        let mut converted = Converted::default();
        let (line, _) = session_row(path, text, &mut converted.text)?;
        converted.lines.push(line);
        Ok(converted)
    })
}

/// The session files of the folder `folder`: its `*.jsonl` entries, sorted by name; one that is
/// not a regular file is refused, naming it.
pub fn session_paths(folder: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let error = |message: String| SourceError {
        path: folder.to_path_buf(),
        message,
    };
    let entries = std::fs::read_dir(folder).map_err(|e| error(format!("cannot list: {e}")))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| error(format!("cannot list: {e}")))?
            .path();
        if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            // Told from its type, never opened: a FIFO would wait for a writer, and read as a
            // session it would be said to hold no transcript record. A link to nothing is named
            // here too, not left for the folder's first read to fail without its name.
            let why = match fsio::not_regular_at(&path) {
                Ok(None) => {
                    paths.push(path);
                    continue;
                }
                Ok(Some(e)) => e.to_string(),
                Err(e) => format!("cannot tell what it is ({e})"),
            };
            return Err(SourceError {
                path,
                message: format!(
                    "{why}: a folder dataset holds only session files, each a regular file; \
                     move it out of the folder"
                ),
            });
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(error(
            "the folder holds no session files (`*.jsonl`): a folder dataset is a folder of \
             Claude Code session files"
                .to_string(),
        ));
    }
    Ok(paths)
}

/// The session files of the folder `folder` as JSONL rows, a row per file in the order of their
/// names, each numbered by its place in that order. A file that is not a session (as
/// `is_session` tells, or refuses it), or a session a second file also holds, is refused, naming
/// the file (and the other).
pub fn convert_folder(
    folder: &Path,
    is_session: impl Fn(&Path) -> Result<bool, SourceError>,
) -> Result<Converted, SourceError> {
    let mut converted = Converted::default();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    let mut budget = fsio::cap::TABLE;
    for path in session_paths(folder)? {
        if !is_session(&path)? {
            return Err(SourceError {
                path,
                message: "line 1: not a Claude Code transcript record (`sessionId`, \
                          `parentUuid` or `leafUuid`): a folder dataset holds only session files"
                    .to_string(),
            });
        }
        let made = Converted::from_text(&path, |text| {
            budget = budget.checked_sub(text.len() as u64).ok_or_else(|| {
                RecordingError::File(format!(
                    "the folder's session files together are larger than the limit of {} MiB",
                    fsio::cap::TABLE >> 20
                ))
            })?;
            let mut made = Converted::default();
            let (_, id) = session_row(&path, text, &mut made.text)?;
            if let Some(first) = seen.get(&id) {
                return Err(RecordingError::File(format!(
                    "session {id} is also the session of {}: a session is one row; remove one \
                     of the two files",
                    first.display()
                )));
            }
            seen.insert(id, path.clone());
            Ok(made)
        })?;
        converted.text.push_str(&made.text);
        converted.lines.push(converted.lines.len() + 1);
    }
    Ok(converted)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Session<'a> {
    #[serde(borrow, default)]
    session_id: Option<&'a RawValue>,
}

/// The row of the session `text` (the file `file`), appended to `out`: the line it starts on,
/// and the row's id as JSON.
fn session_row(
    file: &Path,
    text: &str,
    out: &mut String,
) -> Result<(usize, String), RecordingError> {
    let records: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, line))
        .collect();
    let Some(&(first, _)) = records.first() else {
        return Err(RecordingError::File(
            "the session file holds no records".to_string(),
        ));
    };
    let mut id = None;
    for &(number, record) in &records {
        let session: Session = serde_json::from_str(record).map_err(|e| {
            RecordingError::at_line(number, format!("not a transcript record: {e}"))
        })?;
        id = id.or(session.session_id);
    }
    let list = format!(
        "[{}]",
        records
            .iter()
            .map(|(_, record)| *record)
            .collect::<Vec<_>>()
            .join(",")
    );
    let raw: &RawValue = serde_json::from_str(&list)
        .map_err(|e| RecordingError::File(format!("the records are not a JSON list: {e}")))?;
    trajectory::convert(raw, Some(Format::ClaudeCode)).map_err(|e| {
        // `trajectory[k]...`: the k-th record, at its line.
        let index =
            e.0.strip_prefix("trajectory[")
                .and_then(|rest| rest.split(']').next())
                .and_then(|k| k.parse::<usize>().ok());
        match index.and_then(|k| records.get(k)) {
            Some(&(number, _)) => RecordingError::at_line(number, e),
            None => RecordingError::File(e.0),
        }
    })?;
    let id = match id {
        Some(raw) => raw.get().to_string(),
        None => serde_json::to_string(
            &file
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
        .map_err(|e| RecordingError::File(e.to_string()))?,
    };
    out.push_str(&format!("{{\"id\":{id},\"trajectory\":{list}}}\n"));
    Ok((first, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session as Claude Code writes its file: the task, a tool call and its result, the
    /// answer, and the summary it adds later.
    const SESSION: &str = r#"{"parentUuid":null,"isSidechain":false,"sessionId":"s1","type":"user","message":{"role":"user","content":"What is in notes.txt?"},"uuid":"u1"}
{"parentUuid":"u1","isSidechain":false,"sessionId":"s1","type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/notes.txt"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":4}},"uuid":"a1"}
{"parentUuid":"a1","isSidechain":false,"sessionId":"s1","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"buy milk"}]},"uuid":"u2"}
{"parentUuid":"u2","isSidechain":false,"sessionId":"s1","type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"It says: buy milk."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":6}},"uuid":"a2"}

{"type":"summary","summary":"Read notes","leafUuid":"a2"}
"#;

    fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_session_file_is_a_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(&dir, "s1.jsonl", SESSION);
        assert!(is_session(&path).unwrap());
        let converted = convert(&path).unwrap();
        assert_eq!(converted.lines, [1]);
        let row: serde_json::Value = serde_json::from_str(converted.text.trim_end()).unwrap();
        assert_eq!(row["id"], "s1");
        assert_eq!(row["trajectory"].as_array().unwrap().len(), 5);
        let text = row["trajectory"].to_string();
        let raw: &RawValue = serde_json::from_str(&text).unwrap();
        let trajectory = trajectory::convert(raw, None).unwrap();
        assert_eq!(trajectory.format, Format::ClaudeCode);
        assert_eq!(trajectory.tools_called(), ["Read"]);
        assert_eq!(
            trajectory.final_output().as_deref(),
            Some("It says: buy milk.")
        );
        // Rows of a dataset, even rows holding a session, are rows.
        let rows = file(
            &dir,
            "rows.jsonl",
            &format!(
                "{{\"id\": 1, \"trajectory\": [{}]}}\n",
                SESSION.lines().next().unwrap()
            ),
        );
        assert!(!is_session(&rows).unwrap());
    }

    #[test]
    fn a_first_line_both_record_and_row_is_refused_with_what_to_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(
            &dir,
            "mixed.jsonl",
            "{\"sessionId\": \"s1\", \"type\": \"user\", \"trajectory\": []}\n",
        );
        assert_eq!(
            is_session(&path).unwrap_err().message,
            "line 1 is both a Claude Code transcript record (`sessionId`) and a dataset row \
             (`trajectory`): for a session file, remove `trajectory` from its records; for \
             rows, put each session under a row's `trajectory` and `sessionId` inside it"
        );
    }

    #[test]
    fn a_malformed_record_is_refused_at_its_line() {
        let broken = SESSION.replacen(
            "\"type\":\"assistant\",\"message\"",
            "\"type\":\"assistant\",\"msg\"",
            1,
        );
        let mut out = String::new();
        assert_eq!(
            session_row(Path::new("s1.jsonl"), &broken, &mut out)
                .unwrap_err()
                .to_string(),
            "line 2: trajectory[1].message: missing; a record of type assistant requires it"
        );
        assert_eq!(
            session_row(
                Path::new("s1.jsonl"),
                "{\"sessionId\": \"s\"}\nnot json\n",
                &mut out
            )
            .unwrap_err()
            .to_string(),
            "line 2: not a transcript record: expected ident at line 1 column 2"
        );
        assert!(out.is_empty());
    }
}
