//! Inspect AI logs as datasets: each sample of the log, one per (id, epoch), becomes a row whose
//! `trajectory` is the sample as Inspect wrote it (read by the `inspect` format), so that a run
//! Inspect recorded is graded again by any suite.
//!
//! A log is a `.eval` file (a zip archive whose `samples/<id>_epoch_<n>.json` members hold the
//! samples, zstd or deflate compressed) or a `.json` file (one JSON document, written indented,
//! with the samples under `samples`). A row is `{id, input, ground_truth, metadata: {epoch},
//! trajectory}`: `input` the sample's input when it is text, or when it is a list of messages the
//! text of the last `user` message among them (its text parts joined by line endings), and
//! `ground_truth` its `target` when that is one text. Every sample is converted once as it is read, so a malformed one fails the
//! dataset, naming the archive member or the line of the `.json` file it starts on.
//!
//! An archive is read within caps: the file, each member and all members together unpack to at
//! most [`fsio::cap::TABLE`] bytes, whatever sizes the archive's headers claim.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::fsio;
use crate::input::csv_rows::Converted;
use crate::input::source::{RecordingError, SourceError};
use crate::input::trajectory::{self, ConvertError, Format};

/// Whether the dataset at `path` is an Inspect log: a `.eval` file, or a `.json` file whose
/// first line is `{` alone, as Inspect writes its JSON logs (a JSON Lines row is a whole object
/// on its line).
pub fn is_inspect_log(path: &Path) -> bool {
    let extension = |name: &str| {
        path.extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case(name))
    };
    if extension("eval") {
        return true;
    }
    if !extension("json") {
        return false;
    }
    let mut head = [0u8; 3];
    let read =
        fsio::open_regular(path, fsio::cap::STREAM).and_then(|(mut file, _)| file.read(&mut head));
    matches!(read, Ok(n) if head[..n].starts_with(b"{\n") || head[..n].starts_with(b"{\r\n"))
}

/// The samples of the Inspect log at `path` as JSONL rows, each numbered by the line its sample
/// starts on (a `.json` log) or its place among the archive's samples (a `.eval` log).
pub fn convert(path: &Path) -> Result<Converted, SourceError> {
    let error = |message: String| SourceError {
        path: path.to_path_buf(),
        message,
    };
    let is_archive = path
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("eval"));
    let (file, len) = fsio::open_regular(path, fsio::cap::TABLE)
        .map_err(|e| error(format!("cannot open: {e}")))?;
    let mut converted = Converted::default();
    if is_archive {
        read_archive(file, fsio::cap::TABLE, &mut converted).map_err(|e| error(e.to_string()))?;
    } else {
        let bytes = fsio::read_capped(file, len, fsio::cap::TABLE)
            .map_err(|e| error(format!("cannot read: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            error(format!(
                "byte {} is not UTF-8",
                e.utf8_error().valid_up_to()
            ))
        })?;
        read_json(&text, &mut converted).map_err(|e| error(e.to_string()))?;
    }
    if converted.lines.is_empty() {
        return Err(error(
            "the Inspect log holds no samples: write it with samples (Inspect's --log-samples, \
             the default)"
                .to_string(),
        ));
    }
    Ok(converted)
}

/// The members of an archive that hold samples.
fn is_sample(name: &str) -> bool {
    name.starts_with("samples/") && name.ends_with(".json")
}

