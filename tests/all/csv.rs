//! CSV datasets read as letta-evals reads them: the same grades as the equivalent JSONL, and
//! errors that name the file, the line and the column.

use crate::common::{Workspace, stderr};

const SUITE: &str = "\
name: csv
dataset: DATA
trajectories: [runs.jsonl]
graders:
  exact:
    kind: tool
    function: exact_match
";

/// Recorded runs for samples `1` and `s-2`: a text id, as pandas types an id column holding one.
const RUNS: &str = concat!(
    r#"{"sample_id": "1", "trajectory": [[{"message_type": "assistant_message", "content": "Paris"}]]}"#,
    "\n",
    r#"{"sample_id": "s-2", "trajectory": [[{"message_type": "assistant_message", "content": "été, \"oui\"\nnon"}]]}"#,
    "\n",
);

fn grades(ws: &Workspace, data: &str, out: &str) -> Vec<serde_json::Value> {
    ws.write("suite.yaml", &SUITE.replace("DATA", data));
    let run = ws.gavel(&["run", "suite.yaml", "-o", out, "-q"]);
    assert!(run.status.code() != Some(2), "{}", stderr(&run));
    ws.results(out)
}

#[test]
fn a_csv_dataset_grades_as_the_jsonl_letta_evals_makes_of_it() {
    let ws = Workspace::new();
    ws.write("runs.jsonl", RUNS);
    // Quoted multi-line cells, unicode, a trimmed cell, a JSON object column.
    ws.write(
        "data.csv",
        "sample_id,input,ground_truth,rubric_vars\n\
         1,Capital of France?, Paris ,\"{\"\"k\"\": 1}\"\n\
         s-2,\"Say it\",\"été, \"\"oui\"\"\nnon\",NA\n",
    );
    ws.write(
        "data.jsonl",
        concat!(
            r#"{"sample_id": "1", "input": "Capital of France?", "ground_truth": "Paris", "rubric_vars": {"k": 1}}"#,
            "\n",
            r#"{"sample_id": "s-2", "input": "Say it", "ground_truth": "été, \"oui\"\nnon"}"#,
            "\n",
        ),
    );
    let csv = grades(&ws, "data.csv", "from-csv");
    assert_eq!(csv, grades(&ws, "data.jsonl", "from-jsonl"));
    assert_eq!(csv.len(), 2);
    assert_eq!(csv[0]["grades"]["exact"]["score"], 1.0);
    assert_eq!(csv[1]["grades"]["exact"]["score"], 1.0);
}

#[test]
fn bad_csv_datasets_are_refused_with_the_line_and_the_column() {
    let ws = Workspace::new();
    ws.write("runs.jsonl", RUNS);
    ws.write("suite.yaml", &SUITE.replace("DATA", "data.csv"));
    for (text, expected) in [
        ("", "the CSV file is empty"),
        ("id,input\n", "no rows"),
        (
            "id,question\n1,q\n",
            "no `input` column (the header line names `id`, `question`)",
        ),
        ("id,input\n1,\n", "line 2, input: the cell is empty"),
        (
            "id,input\n1,q\n2,\"[oops]\"\n",
            "line 3, input: the cell starts with `[`",
        ),
        (
            "id,input,rubric_vars\n1,q,[1]\n",
            "line 2, rubric_vars: the cell is JSON but not an object",
        ),
        (
            "id,input\n1,q,extra\n",
            "line 2: 3 cells where the header line names 2 columns",
        ),
        // pandas: "EOF inside string starting at row 1".
        (
            "id,input,ground_truth\n1,\"hello,Paris\n2,x,y\n",
            "line 2: a cell starts with a quote that is never closed",
        ),
        // letta-evals refuses an infinite id; `NaN` is missing, and its row's position is the
        // id of another row.
        (
            "id,input\n1,a\n2,b\ninf,c\nNaN,d\n",
            "line 4, id: pandas reads `inf` as an infinite number",
        ),
        (
            "id,input\n1,a\n2,b\nNaN,c\n",
            "line 4: the row has no id (its id cell is empty, or a word pandas reads as \
             missing, such as `NaN`), so it takes its position, 2, which is the id of the row \
             on line 3",
        ),
        (
            "id,input\n1,a\n12345678901234567890123456,b\n",
            "line 3, id: `12345678901234567890123456` is too large for a number id",
        ),
    ] {
        ws.write("data.csv", text);
        let validate = ws.gavel(&["validate", "suite.yaml"]);
        assert_eq!(validate.status.code(), Some(2), "{text:?}");
        let message = stderr(&validate);
        assert!(
            message.contains("data.csv: ") && message.contains(expected),
            "{text:?}: {message}"
        );
    }
}
