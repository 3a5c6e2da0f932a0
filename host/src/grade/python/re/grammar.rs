//! Every case of `tests/data/python-re-grammar.jsonl`: patterns from a grammar of Python's `re`
//! syntax, with texts, whose verdicts CPython 3.11 recorded (`gen_re_grammar.py`). Each must
//! compile exactly when CPython compiled it, find the same first match with the same groups,
//! and answer [`Regex::search_once`] alike on its first and on a repeated search.

use serde_json::Value;

use super::{Regex, RegexError};

const CASES: &str = include_str!("../../../../tests/data/python-re-grammar.jsonl");

/// The recorded patterns gavel does not reproduce, and why (README, "Deliberate differences").
const KNOWN: [(&str, &str); 2] = [
    (
        r"_(?<!.){1,3}?|(\D+|(?P<g1>٣{,2})+b)",
        "a group repeated until it matches empty text keeps its last non-empty match",
    ),
    (
        r"(?<![^\s,-Ⓐ](?ai:iς|S{,2}(cB){1, 2}){0}+)(?=i)(?!ſ{1,3}?)\s|𐵐",
        "a look-behind holding a variable-width part repeated {0} times is refused",
    ),
];

/// A byte span of `text` as the code-point span CPython reports.
fn span(text: &str, (start, end): (usize, usize)) -> Value {
    let chars = |at: usize| text[..at].chars().count();
    serde_json::json!([chars(start), chars(end)])
}

/// What gavel makes of one case, in the recording's terms.
fn replay(pattern: &str, flags: u32, text: &str) -> Result<Value, RegexError> {
    let regex = match Regex::new(pattern, flags) {
        Ok(regex) => regex,
        Err(RegexError::Syntax { .. } | RegexError::Engine(_) | RegexError::Flags(_)) => {
            return Ok(serde_json::json!({ "error": true }));
        }
        Err(other) => return Err(other),
    };
    let found = regex.search(text)?;
    let groups = found.as_ref().map(|m| {
        (1..=regex.groups())
            .map(|i| match m.captures.get(i) {
                Some(group) => span(text, (group.start(), group.end())),
                None => Value::Null,
            })
            .collect::<Vec<_>>()
    });
    Ok(serde_json::json!({
        "match": found.as_ref().map(|m| span(text, m.span())),
        "groups": groups,
    }))
}

#[test]
fn every_generated_case_matches_cpython() {
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut errors = 0;
    let mut matched = 0;
    let mut known = 0;
    for line in CASES.lines() {
        let mut case: Value = serde_json::from_str(line).unwrap();
        let case = case.as_object_mut().unwrap();
        let pattern = case.remove("pattern").unwrap();
        let pattern = pattern.as_str().unwrap();
        let flags = case.remove("flags").unwrap().as_u64().unwrap() as u32;
        let text = case.remove("text").unwrap();
        let text = text.as_str().unwrap();
        let want = Value::Object(case.clone());
        if KNOWN.iter().any(|(known, _)| *known == pattern) {
            known += 1;
            continue;
        }
        cases += 1;
        errors += usize::from(want["error"] == true);
        matched += usize::from(want["match"].is_array());
        let describe = |got: String| format!("{pattern:?} ({flags}) on {text:?}: {got}");
        let got = replay(pattern, flags, text);
        if got.as_ref() != Ok(&want) {
            failures.push(describe(format!("got {got:?}, CPython {want}")));
            continue;
        }
        if want["error"] == true {
            continue;
        }
        let expected = Ok(want["match"].is_array());
        for round in ["first", "repeated"] {
            let once = Regex::search_once(pattern, flags, text);
            if once != expected {
                failures.push(describe(format!("{round} search_once gave {once:?}")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ from CPython:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(known, 4, "the known differences are recorded");
    // The recording keeps its mix: compile errors, matches and misses.
    assert!(cases >= 5000, "{cases} cases");
    assert!(
        errors >= 500 && matched >= 1500,
        "{errors} errors, {matched} matches"
    );
}