/// The samples of a `.eval` archive, in the archive's order, unpacking at most `budget` bytes.
fn read_archive(
    source: impl Read + std::io::Seek,
    mut budget: u64,
    converted: &mut Converted,
) -> Result<(), RecordingError> {
    let mut archive = zip::ZipArchive::new(source).map_err(|e| {
        RecordingError::File(format!(
            "not a zip archive, as an Inspect `.eval` log is: {e}"
        ))
    })?;
    // The archive's index is by name: of two members of one name, one would be lost unread.
    if archive.has_duplicate_names() {
        return Err(RecordingError::File(
            "two of the archive's members have one name, so one of them cannot be read; an \
             Inspect `.eval` log names each sample's member once"
                .to_string(),
        ));
    }
    for index in 0..archive.len() {
        let member = archive
            .by_index(index)
            .map_err(|e| RecordingError::Member {
                member: format!("member {}", index + 1),
                message: e.to_string(),
            })?;
        let name = String::from_utf8_lossy(member.name_raw()).into_owned();
        if !is_sample(&name) {
            continue;
        }
        let at = |message: String| RecordingError::Member {
            member: name.clone(),
            message,
        };
        let declared = member.size();
        let bytes = fsio::read_capped(member, declared, budget).map_err(|e| {
            at(match e.kind() {
                // Past the cap: the archive's samples together unpack to too much.
                std::io::ErrorKind::InvalidInput => format!(
                    "{e}, unpacked with the archive's other samples; an Inspect log that large \
                     is read as several logs"
                ),
                _ => format!("cannot unpack: {e}"),
            })
        })?;
        budget -= bytes.len() as u64;
        let text = String::from_utf8(bytes).map_err(|e| {
            at(format!(
                "byte {} is not UTF-8",
                e.utf8_error().valid_up_to()
            ))
        })?;
        let sample: &RawValue = serde_json::from_str(&text)
            .map_err(|e| at(format!("not JSON: {e}; a sample member holds one sample")))?;
        push_row(sample, converted).map_err(|e| at(e.to_string()))?;
        converted.lines.push(converted.lines.len() + 1);
    }
    Ok(())
}

#[derive(Deserialize)]
struct JsonLog<'a> {
    #[serde(borrow, default)]
    samples: Option<Vec<&'a RawValue>>,
}

/// The samples of a `.json` log, each numbered by the line it starts on.
fn read_json(text: &str, converted: &mut Converted) -> Result<(), RecordingError> {
    let log: JsonLog = serde_json::from_str(text).map_err(|e| {
        RecordingError::File(format!(
            "not an Inspect log: {e}; a `.json` dataset whose first line is `{{` is read as one"
        ))
    })?;
    let (mut line, mut counted) = (1, 0);
    for sample in log.samples.into_iter().flatten() {
        let start = sample.get().as_ptr() as usize - text.as_ptr() as usize;
        line += text.as_bytes()[counted..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        counted = start;
        push_row(sample, converted).map_err(|e| RecordingError::at_line(line, e))?;
        converted.lines.push(line);
    }
    Ok(())
}

/// The fields of a sample a row takes.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    epoch: u64,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    target: Option<&'a RawValue>,
}

/// A text as written: a JSON string.
fn is_text(raw: &RawValue) -> bool {
    raw.get().starts_with('"')
}

