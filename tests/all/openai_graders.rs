//! OpenAI's grader objects (`kind: openai`) through the real binary: the example suite over
//! rows in OpenAI's eval shape and a recorded run, and each mistake of a grader object refused
//! at load where it is written.

use crate::common::c::repo_root;
use crate::common::{Workspace, stderr};
use serde_json::{Value, json};

/// (score to 6 places, status) of each metric of a result line.
fn grades(result: &Value, keys: &[&str]) -> Vec<(f64, String)> {
    keys.iter()
        .map(|key| {
            let grade = &result["grades"][key];
            (
                (grade["score"].as_f64().unwrap() * 1e6).round() / 1e6,
                grade["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_example_suite_grades_eval_shaped_rows_and_recorded_runs() {
    let ws = Workspace::new();
    let suite = repo_root().join("examples/openai-graders/suite.yaml");
    let out = ws.gavel(&["run", suite.to_str().unwrap(), "-o", "out"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    assert_eq!(results.len(), 4);
    let keys = ["mentions_answer", "blend"];
    let pass = |score: f64| (score, "pass".to_string());
    let fail = |score: f64| (score, "fail".to_string());
    assert_eq!(grades(&results[0], &keys), vec![pass(1.0), pass(1.0)]);
    assert_eq!(grades(&results[1], &keys), vec![pass(1.0), fail(0.3)]);
    assert_eq!(grades(&results[2], &keys), vec![fail(0.0), fail(0.111111)]);
    // A row of gavel's own shape is the item; its recorded run makes the sample.
    assert_eq!(results[3]["sample_id"], json!("recorded-run"));
    assert_eq!(grades(&results[3], &keys), vec![pass(1.0), fail(0.5)]);
    assert_eq!(
        results[1]["grades"]["blend"]["metadata"]["sub_rewards"],
        json!({"exact": 0.0, "overlap": 0.6})
    );
    assert_eq!(
        results[3]["grades"]["mentions_answer"]["submission"],
        json!("The capital of Japan is tokyo.")
    );
    // From the JSON file named by `grader_path`: identical texts, then a distant one.
    assert_eq!(
        results[0]["grades"]["close_to_reference"]["score"],
        json!(1.0)
    );
    assert_eq!(
        results[2]["grades"]["close_to_reference"]["status"],
        json!("fail")
    );
}

const STRING_CHECK: &str = "\
name: s
dataset: data.jsonl
graders:
  check:
    kind: openai
    grader:
      type: string_check
      name: check
      input: \"{{sample.output_text}}\"
      reference: \"{{item.answer}}\"
      operation: equals
";

#[test]
fn a_grader_objects_mistakes_are_refused_at_load_where_they_are_written() {
    let ws = Workspace::new();
    ws.write("data.jsonl", "{\"item\": {\"answer\": \"a\"}}\n");
    ws.write("suite.yaml", STRING_CHECK);
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "suite.yaml:11:18: graders.check.grader.operation: `equals` is not one of eq, ne, \
             like, ilike\n  hint: did you mean `eq`?"
        ),
        "{}",
        stderr(&out)
    );

    let formula = "name: s\ndataset: data.jsonl\ngraders:\n  m:\n    kind: openai\n    grader:\n      \
                   type: multi\n      graders:\n        a: {type: string_check, input: x, \
                   reference: y, operation: eq}\n      calculate_output: \"a +* 2\"\n";
    ws.write("suite.yaml", formula);
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "suite.yaml:10:25: graders.m.grader.calculate_output: at character 4: `*` is not \
             expected here"
        ),
        "{}",
        stderr(&out)
    );

    ws.write(
        "g.json",
        "{\n  \"type\": \"text_similarity\",\n  \"input\": \"{{sample.output_text}}\",\n  \
         \"reference\": \"{{ answer }}\",\n  \"evaluation_metric\": \"rouge_l\"\n}\n",
    );
    ws.write(
        "suite.yaml",
        "name: s\ndataset: data.jsonl\ngraders:\n  t:\n    kind: openai\n    grader_path: g.json\n",
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "g.json:4:16: reference: at character 4: `{{ answer }}` is not `item.NAME` or \
             `sample.NAME`: only the item and sample namespaces exist"
        ),
        "{}",
        stderr(&out)
    );

    ws.write(
        "suite.yaml",
        "name: s\ndataset: data.jsonl\ngraders:\n  t:\n    kind: openai\n",
    );
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("graders.t.grader: a `kind: openai` grader needs `grader` or `grader_path`"),
        "{}",
        stderr(&out)
    );
}

