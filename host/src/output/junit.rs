//! JUnit XML for CI: one `<testcase>` per sample, `<failure>` for a failed sample and `<error>`
//! for one in error, so CI dashboards keep "the agent got it wrong" apart from "grading broke".
//!
//! ```xml
//! <?xml version="1.0" encoding="UTF-8"?>
//! <testsuites name="qa" tests="3" failures="1" errors="1">
//!   <testsuite name="qa" tests="3" failures="1" errors="1">
//!     <testcase name="0" classname="qa"/>
//!     <testcase name="1" classname="qa">
//!       <failure message="exact: Exact match: False" type="fail">exact: score 0 ...</failure>
//!     </testcase>
//!     <testcase name="2" classname="qa">
//!       <error message="extraction: Empty submission - extractor found no content" type="extraction">...</error>
//!     </testcase>
//!   </testsuite>
//! </testsuites>
//! ```
//!
//! The totals head the document but are known only at the end, so test cases go to an
//! anonymous temporary file as they arrive and are copied behind the header by
//! [`JunitWriter::finish`]: memory stays flat however many samples there are.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

use crate::grade::{Grade, GradeKey, Status};
use crate::output::result::SampleResult;

/// Streams sample results into a JUnit XML document written to `out` on [`finish`](Self::finish).
pub struct JunitWriter<W: Write> {
    out: W,
    suite: String,
    cases: BufWriter<File>,
    tests: u64,
    failures: u64,
    errors: u64,
}

impl<W: Write> JunitWriter<W> {
    pub fn new(out: W, suite_name: &str) -> io::Result<Self> {
        Ok(JunitWriter {
            out,
            suite: suite_name.to_string(),
            cases: BufWriter::new(tempfile::tempfile()?),
            tests: 0,
            failures: 0,
            errors: 0,
        })
    }

    pub fn add(&mut self, result: &SampleResult) -> io::Result<()> {
        self.tests += 1;
        let mut case = format!(
            "    <testcase name=\"{}\" classname=\"{}\"",
            attribute(&result.sample_id.to_string()),
            attribute(&self.suite)
        );
        match result.status() {
            Status::Pass | Status::Skip => case.push_str("/>\n"),
            Status::Fail => {
                self.failures += 1;
                let failing = result
                    .grades
                    .iter()
                    .filter(|(_, g)| g.status == Status::Fail);
                push_outcome(&mut case, "failure", "fail", failing);
            }
            Status::Error => {
                self.errors += 1;
                let erroring = result
                    .grades
                    .iter()
                    .filter(|(_, g)| g.status == Status::Error);
                match &result.error {
                    Some(error) => {
                        let category = category_name(error);
                        case.push_str(&format!(
                            ">\n      <error message=\"{}\" type=\"{}\">{}",
                            attribute(&format!("{category}: {}", error.message)),
                            attribute(&category),
                            text(&error.message)
                        ));
                        for (key, grade) in erroring {
                            case.push('\n');
                            case.push_str(&text(&detail(key, grade)));
                        }
                        case.push_str("</error>\n    </testcase>\n");
                    }
                    None => push_outcome(&mut case, "error", "grade", erroring),
                }
            }
        }
        self.cases.write_all(case.as_bytes())
    }