/// Why a sample cannot be a row.
#[derive(Debug, thiserror::Error)]
enum SampleError {
    #[error("{0}; an Inspect sample has `id`, `epoch`, `input`, `target` and `messages`")]
    Head(serde_json::Error),
    #[error(transparent)]
    Trajectory(#[from] ConvertError),
}

/// The row of `sample`, checked to convert, appended to `converted`'s text.
fn push_row(sample: &RawValue, converted: &mut Converted) -> Result<(), SampleError> {
    let head: Head = serde_json::from_str(sample.get()).map_err(SampleError::Head)?;
    let run = trajectory::convert(sample, Some(Format::Inspect))?;
    let text = &mut converted.text;
    text.push_str("{\"id\":");
    text.push_str(head.id.get());
    // A text is written as the sample has it; an input Inspect moved to the attachments, or a
    // list of messages, as the text the trajectory read (the last user message's).
    match (head.input, run.input) {
        (Some(raw), _) if is_text(raw) && !raw.get().starts_with("\"attachment://") => {
            text.push_str(",\"input\":");
            text.push_str(raw.get());
        }
        (_, Some(input)) => {
            text.push_str(",\"input\":");
            text.push_str(&serde_json::Value::from(input.into_owned()).to_string());
        }
        (_, None) => {}
    }
    // A target of one text, alone or in a list, is the ground truth; a list of several
    // (any of them right) is left to the trajectory, which keeps it.
    let ground_truth = head.target.and_then(|raw| {
        if is_text(raw) {
            return Some(raw);
        }
        let list: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
        match list[..] {
            [one] if is_text(one) => Some(one),
            _ => None,
        }
    });
    if let Some(raw) = ground_truth {
        text.push_str(",\"ground_truth\":");
        text.push_str(raw.get());
    }
    text.push_str(&format!(",\"metadata\":{{\"epoch\":{}}}", head.epoch));
    text.push_str(",\"trajectory\":");
    // Inspect's JSON logs are indented; a line ending outside a string is only whitespace.
    text.extend(
        sample
            .get()
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
    );
    text.push_str("}\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;

    fn recorded(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/traces")
            .join(name)
    }

    /// An archive of `members` (name, content), deflated.
    fn archive(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, content) in members {
            writer.start_file(*name, options).unwrap();
            writer.write_all(content).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    /// `bytes` with every `from` replaced by `to`, of the same length.
    fn patched(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let mut bytes = bytes.to_vec();
        let mut at = 0;
        while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from) {
            bytes[at + found..at + found + to.len()].copy_from_slice(to);
            at += found + to.len();
        }
        bytes
    }

    /// Two members of one name are refused: the archive's index keeps one of them. A member
    /// compressed by a method not read is said as that, not as a size.
    #[test]
    fn members_of_one_name_or_an_unknown_method_are_refused() {
        let sample = std::fs::read(recorded("inspect-weather.json")).unwrap();
        let log: serde_json::Value = serde_json::from_slice(&sample).unwrap();
        let one = log["samples"][0].to_string();
        let two = archive(&[
            ("samples/a_epoch_1.json", one.as_bytes()),
            ("samples/b_epoch_1.json", one.as_bytes()),
        ]);
        let mut converted = Converted::default();
        read_archive(Cursor::new(two.clone()), 1 << 20, &mut converted).unwrap();
        assert_eq!(converted.lines, [1, 2]);
        let same = patched(&two, b"samples/b_epoch_1", b"samples/a_epoch_1");
        let err = read_archive(Cursor::new(same), 1 << 20, &mut Converted::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("two of the archive's members have one name"),
            "{err}"
        );
        // Deflate (8) said to be bzip2 (12), in the local and the central header.
        let bzip2 = patched(
            &patched(
                &two,
                b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
                b"PK\x03\x04\x14\x00\x00\x00\x0c\x00",
            ),
            b"\x14\x00\x00\x00\x08\x00",
            b"\x14\x00\x00\x00\x0c\x00",
        );
        let err = read_archive(Cursor::new(bzip2), 1 << 20, &mut Converted::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("samples/a_epoch_1.json: cannot unpack: "),
            "{err}"
        );
        assert!(
            !err.contains("larger") && !err.contains("several logs"),
            "{err}"
        );
    }

    fn rows(converted: &Converted) -> Vec<serde_json::Value> {
        converted
            .text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn both_kinds_of_log_give_a_row_per_sample_and_epoch() {
        let eval = recorded("inspect-weather.eval");
        let json = recorded("inspect-weather.json");
        assert!(is_inspect_log(&eval) && is_inspect_log(&json));
        assert!(!is_inspect_log(&recorded("otel-openinference.json")));
        let (from_eval, from_json) = (convert(&eval).unwrap(), convert(&json).unwrap());
        let rows = rows(&from_eval);
        assert_eq!(rows.len(), 2);
        for (row, epoch) in rows.iter().zip([1, 2]) {
            assert_eq!(row["id"], "paris");
            assert_eq!(row["input"], "What is the weather in Paris?");
            assert_eq!(row["ground_truth"], "18C");
            assert_eq!(row["metadata"], serde_json::json!({"epoch": epoch}));
            assert_eq!(row["trajectory"]["epoch"], epoch);
        }
        assert_eq!(from_eval.lines, [1, 2]);
        // The same samples (Inspect writes their events apart in an archive, whole in a `.json`
        // log), each numbered by the line of the `.json` log it starts on.
        let json_rows = self::rows(&from_json);
        assert_eq!(json_rows.len(), rows.len());
        for (mut from_json, mut from_eval) in json_rows.into_iter().zip(rows) {
            let messages = |row: &serde_json::Value| row["trajectory"]["messages"].clone();
            assert!(
                messages(&from_json) == messages(&from_eval),
                "messages differ"
            );
            from_json.as_object_mut().unwrap().remove("trajectory");
            from_eval.as_object_mut().unwrap().remove("trajectory");
            assert_eq!(from_json, from_eval);
        }
        let text = std::fs::read_to_string(&json).unwrap();
        for (&line, epoch) in from_json.lines.iter().zip([1, 2]) {
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[line - 1].trim(), "{", "line {line}");
            assert_eq!(lines[line + 1].trim(), format!("\"epoch\": {epoch},"));
        }
    }

    #[test]
    fn an_input_of_messages_gives_the_row_its_last_user_text() {
        let sample = |id: u32, input: &str| {
            format!(
                r#"{{"id": {id}, "epoch": 1, "input": {input}, "messages": [],
                    "attachments": {{"h": "stored \u00e9"}}}}"#
            )
        };
        let samples = [
            sample(
                1,
                r#"[{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"},
                    {"role": "user", "content": [{"type": "text", "text": "then \"this\""}]}]"#,
            ),
            sample(2, r#""as \u00e9crit""#),
            sample(3, r#""attachment://h""#),
            sample(4, r#"[{"role": "system", "content": "s"}]"#),
        ];
        let log = format!("{{\n  \"samples\": [\n{}\n  ]\n}}\n", samples.join(",\n"));
        let mut converted = Converted::default();
        read_json(&log, &mut converted).unwrap();
        let lines: Vec<&str> = converted.text.lines().collect();
        let rows = rows(&converted);
        assert_eq!(rows[0]["input"], "then \"this\"");
        // A text is copied as written, escapes and all.
        assert!(
            lines[1].starts_with(r#"{"id":2,"input":"as \u00e9crit","#),
            "{}",
            lines[1]
        );
        assert_eq!(rows[2]["input"], "stored \u{e9}");
        assert!(rows[3].get("input").is_none(), "{}", rows[3]);
    }

    #[test]
    fn a_member_that_unpacks_past_the_cap_is_refused() {
        // Two MiB of spaces, some two KiB deflated, whose header is honest: what is refused is
        // what it unpacks to.
        let bomb = vec![b' '; 2 << 20];
        let bytes = archive(&[("samples/1_epoch_1.json", &bomb)]);
        assert!(bytes.len() < 16 << 10);
        let mut converted = Converted::default();
        let err = read_archive(Cursor::new(bytes), 1 << 20, &mut converted)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("samples/1_epoch_1.json: it is larger than the limit of 1 MiB"),
            "{err}"
        );
        assert!(converted.text.is_empty());
    }

    #[test]
    fn malformed_samples_are_refused_at_their_member_or_line() {
        let sample = |messages: &str| {
            format!(
                r#"{{"id": 1, "epoch": 1, "input": "q", "target": "a", "messages": {messages}}}"#
            )
        };
        let good = sample(r#"[{"role": "user", "content": "q"}]"#);
        let bad =
            sample(r#"[{"role": "assistant", "tool_calls": [{"id": "c", "arguments": {}}]}]"#);
        let mut converted = Converted::default();
        let bytes = archive(&[
            ("header.json", b"{}"),
            ("samples/1_epoch_1.json", good.as_bytes()),
            ("samples/1_epoch_2.json", bad.as_bytes()),
        ]);
        let err = read_archive(Cursor::new(bytes), 1 << 20, &mut converted)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "samples/1_epoch_2.json: trajectory.messages[0].tool_calls[0]: missing field \
             `function`"
        );
        for (members, expected) in [
            (
                &[("samples/2_epoch_1.json", &b"{\"id\": 2"[..])][..],
                "samples/2_epoch_1.json: not JSON: EOF while parsing an object at line 1 \
                 column 8; a sample member holds one sample",
            ),
            (
                &[(
                    "samples/2_epoch_1.json",
                    &br#"{"id": 2, "messages": []}"#[..],
                )][..],
                "samples/2_epoch_1.json: missing field `epoch` at line 1 column 25; an Inspect \
                 sample has `id`, `epoch`, `input`, `target` and `messages`",
            ),
        ] {
            let err = read_archive(Cursor::new(archive(members)), 1 << 20, &mut converted);
            assert_eq!(err.unwrap_err().to_string(), expected);
        }
        let log = format!("{{\n  \"samples\": [\n    {good},\n    {bad}\n  ]\n}}\n");
        assert_eq!(
            read_json(&log, &mut converted).unwrap_err().to_string(),
            "line 4: trajectory.messages[0].tool_calls[0]: missing field `function`"
        );
    }
}