/// A WordNet of one synset, `car` and `auto` (nouns), in WordNet's dict files.
fn tiny_wordnet(ws: &Workspace) -> std::path::PathBuf {
    for part in ["noun", "verb", "adj", "adv"] {
        for file in [
            format!("index.{part}"),
            format!("data.{part}"),
            format!("{part}.exc"),
        ] {
            ws.write(&format!("wordnet/{file}"), "");
        }
    }
    ws.write(
        "wordnet/data.noun",
        "00000000 06 n 02 car 0 auto 0 000 | a motor vehicle  \n",
    );
    ws.write(
        "wordnet/index.noun",
        "  1 a license line\nauto n 1 0 1 0 00000000  \ncar n 1 0 1 0 00000000  \n",
    );
    ws.path("wordnet")
}

#[test]
fn meteor_aligns_words_by_stem_and_by_wordnet_synonym() {
    let ws = Workspace::new();
    let wordnet = tiny_wordnet(&ws);
    ws.write(
        "data.jsonl",
        "{\"item\": {\"reference\": \"the car truck\"}, \"sample\": {\"output_text\": \"The auto trucks\"}}\n\
         {\"item\": {\"reference\": \"the big car\"}, \"sample\": {\"output_text\": \"a huge lorry\"}}\n",
    );
    ws.write(
        "suite.yaml",
        "name: s\ndataset: data.jsonl\ngraders:\n  m:\n    kind: openai\n    grader:\n      \
         type: text_similarity\n      input: '{{sample.output_text}}'\n      \
         reference: '{{item.reference}}'\n      evaluation_metric: meteor\n",
    );
    let vars = [("GAVEL_WORDNET", wordnet.to_str().unwrap())];
    let out =
        crate::common::gavel_with_env(&ws.path(""), &["run", "suite.yaml", "-o", "out"], &vars);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    // `The`/`the` exactly, `trucks`/`truck` by their stem, `auto`/`car` as synonyms: one chunk of
    // three matches, F-mean 1, less the penalty 0.5 * (1/3)^3.
    let score = results[0]["grades"]["m"]["score"].as_f64().unwrap();
    assert!((score - (1.0 - 0.5 / 27.0)).abs() < 1e-12, "{score}");
    assert_eq!(results[1]["grades"]["m"]["score"], json!(0.0));

    let missing = ws.path("no-wordnet");
    let vars = [("GAVEL_WORDNET", missing.to_str().unwrap())];
    let out = crate::common::gavel_with_env(&ws.path(""), &["validate", "suite.yaml"], &vars);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "suite.yaml:10:26: graders.m.grader.evaluation_metric: `meteor` needs WordNet, which \
             cannot be read: {}/index.noun: No such file or directory (os error 2); set \
             GAVEL_WORDNET to a folder holding WordNet 3.0's dict files",
            missing.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_variable_the_row_lacks_is_an_error_grade_that_names_it() {
    let ws = Workspace::new();
    ws.write(
        "data.jsonl",
        "{\"item\": {\"answer\": \"a\"}, \"sample\": {\"output_text\": \"a\"}}\n\
         {\"item\": {\"question\": \"q\"}, \"sample\": {\"output_text\": \"a\"}}\n",
    );
    ws.write("suite.yaml", &STRING_CHECK.replace("equals", "eq"));
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    assert_eq!(results[0]["grades"]["check"]["status"], json!("pass"));
    let missing = &results[1]["grades"]["check"];
    assert_eq!(missing["status"], json!("error"));
    assert_eq!(
        missing["rationale"],
        json!("the template variable `{{ item.answer }}` names nothing in this row")
    );
}

/// A row's own `sample` that gives only `output_text` has what OpenAI derives from it, as a
/// posted `model_sample` has: `output_json` (the text read as an object), `output_tools` and
/// `choices`; what the row does give is kept.
#[test]
fn a_rows_sample_gets_what_openai_derives_from_its_text() {
    let ws = Workspace::new();
    ws.write(
        "data.jsonl",
        "{\"item\": {\"answer\": \"Paris\"}, \"sample\": {\"output_text\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}\n\
         {\"item\": {\"answer\": \"Paris\"}, \"sample\": {\"output_text\": \"x\", \"output_json\": {\"city\": \"Paris\"}}}\n",
    );
    ws.write(
        "suite.yaml",
        &STRING_CHECK
            .replace("equals", "eq")
            .replace(
                "{{sample.output_text}}",
                "{{sample.output_json.city}} {{sample.choices.0.message.content}}",
            )
            .replace("{{item.answer}}", "{{item.answer}} {{sample.output_text}}"),
    );
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = ws.results("out");
    for result in &results {
        assert_eq!(
            result["grades"]["check"]["status"],
            json!("pass"),
            "{result}"
        );
    }
}

#[test]
fn a_python_grader_object_runs_as_gavels_python_grader() {
    let Some(cache) = crate::python_graders::cache() else {
        return;
    };
    let ws = Workspace::new();
    ws.write(
        "data.jsonl",
        "{\"item\": {\"answer\": \"Paris\"}, \"sample\": {\"output_text\": \"Paris\"}}\n\
         {\"id\": 7, \"answer\": \"Paris\", \"trajectory\": [[{\"message_type\": \
         \"assistant_message\", \"content\": \"Rome\"}]]}\n",
    );
    ws.write(
        "grader.json",
        &json!({
            "type": "python",
            "name": "same",
            "source": "def grade(sample, item):\n    return 1.0 if sample['output_text'] == item['answer'] else 0.25\n",
            "pass_threshold": 0.5,
        })
        .to_string(),
    );
    ws.write(
        "suite.yaml",
        "name: s\ndataset: data.jsonl\ngraders:\n  same:\n    kind: openai\n    grader_path: grader.json\n",
    );
    let results = crate::python_graders::graded(cache, &ws);
    assert_eq!(
        grades(&results[0], &["same"]),
        vec![(1.0, "pass".to_string())]
    );
    assert_eq!(
        grades(&results[1], &["same"]),
        vec![(0.25, "fail".to_string())]
    );
}

const MODEL_GRADERS: &str = "\
name: s
dataset: data.jsonl
graders:
  score:
    kind: openai
    base_url: BASE
    max_retries: 0
    grader:
      type: score_model
      name: score
      model: gpt-4o-mini
      input:
        - role: system
          content: Score the answer from 0 to 10.
        - role: user
          content: \"Question: {{item.question}} Answer: {{sample.output_text}}\"
      range: [0, 10]
      pass_threshold: 5
      sampling_params: {temperature: 0.2, seed: 7, max_completions_tokens: 300}
  label:
    kind: openai
    base_url: BASE
    max_retries: 0
    grader:
      type: label_model
      name: label
      model: gpt-4o-mini
      input:
        - {role: user, content: {type: input_text, text: \"Is {{sample.output_text}} right?\"}}
      labels: [correct, incorrect]
      passing_labels: [correct]
";

/// The stand-in model's answer to a request of either grader: a score of 8 or 2, a label
/// `correct` or `incorrect`, as the answer names Paris or not; a 400 for an answer of `boom`.
pub(crate) fn answer(request: &crate::openai_server::Recorded) -> crate::openai_server::Reply {
    use crate::openai_server::Reply;
    let body = request.json();
    let text = body["messages"].to_string();
    if text.contains("boom") {
        return Reply::status(400, r#"{"error": {"message": "bad request"}}"#);
    }
    let right = text.contains("Paris");
    let result =
        match body["response_format"]["json_schema"]["schema"]["properties"]["result"]["type"]
            .as_str()
        {
            Some("string") => json!(if right { "correct" } else { "incorrect" }),
            _ => json!(if right { 8 } else { 2 }),
        };
    Reply::completion(&json!({"steps": [], "result": result}).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_graders_ask_the_model_in_their_schema_and_read_its_result() {
    let server = crate::openai_server::Server::start(|_, request| answer(request)).await;
    let ws = Workspace::new();
    ws.write(
        "data.jsonl",
        "{\"item\": {\"question\": \"Capital?\"}, \"sample\": {\"output_text\": \"Paris\"}}\n\
         {\"item\": {\"question\": \"Capital?\"}, \"sample\": {\"output_text\": \"Rome\"}}\n\
         {\"item\": {\"question\": \"Capital?\"}, \"sample\": {\"output_text\": \"boom\"}}\n",
    );
    ws.write(
        "suite.yaml",
        &MODEL_GRADERS.replace("BASE", &server.base_url()),
    );
    let out = crate::judge::gavel(
        &ws,
        &["run", "suite.yaml", "-o", "out", "--no-cache"],
        &[("OPENAI_API_KEY", crate::judge::KEY)],
    )
    .await;
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    let keys = ["score", "label"];
    let pass = |score: f64| (score, "pass".to_string());
    let fail = |score: f64| (score, "fail".to_string());
    assert_eq!(grades(&results[0], &keys), vec![pass(0.8), pass(1.0)]);
    assert_eq!(grades(&results[1], &keys), vec![fail(0.2), fail(0.0)]);
    let failed = &results[2]["grades"]["score"];
    assert_eq!(failed["status"], json!("error"));
    assert!(
        failed["rationale"]
            .as_str()
            .unwrap()
            .contains("bad request"),
        "{failed}"
    );

    let requests = server.requests();
    let score = requests
        .iter()
        .map(|r| r.json())
        .find(|b| b["messages"].to_string().contains("Paris") && b.get("seed").is_some())
        .expect("the score grader asked about Paris");
    assert_eq!(score["model"], json!("gpt-4o-mini"));
    assert_eq!(
        score["messages"],
        json!([
            {"role": "system", "content": "Score the answer from 0 to 10."},
            {"role": "user", "content": "Question: Capital? Answer: Paris"},
        ])
    );
    assert_eq!(
        (
            &score["temperature"],
            &score["seed"],
            &score["max_completion_tokens"]
        ),
        (&json!(0.2), &json!(7), &json!(300))
    );
    assert_eq!(
        score["response_format"]["json_schema"]["strict"],
        json!(true)
    );
    let label = requests
        .iter()
        .map(|r| r.json())
        .find(|b| b.get("seed").is_none() && b["messages"].to_string().contains("Paris"))
        .expect("the label grader asked about Paris");
    assert_eq!(
        label["response_format"]["json_schema"]["schema"]["properties"]["result"],
        json!({"type": "string", "enum": ["correct", "incorrect"]})
    );
    assert_eq!(
        label["messages"],
        json!([{"role": "user", "content": "Is Paris right?"}])
    );
}

/// What `gavel validate` says of the suite `suite` over the dataset `data`, which it refuses.
fn refused(data: &str, suite: &str) -> String {
    let ws = Workspace::new();
    ws.write("data.jsonl", data);
    ws.write("suite.yaml", suite);
    let out = ws.gavel(&["validate", "suite.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn a_label_model_whose_passing_labels_are_not_labels_is_refused() {
    let said = refused(
        "{\"item\": {}}\n",
        &MODEL_GRADERS
            .replace("BASE", "http://127.0.0.1:9")
            .replace("passing_labels: [correct]", "passing_labels: [right]"),
    );
    assert!(
        said.contains(
            "suite.yaml:31:23: graders.label.grader.passing_labels: `right` is not one of the \
             labels (correct, incorrect)"
        ),
        "{said}"
    );
}

/// A stand-in embeddings endpoint: `a` is [1, 0], `b` [0, 1], anything else [1, 1].
fn embeddings(request: &crate::openai_server::Recorded) -> crate::openai_server::Reply {
    let body = request.json();
    let data: Vec<Value> = (body["input"].as_array().unwrap().iter().enumerate())
        .map(|(index, text)| {
            let vector = match text.as_str() {
                Some("a") => json!([1.0, 0.0]),
                Some("b") => json!([0.0, 1.0]),
                _ => json!([1.0, 1.0]),
            };
            json!({"object": "embedding", "index": index, "embedding": vector})
        })
        .collect();
    crate::openai_server::Reply::status(200, &json!({"object": "list", "data": data}).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cosine_compares_the_embeddings_endpoints_vectors() {
    let server = crate::openai_server::Server::start(|_, request| embeddings(request)).await;
    let ws = Workspace::new();
    let rows: Vec<Value> = [("a", "a"), ("a", "b"), ("a", "c")]
        .iter()
        .map(|(output, reference)| {
            json!({"item": {"reference": reference}, "sample": {"output_text": output}})
        })
        .collect();
    ws.write_rows("data.jsonl", &rows);
    ws.write(
        "suite.yaml",
        &format!(
            "name: s\ndataset: data.jsonl\ngraders:\n  near:\n    kind: openai\n    \
             base_url: {}\n    grader:\n      type: text_similarity\n      \
             input: \"{{{{sample.output_text}}}}\"\n      reference: \"{{{{item.reference}}}}\"\n      \
             evaluation_metric: cosine\n      pass_threshold: 0.7\n",
            server.base_url()
        ),
    );
    let out = crate::judge::gavel(
        &ws,
        &["run", "suite.yaml", "-o", "out", "--no-cache"],
        &[("OPENAI_API_KEY", crate::judge::KEY)],
    )
    .await;
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let results = ws.results("out");
    let near: Vec<(f64, String)> = results.iter().flat_map(|r| grades(r, &["near"])).collect();
    assert_eq!(
        near,
        vec![
            (1.0, "pass".to_string()),
            (0.0, "fail".to_string()),
            (
                (std::f64::consts::FRAC_1_SQRT_2 * 1e6).round() / 1e6,
                "pass".to_string()
            )
        ]
    );
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.path.ends_with("/embeddings")));
    assert_eq!(requests[0].json()["model"], json!("text-embedding-3-large"));
    assert_eq!(requests[0].json()["input"], json!(["a", "a"]));
}

/// A suite whose `multi` blends a string check with a `python` grader of the answer's length.
const MULTI_WITH_PYTHON: &str = "\
name: s
dataset: data.jsonl
graders:
  blend:
    kind: openai
    grader:
      type: multi
      name: blend
      graders:
        exact: {type: string_check, name: exact, input: \"{{sample.output_text}}\", reference: \"{{item.answer}}\", operation: eq}
        length:
          type: python
          name: length
          image_tag: \"2025-05-08\"
          source: |
            def grade(sample, item):
                if sample['output_text'] == 'boom':
                    raise ValueError('no answer')
                return min(len(sample['output_text']) / 10, 1.0)
      calculate_output: \"0.5 * exact + 0.5 * length\"
";

/// The results of [`MULTI_WITH_PYTHON`] over rows answering Paris with each of `answers`;
/// `None` where the Python interpreter cannot be built.
fn multi_graded(answers: &[&str]) -> Option<Vec<Value>> {
    let cache = crate::python_graders::cache()?;
    let ws = Workspace::new();
    let rows: String = (answers.iter())
        .map(|answer| json!({"item": {"answer": "Paris"}, "sample": {"output_text": answer}}))
        .map(|row| format!("{row}\n"))
        .collect();
    ws.write("data.jsonl", &rows);
    ws.write("suite.yaml", MULTI_WITH_PYTHON);
    Some(crate::python_graders::graded(cache, &ws))
}

#[test]
fn a_python_grader_inside_a_multi_feeds_its_formula() {
    let Some(results) = multi_graded(&["Paris", "Rome, Italy"]) else {
        return;
    };
    // 0.5 * 1 + 0.5 * (5 / 10); then 0.5 * 0 + 0.5 * min(11 / 10, 1).
    assert_eq!(
        grades(&results[0], &["blend"]),
        vec![(0.75, "fail".to_string())]
    );
    assert_eq!(
        grades(&results[1], &["blend"]),
        vec![(0.5, "fail".to_string())]
    );
    assert_eq!(
        results[0]["grades"]["blend"]["metadata"]["sub_rewards"],
        json!({"exact": 1.0, "length": 0.5})
    );
}

#[test]
fn a_python_grader_inside_a_multi_that_raises_is_the_multis_error() {
    let Some(results) = multi_graded(&["boom"]) else {
        return;
    };
    let grade = &results[0]["grades"]["blend"];
    assert_eq!(grade["status"], json!("error"), "{grade}");
    let rationale = grade["rationale"].as_str().unwrap();
    assert!(rationale.starts_with("`length`: "), "{rationale}");
    assert!(rationale.contains("ValueError: no answer"), "{rationale}");
}

#[test]
fn a_python_grader_inside_a_multi_is_checked_at_load_where_it_is_written() {
    let said = refused(
        "{\"item\": {\"answer\": \"a\"}}\n",
        &MULTI_WITH_PYTHON
            .replace("          source: |", "          sorce: |")
            .replace("image_tag", "pass_threshold"),
    );
    for expected in [
        "graders.blend.grader.graders.length.sorce: unknown field",
        "graders.blend.grader.graders.length.source: a `python` grader needs `source`",
        "graders.blend.grader.graders.length.pass_threshold: must be a number",
    ] {
        assert!(said.contains(expected), "{expected} not in {said}");
    }
}

#[test]
fn a_dataset_named_openai_eval_refuses_rows_of_another_shape_at_their_line() {
    let suite = format!("{STRING_CHECK}dataset_format: openai_eval\n").replace("equals", "eq");
    let eval_row = "{\"item\": {\"answer\": \"a\"}, \"sample\": {\"output_text\": \"a\"}}\n";
    let cases = [
        (
            "{\"item\": {\"answer\": \"a\"}, \"smaple\": {}}",
            "smaple: unknown field",
        ),
        ("{\"sample\": {\"output_text\": \"a\"}}", "item: missing"),
        ("{\"item\": \"a\"}", "item: must be a JSON object"),
        (
            "{\"item\": {}, \"sample\": \"a\"}",
            "sample: must be a JSON object",
        ),
    ];
    for (row, wrong) in cases {
        let said = refused(&format!("{eval_row}{row}\n"), &suite);
        let expected = format!(
            "data.jsonl:2: {wrong}; a row of `dataset_format: openai_eval` is {{\"item\": \
             {{...}}, \"sample\": {{...}}}}"
        );
        assert!(said.contains(&expected), "{expected} not in {said}");
    }
    let ws = Workspace::new();
    ws.write("data.jsonl", eval_row);
    ws.write("suite.yaml", &suite);
    let out = ws.gavel(&["run", "suite.yaml", "-o", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        grades(&ws.results("out")[0], &["check"]),
        vec![(1.0, "pass".to_string())]
    );
}