    /// Writes the document to `out` and hands `out` back.
    pub fn finish(mut self) -> io::Result<W> {
        let mut cases = self.cases.into_inner().map_err(|e| e.into_error())?;
        cases.seek(SeekFrom::Start(0))?;
        let totals = format!(
            "tests=\"{}\" failures=\"{}\" errors=\"{}\"",
            self.tests, self.failures, self.errors
        );
        let name = attribute(&self.suite);
        write!(
            self.out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites name=\"{name}\" {totals}>\n  <testsuite name=\"{name}\" {totals}>\n"
        )?;
        io::copy(&mut cases, &mut self.out)?;
        self.out.write_all(b"  </testsuite>\n</testsuites>\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Closes `case` with a `<failure>` or `<error>` element naming each listed grade.
fn push_outcome<'a>(
    case: &mut String,
    element: &str,
    kind: &str,
    grades: impl Iterator<Item = &'a (GradeKey, Grade)>,
) {
    let (summaries, details): (Vec<String>, Vec<String>) = grades
        .map(|(key, grade)| (format!("{key}: {}", grade.rationale), detail(key, grade)))
        .unzip();
    case.push_str(&format!(
        ">\n      <{element} message=\"{}\" type=\"{kind}\">{}</{element}>\n    </testcase>\n",
        attribute(&summaries.join("; ")),
        text(&details.join("\n"))
    ));
}

/// One grade in full: score, status, rationale, and what was expected where the grader says.
fn detail(key: &str, grade: &Grade) -> String {
    let mut line = format!(
        "{key}: score {} ({}): {}",
        grade.score,
        grade.status.as_str(),
        grade.rationale
    );
    if let Some(expected) = &grade.details().expected {
        line.push_str(&format!("\n  expected: {expected}"));
    }
    if let Some(actual) = &grade.details().actual {
        line.push_str(&format!("\n  actual: {actual}"));
    }
    if !grade.submission.is_empty() {
        line.push_str(&format!("\n  submission: {}", grade.submission));
    }
    line
}

fn category_name(error: &crate::output::result::SampleError) -> String {
    match serde_json::to_value(error.category) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "error".to_string(),
    }
}

/// Text as an attribute value inside double quotes; line breaks and tabs are kept as character
/// references, which attribute normalisation would otherwise turn into spaces.
pub(crate) fn attribute(s: &str) -> String {
    escape(s, true)
}

/// Text as element content.
fn text(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\n' if in_attribute => out.push_str("&#10;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            // A raw CR would be read back as a line feed.
            '\r' => out.push_str("&#13;"),
            '\n' | '\t' => out.push(c),
            // XML 1.0 has no way to carry these, not even as character references: show them.
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::sample::SampleId;
    use crate::output::result::{ErrorCategory, SampleError};

    fn result(id: SampleId, grades: Vec<(&str, Grade)>) -> SampleResult {
        SampleResult {
            sample_id: id,
            grades: grades
                .into_iter()
                .map(|(k, g)| (k.to_string().into(), g))
                .collect(),
            reward: None,
            error: None,
        }
    }

    fn document(suite: &str, results: &[SampleResult]) -> String {
        let mut writer = JunitWriter::new(Vec::new(), suite).unwrap();
        for r in results {
            writer.add(r).unwrap();
        }
        String::from_utf8(writer.finish().unwrap()).unwrap()
    }

    fn mixed() -> Vec<SampleResult> {
        let passing = result(
            SampleId::Int(0),
            vec![("exact", Grade::pass("Exact match: True"))],
        );
        let failing = result(
            SampleId::Str("q-1".into()),
            vec![
                (
                    "exact",
                    Grade::fail("Exact match: False").with_submission("Lyon"),
                ),
                ("contains", Grade::pass("Contains ground_truth: True")),
                (
                    "tools",
                    Grade::fail("missing tool")
                        .with_expected_actual(serde_json::json!(["search"]), serde_json::json!([])),
                ),
            ],
        );
        let mut errored = result(
            SampleId::Int(2),
            vec![("exact", Grade::fail("Empty submission"))],
        );
        errored.error = Some(SampleError {
            category: ErrorCategory::Extraction,
            message: "Empty submission - extractor found no content".into(),
        });
        let grade_error = result(
            SampleId::Int(3),
            vec![("judge", Grade::error("deadline exceeded"))],
        );
        vec![passing, failing, errored, grade_error]
    }

    #[test]
    fn a_junit_consumer_reads_one_case_per_sample() {
        let xml = document("capitals", &mixed());
        let suites = junit_parser::from_reader(xml.as_bytes()).unwrap();
        assert_eq!((suites.tests, suites.failures, suites.errors), (4, 1, 2));
        let suite = &suites.suites[0];
        assert_eq!(suite.name, "capitals");
        assert_eq!((suite.tests, suite.failures, suite.errors), (4, 1, 2));
        let names: Vec<&str> = suite
            .cases
            .iter()
            .map(|c| c.original_name.as_str())
            .collect();
        assert_eq!(names, ["0", "q-1", "2", "3"]);
        assert!(
            suite
                .cases
                .iter()
                .all(|c| c.classname.as_deref() == Some("capitals"))
        );
        assert!(suite.cases[0].status.is_success());

        let failure = suite.cases[1].status.failure_as_ref();
        assert_eq!(
            failure.message,
            "exact: Exact match: False; tools: missing tool"
        );
        assert_eq!(failure.failure_type, "fail");
        assert!(
            failure.text.contains("submission: Lyon"),
            "{}",
            failure.text
        );
        assert!(
            failure.text.contains("expected: [\"search\"]"),
            "{}",
            failure.text
        );
        assert!(!failure.text.contains("contains"), "{}", failure.text);

        let error = suite.cases[2].status.error_as_ref();
        assert_eq!(
            error.message,
            "extraction: Empty submission - extractor found no content"
        );
        assert_eq!(error.error_type, "extraction");
        let error = suite.cases[3].status.error_as_ref();
        assert_eq!(error.message, "judge: deadline exceeded");
    }

    const HOSTILE: &str = "a<b>&\"c'\n\td\r\u{0}\u{1b}\u{fffe}]]> é 😀";
    /// HOSTILE as it reads back: the characters XML cannot carry are spelled out.
    const SHOWN: &str = "a<b>&\"c'\n\td\r\\u{0}\\u{1b}\\u{fffe}]]> é 😀";

    #[test]
    fn escaping_survives_markup_and_control_characters() {
        let results = vec![result(
            SampleId::Str(HOSTILE.into()),
            vec![("m", Grade::fail(HOSTILE).with_submission(HOSTILE))],
        )];
        let xml = document(HOSTILE, &results);
        for forbidden in ['\u{0}', '\u{1b}', '\u{fffe}'] {
            assert!(!xml.contains(forbidden), "{forbidden:?} written raw");
        }
        let suites = junit_parser::from_reader(xml.as_bytes()).unwrap();
        let case = &suites.suites[0].cases[0];
        assert_eq!(case.original_name, SHOWN);
        assert_eq!(case.classname.as_deref(), Some(SHOWN));
        assert_eq!(case.status.failure_as_ref().message, format!("m: {SHOWN}"));
    }

    /// Python's expat parser enforces XML 1.0's character rules, which the Rust consumer does not.
    #[test]
    fn document_is_well_formed_xml_for_a_strict_parser() {
        let mut results = mixed();
        results.push(result(
            SampleId::Str(HOSTILE.into()),
            vec![("m", Grade::fail(HOSTILE))],
        ));
        let xml = document(HOSTILE, &results);
        let script = "import json, sys, xml.etree.ElementTree as ET\n\
                      root = ET.fromstring(sys.stdin.buffer.read())\n\
                      cases = root.findall('./testsuite/testcase')\n\
                      failure = cases[-1].find('failure')\n\
                      print(json.dumps([len(cases), cases[-1].get('name'), failure.text]))";
        let child = std::process::Command::new("python3")
            .args(["-c", script])
            .env("PYTHONIOENCODING", "utf-8")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let mut child = child.expect("python3 runs the strict XML check");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(xml.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}\n{xml}");
        let (cases, name, failure): (usize, String, String) =
            serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!((cases, name.as_str()), (5, SHOWN));
        assert_eq!(failure, format!("m: score 0 (fail): {SHOWN}"));
    }

    #[test]
    fn an_empty_run_is_a_valid_empty_suite() {
        let xml = document("empty", &[]);
        let suites = junit_parser::from_reader(xml.as_bytes()).unwrap();
        assert_eq!(suites.tests, 0);
        assert!(suites.suites[0].cases.is_empty());
    }
}
