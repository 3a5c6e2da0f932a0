use super::*;
use serde_json::json;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn grader(value: Value) -> Grader {
    Grader::parse(&value, "g", &Endpoints::default()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn mistakes(value: Value) -> Vec<(String, String, Option<String>)> {
    Grader::parse(&value, "g", &Endpoints::default())
        .unwrap_err()
        .into_iter()
        .map(|e| (e.field, e.message, e.hint))
        .collect()
}

fn check(operation: &str, input: &str, reference: &str) -> (f64, bool) {
    let g = grader(
        json!({"type": "string_check", "name": "c", "input": "{{sample.output_text}}",
        "reference": "{{item.answer}}", "operation": operation}),
    );
    let outcome = block_on(g.run(
        &json!({"answer": reference}),
        &json!({"output_text": input}),
        &PythonResults::new(),
        None,
    ));
    (outcome.reward, outcome.passed)
}

#[test]
fn string_checks_compare_as_openai_documents() {
    assert_eq!(check("eq", "Paris", "Paris"), (1.0, true));
    assert_eq!(check("eq", "Paris.", "Paris"), (0.0, false));
    assert_eq!(check("ne", "Paris.", "Paris"), (1.0, true));
    assert_eq!(check("ne", "Paris", "Paris"), (0.0, false));
    assert_eq!(check("like", "It is Paris.", "Paris"), (1.0, true));
    assert_eq!(check("like", "It is PARIS.", "Paris"), (0.0, false));
    assert_eq!(check("ilike", "It is PARIS.", "paris"), (1.0, true));
    assert_eq!(check("ilike", "It is Rome.", "paris"), (0.0, false));
}

#[test]
fn a_variable_missing_from_the_row_is_an_invalid_variable_error() {
    let g = grader(
        json!({"type": "string_check", "name": "c", "input": "{{sample.output_text}}",
        "reference": "{{item.answer}}", "operation": "eq"}),
    );
    let outcome = block_on(g.run(
        &json!({"question": "?"}),
        &json!({"output_text": "x"}),
        &PythonResults::new(),
        None,
    ));
    assert_eq!((outcome.reward, outcome.passed), (0.0, false));
    assert!(outcome.metadata.errors.invalid_variable_error);
    assert_eq!(
        outcome.error.as_deref(),
        Some("the template variable `{{ item.answer }}` names nothing in this row")
    );
}

#[test]
fn a_multi_grader_combines_its_sub_graders_by_its_formula() {
    let g = grader(json!({
        "type": "multi", "name": "m",
        "graders": {
            "exact": {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
                      "reference": "{{item.answer}}", "operation": "eq"},
            "close": {"type": "text_similarity", "name": "close", "input": "{{sample.output_text}}",
                      "reference": "{{item.answer}}", "evaluation_metric": "rouge_1",
                      "pass_threshold": 0.5}
        },
        "calculate_output": "0.5 * exact + 0.5 * close"
    }));
    let outcome = block_on(g.run(
        &json!({"answer": "the cat is on the mat"}),
        &json!({"output_text": "the cat sat on the mat"}),
        &PythonResults::new(),
        None,
    ));
    assert!((outcome.reward - 5.0 / 12.0).abs() < 1e-12);
    assert_eq!(outcome.sub_rewards["exact"], json!(0.0));
    assert_eq!(outcome.metadata.scores, outcome.sub_rewards);
    assert_eq!(outcome.metadata.kind, "multi");
    let answer = serde_json::to_value(&outcome).unwrap();
    assert_eq!(
        answer["metadata"]["errors"]["formula_parse_error"],
        json!(false)
    );
    assert!(answer["metadata"]["execution_time"].is_number());
}

/// Past its deadline a multi grades no further sub-grader: the request it serves is answered
/// already, and its work ends rather than run on.
#[test]
fn a_multi_past_its_deadline_grades_no_further_sub_grader() {
    let g = grader(json!({
        "type": "multi", "name": "m",
        "graders": {
            "exact": {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
                      "reference": "{{item.answer}}", "operation": "eq"}
        },
        "calculate_output": "exact"
    }));
    let (item, sample) = (json!({"answer": "x"}), json!({"output_text": "x"}));
    let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    let outcome = block_on(g.run(&item, &sample, &PythonResults::new(), Some(later)));
    assert_eq!((outcome.reward, outcome.error), (1.0, None));
    let past = std::time::Instant::now();
    let outcome = block_on(g.run(&item, &sample, &PythonResults::new(), Some(past)));
    assert_eq!((outcome.reward, outcome.passed), (0.0, false));
    assert!(outcome.metadata.errors.other_error);
    assert_eq!(
        outcome.error.as_deref(),
        Some("the deadline passed before `exact` was graded")
    );
}

/// A multi of a string check `exact` and a python grader `judged`, inside a multi `inner`.
fn multi_with_python() -> Grader {
    grader(json!({
        "type": "multi", "name": "m",
        "graders": {
            "exact": {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
                      "reference": "{{item.answer}}", "operation": "eq"},
            "inner": {"type": "multi", "graders": {
                "judged": {"type": "python", "source": "def grade(sample, item):\n    return 0.5\n"}
            }, "calculate_output": "2 * judged"}
        },
        "calculate_output": "0.5 * exact + 0.25 * inner"
    }))
}

fn ran(score: f64, error: Option<&str>) -> PythonResults {
    let result = PythonResult {
        score,
        passed: false,
        error: error.map(str::to_string),
        seconds: 0.5,
    };
    PythonResults::from([("graders.inner.graders.judged".to_string(), result)])
}

#[test]
fn a_python_sub_grader_feeds_the_formula_with_the_score_it_was_given() {
    let g = multi_with_python();
    assert_eq!(g.python_places(), vec!["graders.inner.graders.judged"]);
    let (item, sample) = (json!({"answer": "a"}), json!({"output_text": "a"}));
    let outcome = block_on(g.run(&item, &sample, &ran(0.3, None), None));
    assert!(
        (outcome.reward - (0.5 + 0.25 * 0.6)).abs() < 1e-12,
        "{outcome:?}"
    );
    assert_eq!(outcome.sub_rewards["exact"], json!(1.0));
    assert!(outcome.error.is_none());
}

#[test]
fn a_python_sub_graders_error_is_the_multis_with_its_flags() {
    let g = multi_with_python();
    let (item, sample) = (json!({"answer": "a"}), json!({"output_text": "a"}));
    let outcome = block_on(g.run(&item, &sample, &ran(0.0, Some("ValueError: no")), None));
    assert_eq!((outcome.reward, outcome.passed), (0.0, false));
    assert_eq!(
        outcome.error.as_deref(),
        Some("`inner`: `judged`: ValueError: no")
    );
    assert!(outcome.metadata.errors.python_grader_runtime_error);
    assert_eq!(
        outcome
            .metadata
            .errors
            .python_grader_runtime_error_details
            .as_deref(),
        Some("ValueError: no")
    );
    let not_run = block_on(g.run(&item, &sample, &PythonResults::new(), None));
    assert!(not_run.metadata.errors.python_grader_server_error);
}

#[test]
fn each_mistake_of_a_grader_object_is_named_at_its_field() {
    assert_eq!(
        mistakes(
            json!({"type": "string_check", "input": "{{item.a}}", "refrence": "x",
            "operation": "equals"})
        ),
        vec![
            ("".into(), "`reference` is missing".into(), None),
            (
                "operation".into(),
                "`equals` is not one of eq, ne, like, ilike".into(),
                Some("did you mean `eq`?".into())
            ),
            (
                "refrence".into(),
                "unknown field".into(),
                Some("did you mean `reference`?".into())
            ),
        ]
    );
    assert_eq!(
        mistakes(json!({"type": "multi", "graders": {
            "a": {"type": "string_chek", "input": "", "reference": "", "operation": "eq"},
        }, "calculate_output": "a"})),
        vec![(
            "graders.a.type".into(),
            "unknown grader type `string_chek`".into(),
            Some("did you mean `string_check`?".into())
        )]
    );
    let empty = mistakes(json!({"type": "multi", "graders": {}, "calculate_output": "1"}));
    assert_eq!(
        (&*empty[0].0, &*empty[0].1),
        ("graders", "holds no grader: a multi combines at least one")
    );
    assert_eq!(
        mistakes(json!({"type": "multi", "graders": {
            "a": {"type": "string_check", "input": "{{item.x}}", "reference": "y", "operation": "eq"},
        }, "calculate_output": "a * b"})),
        vec![(
            "calculate_output".into(),
            "at character 5: `b` is not one of the sub-graders (a)".into(),
            Some(
                "use numbers, the sub-graders' names, + - * /, parentheses and min, max, abs, \
                  floor, ceil, exp, sqrt, log"
                    .into()
            )
        )]
    );
    assert_eq!(
        mistakes(
            json!({"type": "text_similarity", "input": "{{ answer }}", "reference": "y",
            "evaluation_metric": "rouge_9", "pass_threshold": "high"})
        )
        .into_iter()
        .map(|(field, message, _)| format!("{field}: {message}"))
        .collect::<Vec<_>>(),
        vec![
            "input: at character 4: `{{ answer }}` is not `item.NAME` or `sample.NAME`: only \
             the item and sample namespaces exist",
            "evaluation_metric: `rouge_9` is not one of fuzzy_match, bleu, gleu, meteor, cosine, \
             rouge_1, rouge_2, rouge_3, rouge_4, rouge_5, rouge_l",
            "pass_threshold: must be a number, not a string",
        ]
    );
    assert_eq!(
        mistakes(json!(["string_check"])),
        vec![(
            "".into(),
            "a grader object is a mapping, not a list".into(),
            Some(
                "write it as OpenAI does: {type: string_check, name: ..., input: ..., ...}".into()
            )
        )]
    );
}
