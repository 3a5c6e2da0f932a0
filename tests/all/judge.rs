//! The rubric grader against a real HTTP endpoint on loopback: requests as sent, replies as
//! graded, faults, retries, the cache, the concurrency limit, and the API key kept out of
//! every output.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::openai_server::{Reply, Server, refused_base_url};
use gavel::grade::judge::{Judge, JudgeOptions, RubricSpec};
use gavel::grade::{Grade, Status};
use gavel::input::sample::{Sample, Texts};
use serde_json::{Map, Value, json};

pub(crate) const KEY: &str = "sk-gavel-test-5e1f0c9a";

fn env(name: &str) -> Option<String> {
    (name == "OPENAI_API_KEY").then(|| KEY.to_string())
}

fn spec(fields: Value) -> RubricSpec {
    serde_json::from_value(fields).expect("valid rubric spec")
}

fn judge_with(fields: Value, cache_dir: Option<&Path>) -> Judge {
    Judge::with_env(
        spec(fields),
        Path::new("."),
        JudgeOptions {
            cache_dir: cache_dir.map(Path::to_path_buf),
            ..JudgeOptions::default()
        },
        env,
    )
    .expect("judge builds")
}

fn judge_at(base_url: &str, extra: Value) -> Judge {
    let mut fields =
        json!({"prompt": "Q: {input}\nA: {submission}\nGT: {ground_truth}", "base_url": base_url});
    merge(&mut fields, extra);
    judge_with(fields, None)
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

fn sample(input: &str, ground_truth: &str) -> Sample<'static> {
    Sample {
        input: Some(Texts::One(input.into())),
        ground_truth: Some(Texts::One(ground_truth.into())),
        ..Sample::default()
    }
}

fn vars(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

/// Everything a grade shows a user, checked for the API key.
fn assert_keyless(grade: &Grade) {
    let text = serde_json::to_string(grade).expect("grade serialises");
    assert!(!text.contains(KEY), "API key leaked into {text}");
}

/// Builds a [`Sample`] from a vector's `sample` object.
fn vector_sample(value: &Value) -> Sample<'static> {
    let texts =
        |v: &Value| (!v.is_null()).then(|| serde_json::from_value(v.clone()).expect("texts"));
    Sample {
        input: texts(&value["input"]),
        ground_truth: texts(&value["ground_truth"]),
        rubric_vars: value["rubric_vars"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
        rubric: value["rubric"].as_str().map(String::from),
        ..Sample::default()
    }
}

/// letta-evals' rubric-grader vectors for OpenAI, replayed over HTTP: the request it sent and
/// the result it returned, except where SPEC section 12 turns a NaN score into an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letta_openai_vectors() {
    let text = include_str!("../../host/tests/data/conformance/letta-vectors-extra.json");
    let vectors: Vec<Value> = serde_json::from_str(text).expect("vector file");
    let mut replayed = 0;
    for vector in vectors.iter().filter(|v| v["name"] == "model_judge/openai") {
        let note = vector["note"].as_str().unwrap_or_default();
        let expected = &vector["expected"]["result"];
        if expected["rationale"]
            .as_str()
            .is_some_and(|r| r.starts_with("Empty submission"))
        {
            // The empty-submission guard runs before any grader; the judge never sees it.
            continue;
        }
        let content = vector["judge_response"]
            .as_str()
            .unwrap_or(r#"{"score": 0.75, "rationale": "test"}"#);
        let server = Server::always(Reply::completion(content)).await;
        let mut fields = vector["config"].clone();
        merge(&mut fields, json!({"base_url": server.base_url()}));
        if fields["prompt"].is_null() {
            fields
                .as_object_mut()
                .expect("config object")
                .remove("prompt");
        }
        let judge = judge_with(fields, None);
        let sample = vector_sample(&vector["sample"]);
        let grade = judge.grade(&sample, "SUB").await;
        assert_keyless(&grade);
        replayed += 1;

        if let Some(message) = expected["error"]["message"].as_str() {
            // A rubric placeholder the sample does not provide: refused before any call.
            assert_eq!(
                judge.check_sample(&sample).map_err(|e| e.to_string()),
                Err(message.to_string()),
                "{note}"
            );
            assert_eq!(grade.status, Status::Error, "{note}");
            assert_eq!(grade.rationale, format!("Error during grading: {message}"));
            assert_eq!(server.request_count(), 0, "{note}");
            continue;
        }
        assert_eq!(judge.check_sample(&sample), Ok(()), "{note}");
        assert_eq!(grade.submission, "SUB");
        if note.starts_with("NaN") {
            assert_eq!(grade.status, Status::Error, "{note}");
            assert_eq!(grade.score, 0.0);
            assert_eq!(
                grade.rationale,
                "Error during grading: Model returned a score of NaN"
            );
        } else if let Some(error) = expected["metadata"]["error"].as_str() {
            assert_eq!(grade.status, Status::Error, "{note}");
            assert_eq!(grade.score, 0.0, "{note}");
            if error.starts_with("Expecting value") {
                // Python's json error text is not reproduced word for word.
                assert!(
                    grade
                        .rationale
                        .starts_with("Error during grading: judge reply is not valid JSON"),
                    "{}",
                    grade.rationale
                );
            } else {
                assert_eq!(
                    grade.rationale,
                    expected["rationale"].as_str().expect("rationale")
                );
                assert_eq!(
                    grade.details().metadata.get("error"),
                    Some(&json!(error)),
                    "{note}"
                );
            }
        } else {
            let score = expected["score"].as_f64().expect("score");
            assert_eq!(grade.score, score, "{note}");
            assert_eq!(
                grade.rationale,
                expected["rationale"].as_str().expect("rationale"),
                "{note}"
            );
            assert_eq!(
                Value::Object(grade.details().metadata.clone()),
                expected["metadata"],
                "{note}"
            );
            let status = if score >= 1.0 {
                Status::Pass
            } else {
                Status::Fail
            };
            assert_eq!(grade.status, status, "{note}");
        }

        let requests = server.requests();
        let want = match vector["expected"].get("request") {
            Some(Value::Null) => {
                assert!(requests.is_empty(), "{note}: the judge must not be called");
                continue;
            }
            Some(want) => want,
            None => &json!({}),
        };
        assert_eq!(requests.len(), 1, "{note}");
        let body = requests[0].json();
        for field in ["model", "temperature", "messages"] {
            if !want[field].is_null() {
                assert_eq!(body[field], want[field], "{note}: {field}");
            }
        }
        if let Some(format) = want.get("response_format") {
            assert_eq!(body["response_format"]["type"], format["type"]);
            let (ours, theirs) = (
                &body["response_format"]["json_schema"],
                &format["json_schema"],
            );
            assert_eq!(ours["name"], theirs["name"]);
            assert!(
                ours.get("strict").is_none(),
                "letta-evals does not ask for strict"
            );
            for key in ["properties", "required", "type"] {
                let mut theirs = theirs["schema"][key].clone();
                if key == "properties" {
                    // gavel's own words for the schema, same fields, types and bounds.
                    theirs["score"]["description"] =
                        ours["schema"]["properties"]["score"]["description"].clone();
                }
                assert_eq!(ours["schema"][key], theirs, "{note}: schema {key}");
            }
        }
    }
    assert_eq!(replayed, 21);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_is_templated_authorised_and_shaped() {
    let server = Server::always(Reply::verdict(1.0, "right")).await;
    let judge = judge_at(
        &server.base_url(),
        json!({"model": "judge-model", "temperature": 0.2}),
    );
    let mut s = sample("What is 2+2?", "4");
    s.input = Some(Texts::PerTurn(vec!["hi".into(), "there".into()]));
    let grade = judge.grade(&s, "four").await;
    assert_eq!(grade.status, Status::Pass);
    assert_eq!(grade.score, 1.0);
    assert_eq!(grade.rationale, "right");
    assert_eq!(grade.details().metadata["model"], json!("judge-model"));
    assert_eq!(
        grade.details().metadata["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 5})
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.prompt(), "Q: ['hi', 'there']\nA: four\nGT: 4");
    let body = request.json();
    let keys: Vec<&str> = body
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["model", "messages", "temperature", "response_format"]
    );
    assert_eq!(body["model"], "judge-model");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(
        body["messages"].as_array().map(Vec::len),
        Some(1),
        "no system message unless set"
    );
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["required"],
        json!(["score", "rationale"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_threshold_decides_the_status() {
    let server = Server::always(Reply::verdict(0.8, "good")).await;
    let strict = judge_at(&server.base_url(), json!({}));
    let lenient = judge_at(&server.base_url(), json!({"pass_threshold": 0.75}));
    let s = sample("q", "a");
    let (a, b) = (strict.grade(&s, "x").await, lenient.grade(&s, "x").await);
    assert_eq!((a.score, a.status), (0.8, Status::Fail));
    assert_eq!((b.score, b.status), (0.8, Status::Pass));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_retried_after_the_servers_delay() {
    let server = Server::start(|i, _| match i {
        0 => Reply::status(429, r#"{"error": {"message": "slow down"}}"#)
            .with_header("retry-after", "1"),
        1 => Reply::status(429, "").with_header("retry-after", "0"),
        _ => Reply::verdict(0.5, "ok"),
    })
    .await;
    let judge = judge_at(&server.base_url(), json!({"max_retries": 2}));
    let started = Instant::now();
    let grade = judge.grade(&sample("q", "a"), "x").await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured"
    );
    assert_eq!((grade.score, grade.status), (0.5, Status::Fail));
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "every retry sends the same request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_up_to_max_retries() {
    let server = Server::always(Reply::status(500, r#"{"error": {"message": "boom"}}"#)).await;
    let judge = judge_at(&server.base_url(), json!({"max_retries": 2}));
    let grade = judge.grade(&sample("q", "a"), "x").await;
    assert_eq!(server.request_count(), 3);
    assert_eq!(grade.status, Status::Error);
    assert_eq!(grade.score, 0.0);
    assert_eq!(
        grade.rationale,
        "Error during grading: judge endpoint answered HTTP 500 Internal Server Error: boom (gave up after 3 attempts)"
    );
    assert_eq!(grade.submission, "x");

    let recovering = Server::start(|i, _| {
        if i == 0 {
            Reply::status(503, "")
        } else {
            Reply::verdict(1.0, "fine")
        }
    })
    .await;
    let patient = judge_at(&recovering.base_url(), json!({"max_retries": 1}));
    let grade = patient.grade(&sample("q", "a"), "x").await;
    assert_eq!(
        (grade.status, recovering.request_count()),
        (Status::Pass, 2)
    );
}

/// An endpoint that fails every other request, its failures never in a long row: each
/// failure is retried until the run's retries to it are spent (twenty, and one a five
/// requests sent), and past them a failure is the sample's error grade, not one more request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_retries_within_its_budget() {
    let server = Server::start(|i, _| {
        if i % 2 == 0 {
            Reply::status(500, "flaky")
        } else {
            Reply::verdict(1.0, "fine")
        }
    })
    .await;
    let judge = judge_at(
        &server.base_url(),
        json!({"max_retries": 3, "concurrency": 1}),
    );
    let mut spent = 0;
    for i in 0..60 {
        let grade = judge.grade(&sample("q", "a"), &format!("answer {i}")).await;
        if grade.status == Status::Error {
            assert!(
                grade.rationale.starts_with(
                    "Error during grading: judge endpoint answered HTTP 500 Internal Server \
                     Error: flaky (not retried: the run's "
                ) && grade.rationale.ends_with(
                    " retries to this endpoint are spent, a share of the requests sent)"
                ),
                "{}",
                grade.rationale
            );
            spent += 1;
        }
    }
    assert!(spent > 0, "every failure was retried");
    let sent = server.request_count();
    assert!(sent <= 60 + 20 + 60 / 5, "{sent} requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_are_not_retried_and_never_echo_the_key() {
    let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}"#);
    let server = Server::always(Reply::status(401, &echo)).await;
    let judge = judge_at(&server.base_url(), json!({"max_retries": 3}));
    let grade = judge.grade(&sample("q", "a"), "x").await;
    assert_eq!(server.request_count(), 1);
    assert_eq!(grade.status, Status::Error);
    assert_eq!(
        grade.rationale,
        "Error during grading: judge endpoint answered HTTP 401 Unauthorized: Incorrect API key provided: [redacted]"
    );
    assert_keyless(&grade);
    assert!(!format!("{judge:?}").contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_answers_time_out_and_are_retried() {
    let server = Server::always(Reply::verdict(1.0, "late").after(Duration::from_secs(3))).await;
    let judge = judge_at(
        &server.base_url(),
        json!({"timeout": 0.2, "max_retries": 1}),
    );
    let grade = judge.grade(&sample("q", "a"), "x").await;
    assert_eq!(server.request_count_reaching(2).await, 2);
    assert_eq!(grade.status, Status::Error);
    assert_eq!(
        grade.rationale,
        "Error during grading: judge request timed out after 0.2s (gave up after 2 attempts)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hang_ups_are_retried() {
    let server = Server::start(|i, _| {
        if i == 0 {
            Reply::HangUp
        } else {
            Reply::verdict(0.25, "meh")
        }
    })
    .await;
    let judge = judge_at(&server.base_url(), json!({"max_retries": 1}));
    let grade = judge.grade(&sample("q", "a"), "x").await;
    assert_eq!(server.request_count(), 2);
    assert_eq!((grade.score, &*grade.rationale), (0.25, "meh"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_an_error_grade_after_retries() {
    let base_url = refused_base_url().await;
    let judge = judge_at(&base_url, json!({"max_retries": 1}));
    let grade = judge.grade(&sample("q", "a"), "x").await;
    assert_eq!(grade.status, Status::Error);
    assert!(
        grade
            .rationale
            .starts_with("Error during grading: error sending request"),
        "{}",
        grade.rationale
    );
    assert!(
        grade.rationale.to_lowercase().contains("refused"),
        "{}",
        grade.rationale
    );
    assert!(
        grade.rationale.ends_with("(gave up after 2 attempts)"),
        "{}",
        grade.rationale
    );
    assert_keyless(&grade);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_replies_are_error_grades() {
    let cases = [
        (
            Reply::status(200, "<html>gateway</html>"),
            "endpoint reply is not JSON",
        ),
        (
            Reply::status(200, r#"{"choices": []}"#),
            "endpoint reply has no choices[0].message",
        ),
        (
            Reply::completion("I think 0.8"),
            "judge reply is not valid JSON",
        ),
        (
            Reply::completion(r#"{"score": NaN, "rationale": "?"}"#),
            "Model returned a score of NaN",
        ),
        (
            Reply::completion(r#"{"rationale": "forgot"}"#),
            "Model did not return a score",
        ),
        (
            Reply::completion(r#"{"score": {"value": 1}}"#),
            "score must be a number",
        ),
    ];
    for (reply, reason) in cases {
        let server = Server::always(reply).await;
        let judge = judge_at(&server.base_url(), json!({}));
        let grade = judge.grade(&sample("q", "a"), "x").await;
        assert_eq!(grade.status, Status::Error, "{reason}");
        assert_eq!(grade.score, 0.0, "{reason}");
        assert!(
            grade
                .rationale
                .starts_with(&format!("Error during grading: {reason}")),
            "{}",
            grade.rationale
        );
        assert_eq!(
            server.request_count(),
            1,
            "a reply that arrived is not retried"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_scores_are_clamped() {
    for (score, clamped) in [(7.0, 1.0), (-3.0, 0.0)] {
        let server = Server::always(Reply::verdict(score, "r")).await;
        let grade = judge_at(&server.base_url(), json!({}))
            .grade(&sample("q", "a"), "x")
            .await;
        assert_eq!(grade.score, clamped);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_replies_make_no_second_request() {
    let cache = tempfile::tempdir().expect("tempdir");
    let server =
        Server::start(|i, _| Reply::verdict(if i % 2 == 0 { 1.0 } else { 0.5 }, "r")).await;
    let fields = json!({"prompt": "grade {submission}", "base_url": server.base_url()});
    let samples: Vec<(Sample, &str)> = vec![
        (sample("q", "a"), "one"),
        (sample("q", "a"), "two"),
        (sample("q", "a"), "three"),
    ];

    let mut first = Vec::new();
    let cached = judge_with(fields.clone(), Some(cache.path()));
    for (s, submission) in &samples {
        first.push(cached.grade(s, submission).await);
    }
    assert_eq!(server.request_count(), 3);

    let again = judge_with(fields.clone(), Some(cache.path()));
    for ((s, submission), before) in samples.iter().zip(&first) {
        assert_eq!(&again.grade(s, submission).await, before);
    }
    assert_eq!(
        server.request_count(),
        3,
        "the second run is served from the cache"
    );

    let uncached = judge_with(fields.clone(), None);
    for (s, submission) in &samples {
        uncached.grade(s, submission).await;
    }
    assert_eq!(server.request_count(), 6, "--no-cache asks again");

    let files: Vec<_> = std::fs::read_dir(cache.path().join("judge"))
        .expect("cache dir")
        .collect();
    assert_eq!(files.len(), 3);
    for file in files {
        let path = file.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(name.len() == 64 + 5 && name.ends_with(".json"), "{name}");
        let text = std::fs::read_to_string(&path).expect("cache file");
        assert!(!text.contains(KEY));
    }

    // Another model is another request.
    let mut other = fields;
    merge(&mut other, json!({"model": "gpt-4.1"}));
    judge_with(other, Some(cache.path()))
        .grade(&samples[0].0, "one")
        .await;
    assert_eq!(server.request_count(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_most_concurrency_requests_are_in_flight() {
    let server = Server::always(Reply::verdict(1.0, "ok").after(Duration::from_millis(200))).await;
    let judge = Arc::new(judge_at(&server.base_url(), json!({"concurrency": 3})));
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let judge = Arc::clone(&judge);
            tokio::spawn(
                async move { judge.grade(&sample("q", "a"), &format!("answer {i}")).await },
            )
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.expect("task").status, Status::Pass);
    }
    assert_eq!(server.request_count(), 12);
    assert_eq!(server.max_in_flight(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_sample_rubrics_and_the_pre_run_check() {
    let server = Server::always(Reply::verdict(1.0, "ok")).await;
    let judge = judge_at(
        &server.base_url(),
        json!({"prompt": "tone {tone}: {submission}"}),
    );

    let mut toned = sample("q", "a");
    toned.rubric_vars = vars(json!({"tone": "formal", "weight": 0.5}));
    assert_eq!(judge.check_sample(&toned), Ok(()));

    let plain = sample("q", "a");
    let err = judge.check_sample(&plain).expect_err("tone is missing");
    assert!(
        err.to_string()
            .starts_with("Rubric references {tone} but no value was provided."),
        "{err}"
    );

    let mut own = sample("q", "a");
    own.rubric = Some("own rubric for {input} weighing {weight}".into());
    own.rubric_vars = vars(json!({"weight": 2}));
    assert_eq!(
        judge.check_sample(&own),
        Ok(()),
        "a sample's own rubric replaces the grader's"
    );

    let mut shadow = toned.clone();
    shadow.rubric_vars.insert("submission".into(), json!("x"));
    let err = judge.check_sample(&shadow).expect_err("reserved");
    assert!(
        err.to_string()
            .contains("collides with a reserved variable"),
        "{err}"
    );

    let mut broken = sample("q", "a");
    broken.rubric = Some("reply as {\"score\": 1}".into());
    let err = judge.check_sample(&broken).expect_err("un-doubled braces");
    assert!(
        err.to_string().starts_with(
            "rubric: ValueError: Space not allowed in string format specifier at position 9"
        ),
        "{err}"
    );

    judge.grade(&toned, "sub").await;
    judge.grade(&own, "sub").await;
    let error = judge.grade(&broken, "sub").await;
    assert_eq!(error.status, Status::Error);
    let prompts: Vec<String> = server.requests().iter().map(|r| r.prompt()).collect();
    assert_eq!(prompts, ["tone formal: sub", "own rubric for q weighing 2"]);
}

/// A judge builds without its key, so a suite validates without one; the first request is
/// refused with the variable's name instead, and the judge is down from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_refuses_the_first_request() {
    let server = Server::always(Reply::verdict(1.0, "ok")).await;
    let judge = Judge::with_env(
        spec(json!({"prompt": "p {input}", "base_url": server.base_url()})),
        Path::new("."),
        JudgeOptions::default(),
        |_| None,
    )
    .expect("a judge builds without its key");
    assert_eq!(judge.down(), None);
    let grade = judge.grade(&sample("q", "a"), "sub").await;
    assert_eq!(grade.status, Status::Error);
    assert!(
        grade.rationale.contains("OPENAI_API_KEY is not set"),
        "{}",
        grade.rationale
    );
    let down = judge.down().expect("down without a key");
    assert!(down.contains("OPENAI_API_KEY is not set"), "{down}");
    assert_eq!(server.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_rubric_is_an_error_grade_without_a_call() {
    let server = Server::always(Reply::verdict(1.0, "ok")).await;
    let judge = judge_with(json!({"base_url": server.base_url()}), None);
    let s = sample("q", "a");
    assert_eq!(judge.check_sample(&s), Ok(()));
    let grade = judge.grade(&s, "sub").await;
    assert_eq!(grade.status, Status::Error);
    assert_eq!(grade.score, 0.0);
    assert!(grade.rationale.starts_with("No rubric available: "));
    assert_eq!(
        grade.details().metadata.get("error"),
        Some(&json!("missing_rubric"))
    );
    assert_eq!(server.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_url_comes_from_the_environment_and_system_prompt_is_sent() {
    let server = Server::always(Reply::verdict(1.0, "ok")).await;
    let base_url = format!("{}/", server.base_url());
    let judge = Judge::with_env(
        spec(json!({"prompt": "p", "system_prompt": "Be strict.", "api_key_env": "JUDGE_KEY"})),
        Path::new("."),
        JudgeOptions::default(),
        move |name| match name {
            "OPENAI_BASE_URL" => Some(base_url.clone()),
            "JUDGE_KEY" => Some("other-key".into()),
            _ => None,
        },
    )
    .expect("judge builds");
    judge.grade(&sample("q", "a"), "x").await;
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer other-key"));
    assert_eq!(
        request.json()["messages"],
        json!([{"role": "system", "content": "Be strict."}, {"role": "user", "content": "p"}])
    );
}

#[test]
fn construction_errors_name_the_field() {
    let build = |fields: Value| {
        Judge::with_env(spec(fields), Path::new("."), JudgeOptions::default(), env)
            .expect_err("invalid")
            .to_string()
    };
    let cases = [
        (
            json!({"prompt": "p", "provider": "google"}),
            "provider: 'google' is not supported",
        ),
        (
            json!({"prompt": "p", "prompt_path": "r.txt"}),
            "prompt: give either prompt or prompt_path",
        ),
        (
            json!({"prompt": "x {input:d}"}),
            "prompt: ValueError: Unknown format code 'd' for object of type 'str' at position 2",
        ),
        (
            json!({"prompt": "p", "timeout": 0}),
            "timeout: must be a positive number",
        ),
        (
            json!({"prompt": "p", "concurrency": 0}),
            "concurrency: must be at least 1",
        ),
        (
            json!({"prompt": "p", "pass_threshold": 1.5}),
            "pass_threshold: must be between 0 and 1",
        ),
        (
            json!({"prompt": "p", "base_url": "localhost:8080"}),
            "base_url: 'localhost:8080' is not an http(s) URL",
        ),
        (
            json!({"prompt_path": "no-such-rubric.txt"}),
            "prompt_path: cannot read",
        ),
        (
            json!({"prompt": "p", "judge_tool_name": "grade"}),
            "judge_tool_name: names the grading tool of an agent_file judge",
        ),
        (
            json!({"prompt": "p", "agent_file": "no-such-judge.af"}),
            "agent_file: ./no-such-judge.af: cannot read the agent file",
        ),
        (
            json!({"prompt": "p", "agent_file": "j.af", "system_prompt": "s"}),
            "system_prompt: an agent_file judge's system prompt is its agent's",
        ),
    ];
    for (fields, message) in cases {
        let err = build(fields);
        assert!(err.starts_with(message), "{err}");
        assert!(!err.contains(KEY));
    }

    let unknown = serde_json::from_value::<RubricSpec>(json!({"prompt": "p", "temprature": 0.5}))
        .expect_err("unknown key")
        .to_string();
    assert!(unknown.contains("unknown field `temprature`"), "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_path_is_read_relative_to_the_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("rubrics")).expect("mkdir");
    std::fs::write(
        dir.path().join("rubrics/r.txt"),
        "from file: {submission} {{ok}}",
    )
    .expect("write");
    let server = Server::always(Reply::verdict(1.0, "ok")).await;
    let judge = Judge::with_env(
        spec(json!({"prompt_path": "rubrics/r.txt", "base_url": server.base_url()})),
        dir.path(),
        JudgeOptions::default(),
        env,
    )
    .expect("judge builds");
    judge.grade(&sample("q", "a"), "sub").await;
    assert_eq!(server.requests()[0].prompt(), "from file: sub {ok}");
}

pub(crate) const JUDGED_SUITE: &str = "name: judged
dataset: data.jsonl
graders:
  quality:
    kind: rubric
    prompt: |
      Question: {input}
      Reference: {ground_truth}
      Answer: {submission}
      Tone wanted: {tone}
    model: judge-model
    base_url: BASE_URL
    max_retries: 2
    timeout: 5
    concurrency: 2
    pass_threshold: 0.5
  named:
    kind: tool
    function: contains
gate:
  kind: simple
  metric_key: quality
  aggregation: avg_score
  op: gte
  value: 0.5
";

pub(crate) fn judged_row(id: &str, answer: &str) -> Value {
    json!({
        "id": id,
        "input": "What is the capital of France?",
        "ground_truth": "Paris",
        "rubric_vars": {"tone": "plain"},
        "trajectory": [[
            {"id": "m1", "date": "2026-01-01T00:00:00Z", "message_type": "user_message", "content": "What is the capital of France?"},
            {"id": "m2", "date": "2026-01-01T00:00:01Z", "message_type": "assistant_message", "content": answer}
        ]]
    })
}

/// `data.jsonl` with four answers to "What is the capital of France?": `paris` ("It is
/// Paris."), `lyon`, `berlin` and `rome` (which names Paris too).
pub(crate) fn four_answers(ws: &crate::common::Workspace) {
    ws.write_rows(
        "data.jsonl",
        &[
            judged_row("paris", "It is Paris."),
            judged_row("lyon", "Lyon, I believe."),
            judged_row("berlin", "Berlin."),
            judged_row("rome", "Rome, Paris, who knows."),
        ],
    );
}

pub(crate) async fn gavel(
    ws: &crate::common::Workspace,
    args: &[&str],
    vars: &[(&str, &str)],
) -> std::process::Output {
    crate::common::gavel_off_runtime(ws.dir.path(), args, vars).await
}

/// A rubric suite through the real binary: requests as the server saw them, grades, retries,
/// the concurrency limit, the cache across runs, `--no-cache`, and the key in no output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rubric_suite_runs_through_gavel() {
    let lyon_failed_once = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&lyon_failed_once);
    let server = Server::start(move |_, request| {
        let prompt = request.prompt();
        let reply = if prompt.contains("Answer: It is Paris.") {
            Reply::verdict(0.9, "names the capital")
        } else if prompt.contains("Answer: Lyon") {
            if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                Reply::verdict(0.1, "wrong city")
            } else {
                Reply::status(503, r#"{"error": {"message": "overloaded"}}"#)
            }
        } else if prompt.contains("Answer: Berlin") {
            Reply::completion("I think it deserves a good score.")
        } else {
            Reply::verdict(7.0, "beyond the scale")
        };
        reply.after(Duration::from_millis(50))
    })
    .await;

    let ws = crate::common::Workspace::new();
    ws.write(
        "suite.yaml",
        &JUDGED_SUITE.replace("BASE_URL", &server.base_url()),
    );
    four_answers(&ws);
    let key = [("OPENAI_API_KEY", KEY)];

    let first = gavel(&ws, &["run", "suite.yaml", "-o", "out"], &key).await;
    assert_eq!(
        first.status.code(),
        Some(0),
        "stderr: {}",
        crate::common::stderr(&first)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "four samples and one retry");
    // run.json sums the tokens the endpoint reported for the three replies that gave a verdict.
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    assert_eq!(
        record["progress"]["judge_tokens"]["judge-model"],
        json!({"grades": 3, "prompt_tokens": 30, "completion_tokens": 15, "total_tokens": 0})
    );
    for request in &requests {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = request.json();
        assert_eq!(body["model"], "judge-model");
        assert_eq!(body["response_format"]["type"], "json_schema");
        let prompt = request.prompt();
        assert!(
            prompt.contains("Reference: Paris") && prompt.contains("Tone wanted: plain"),
            "{prompt}"
        );
    }
    assert!(server.max_in_flight() <= 2, "concurrency: 2 was exceeded");

    let results = ws.results("out");
    let quality = |i: usize| results[i]["grades"]["quality"].clone();
    assert_eq!(results[0]["sample_id"], "paris");
    assert_eq!(
        (quality(0)["score"].as_f64(), quality(0)["status"].as_str()),
        (Some(0.9), Some("pass"))
    );
    assert_eq!(quality(0)["rationale"], "names the capital");
    assert_eq!(quality(0)["metadata"]["model"], "judge-model");
    assert_eq!(quality(0)["metadata"]["usage"]["prompt_tokens"], 10);
    assert_eq!(
        (quality(1)["score"].as_f64(), quality(1)["status"].as_str()),
        (Some(0.1), Some("fail"))
    );
    assert_eq!(quality(2)["status"], "error");
    assert!(
        quality(2)["rationale"]
            .as_str()
            .is_some_and(|r| r.contains("JSON")),
        "a reply without a verdict says so: {}",
        quality(2)
    );
    assert_eq!(
        results[2]["grades"]["named"]["status"], "fail",
        "other graders of an errored sample still grade"
    );
    assert_eq!(
        (quality(3)["score"].as_f64(), quality(3)["status"].as_str()),
        (Some(1.0), Some("pass"))
    );
    let summary = ws.summary("out");
    assert_eq!(summary["counts"]["errored"], 1, "{summary}");

    // The same suite again: every reply with a verdict comes from the cache, the malformed one
    // is asked again, and the files are the same.
    let results_before = std::fs::read(ws.path("out/results.jsonl")).expect("results");
    let second = gavel(&ws, &["run", "suite.yaml", "-o", "again"], &key).await;
    assert_eq!(
        second.status.code(),
        Some(0),
        "stderr: {}",
        crate::common::stderr(&second)
    );
    assert_eq!(
        server.request_count(),
        6,
        "only the sample without a verdict is asked again"
    );
    assert_eq!(
        std::fs::read(ws.path("again/results.jsonl")).expect("results"),
        results_before
    );

    let uncached = gavel(
        &ws,
        &["run", "suite.yaml", "-o", "fresh", "--no-cache"],
        &key,
    )
    .await;
    assert_eq!(
        uncached.status.code(),
        Some(0),
        "stderr: {}",
        crate::common::stderr(&uncached)
    );
    assert_eq!(
        server.request_count(),
        10,
        "--no-cache asks again for every sample"
    );

    for output in [&first, &second, &uncached] {
        for stream in [crate::common::stdout(output), crate::common::stderr(output)] {
            assert!(!stream.contains(KEY), "API key printed: {stream}");
        }
    }
    for (path, text) in crate::common::texts_under(ws.dir.path()) {
        assert!(!text.contains(KEY), "API key written to {}", path.display());
    }
    assert!(
        crate::common::texts_under(&ws.path(".cache"))
            .iter()
            .any(|(path, _)| path.to_string_lossy().contains("judge")),
        "replies are cached under the cache folder"
    );
}

/// Mistakes in a rubric suite stop `validate` and `run` before any request is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rubric_mistakes_stop_the_binary_before_any_request() {
    let server = Server::always(Reply::verdict(1.0, "fine")).await;
    let ws = crate::common::Workspace::new();
    let suite = JUDGED_SUITE.replace("BASE_URL", &server.base_url());
    ws.write_rows("data.jsonl", &[judged_row("paris", "It is Paris.")]);
    let key = [("OPENAI_API_KEY", KEY)];

    ws.write("suite.yaml", &suite.replace("{tone}", "{mood}"));
    let unknown = gavel(&ws, &["validate", "suite.yaml"], &key).await;
    assert_eq!(unknown.status.code(), Some(2));
    let message = crate::common::stderr(&unknown);
    assert!(
        message.contains("data.jsonl:1: graders.quality") && message.contains("{mood}"),
        "a placeholder no row supplies is named with the row: {message}"
    );

    ws.write("suite.yaml", &suite);
    ws.write_rows(
        "data.jsonl",
        &[{
            let mut row = judged_row("paris", "It is Paris.");
            row["rubric_vars"] = json!({"tone": "plain", "submission": "clash"});
            row
        }],
    );
    let collision = gavel(&ws, &["run", "suite.yaml", "-o", "out"], &key).await;
    assert_eq!(
        collision.status.code(),
        Some(2),
        "stderr: {}",
        crate::common::stderr(&collision)
    );
    assert!(
        crate::common::stderr(&collision).contains("submission"),
        "{}",
        crate::common::stderr(&collision)
    );

    ws.write_rows("data.jsonl", &[judged_row("paris", "It is Paris.")]);
    ws.write("suite.yaml", &suite);
    let validated = gavel(&ws, &["validate", "suite.yaml"], &[]).await;
    assert!(
        validated.status.success(),
        "validate needs no key: {}",
        crate::common::stderr(&validated)
    );
    let keyless = gavel(&ws, &["run", "suite.yaml", "-o", "out"], &[]).await;
    assert_eq!(keyless.status.code(), Some(2));
    let message = crate::common::stderr(&keyless);
    assert!(
        message.contains("judge `quality` cannot be used")
            && message.contains("the environment variable OPENAI_API_KEY is not set"),
        "{message}"
    );

    let from_file: String = suite
        .lines()
        .filter(|line| !line.starts_with("      "))
        .map(|line| match line {
            "    prompt: |" => "    prompt_path: prompts/missing.txt\n".to_string(),
            _ => format!("{line}\n"),
        })
        .collect();
    ws.write("suite.yaml", &from_file);
    let missing = gavel(&ws, &["validate", "suite.yaml"], &key).await;
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        crate::common::stderr(&missing).contains("missing.txt"),
        "{}",
        crate::common::stderr(&missing)
    );

    assert_eq!(
        server.request_count(),
        0,
        "no request before the checks pass"
    );
}

/// `n` judged rows with ids 0 to n-1.
pub(crate) fn judged_rows(ws: &crate::common::Workspace, n: usize) {
    let rows: Vec<Value> = (0..n)
        .map(|i| judged_row(&i.to_string(), "It is Paris."))
        .collect();
    ws.write_rows("data.jsonl", &rows);
}

/// A judge whose key stops being accepted mid-run: the run stops with exit 2 and one message
/// naming the endpoint and the cause, sends no request after the refusals already on their
/// way, keeps only results graded before (no error grade from the dead endpoint), and once
/// the key works `--resume` ends where a run that never failed ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_stops_the_run_before_it_spends_the_dataset() {
    const ROWS: usize = 60;
    let healed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&healed);
    let server = Server::start(move |i, _| {
        if i >= 10 && !flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::status(
                401,
                r#"{"error": {"message": "Incorrect API key provided"}}"#,
            )
        } else {
            Reply::verdict(0.9, "fine")
        }
    })
    .await;
    let ws = crate::common::Workspace::new();
    ws.write(
        "suite.yaml",
        &JUDGED_SUITE.replace("BASE_URL", &server.base_url()),
    );
    judged_rows(&ws, ROWS);
    let key = [("OPENAI_API_KEY", KEY)];
    let no_cache = ["run", "suite.yaml", "-q", "--no-cache", "-o"];
    let stopped = gavel(&ws, &[&no_cache[..], &["out"]].concat(), &key).await;
    let err = crate::common::stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{err}");
    assert!(
        err.contains("judge `quality` cannot be used, and no more requests were sent to it"),
        "{err}"
    );
    assert!(err.contains(&server.base_url()), "{err}");
    assert!(err.contains("HTTP 401 Unauthorized"), "{err}");
    assert!(!err.contains(KEY), "{err}");
    // Ten answered, and the refusals of the requests in flight (the judge's concurrency is 2).
    let sent = server.request_count();
    assert!((11..=12).contains(&sent), "{sent} requests");
    let kept = ws.results("out");
    assert!(kept.len() <= 10, "{} results kept", kept.len());
    assert!(
        kept.iter()
            .all(|r| r["grades"]["quality"]["status"] == "pass"),
        "{kept:?}"
    );
    // Unfinished: a plain run into the folder is refused; --resume continues it.
    let again = gavel(&ws, &[&no_cache[..], &["out"]].concat(), &key).await;
    assert_eq!(again.status.code(), Some(2));

    healed.store(true, std::sync::atomic::Ordering::SeqCst);
    let resumed = gavel(&ws, &[&no_cache[..], &["out", "--resume"]].concat(), &key).await;
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&resumed)
    );
    let clean = gavel(&ws, &[&no_cache[..], &["clean"]].concat(), &key).await;
    assert_eq!(clean.status.code(), Some(0));
    for file in ["results.jsonl", "summary.json"] {
        assert!(
            std::fs::read(ws.path("out").join(file)).unwrap()
                == std::fs::read(ws.path("clean").join(file)).unwrap(),
            "{file} of the resumed run differs from the clean run's"
        );
    }
}

/// An endpoint nobody answers at: the run stops after a few refused connections instead of
/// retrying every sample, with exit 2 and the cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_judge_stops_the_run_at_once() {
    let base_url = refused_base_url().await;
    let ws = crate::common::Workspace::new();
    ws.write(
        "suite.yaml",
        &JUDGED_SUITE
            .replace("BASE_URL", &base_url)
            .replace("max_retries: 2", "max_retries: 6"),
    );
    judged_rows(&ws, 200);
    let started = Instant::now();
    let stopped = gavel(
        &ws,
        &["run", "suite.yaml", "-q", "--no-cache", "-o", "out"],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    let err = crate::common::stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{err}");
    assert!(err.contains("connections failed in a row"), "{err}");
    assert!(err.contains(&base_url), "{err}");
    assert!(ws.results("out").is_empty());
    // Seven attempts a sample with backoff would take minutes; a stop after five failures, a
    // few seconds of backoff at most. Printed, not asserted: timing belongs to benchmarks.
    eprintln!("stopped after {:?}", started.elapsed());
}

/// A rubric is formatted with Python's `str.format` through the real binary: conversions, fill,
/// alignment, width and precision reach the judge as letta-evals would send them, an index past
/// the end of a value is that sample's error, and a template Python fails on for every sample is
/// refused by `validate`, located in the suite, before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rubric_prompts_are_formatted_as_python_formats_them() {
    let server = Server::always(Reply::verdict(1.0, "fine")).await;
    let ws = crate::common::Workspace::new();
    let suite = JUDGED_SUITE
        .replace("BASE_URL", &server.base_url())
        .replace(
            "      Tone wanted: {tone}\n",
            "      Tone wanted: {tone!r:*^10}|{ground_truth:.3}|{{literal}}|{input[5]}\n",
        );
    ws.write("suite.yaml", &suite);
    let mut short = judged_row("short", "Paris.");
    short["input"] = json!("Hi?");
    ws.write_rows("data.jsonl", &[judged_row("paris", "It is Paris."), short]);
    let key = [("OPENAI_API_KEY", KEY)];

    let validated = gavel(&ws, &["validate", "suite.yaml"], &key).await;
    assert!(
        validated.status.success(),
        "{}",
        crate::common::stderr(&validated)
    );
    let run = gavel(&ws, &["run", "suite.yaml", "-o", "out", "--quiet"], &key).await;
    assert!(
        run.status.code().is_some_and(|c| c < 2),
        "{}",
        crate::common::stderr(&run)
    );
    let prompts: Vec<String> = server.requests().iter().map(|r| r.prompt()).collect();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert!(
        prompts[0].ends_with("Tone wanted: *'plain'**|Par|{literal}|i\n"),
        "{}",
        prompts[0]
    );
    let results = ws.results("out");
    let short = results
        .iter()
        .find(|r| r["sample_id"] == "short")
        .expect("the short row");
    assert_eq!(short["grades"]["quality"]["status"], "error");
    assert_eq!(
        short["grades"]["quality"]["rationale"],
        "Error during grading: rubric: IndexError: string index out of range"
    );

    ws.write(
        "suite.yaml",
        &suite.replace("{ground_truth:.3}", "{ground_truth:+.3}"),
    );
    for command in [
        &["validate", "suite.yaml"][..],
        &["run", "suite.yaml", "-o", "out2"],
    ] {
        let refused = gavel(&ws, command, &key).await;
        assert_eq!(refused.status.code(), Some(2));
        let message = crate::common::stderr(&refused);
        assert!(
            message.contains("suite.yaml:7:")
                && message.contains("graders.quality.prompt: ValueError")
                && message.contains(
                    "ValueError: Sign not allowed in string format specifier at position"
                ),
            "{message}"
        );
    }
    assert_eq!(server.request_count(), 1, "no request from a refused suite");
}

/// An Anthropic Messages API reply whose first content block is `block`.
/// `provider: anthropic` through the real binary: the Messages API request letta-evals sends
/// (`POST /v1/messages`, `x-api-key`, `anthropic-version`, `max_tokens` 4096, the JSON-schema
/// output format, the system prompt as a cached text block), the verdict read from the first text
/// block, its usage as letta-evals records it and summed in run.json; `ANTHROPIC_BASE_URL` and
/// `ANTHROPIC_API_KEY` are read, `validate` needs no key, and `run` without one stops before its
/// first request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_messages_api_is_spoken() {
    let server = Server::start(|_, request| {
        if request.prompt().contains("Answer: Berlin") {
            Reply::message(json!({"type": "tool_use", "id": "t", "name": "x", "input": {}}))
        } else {
            let verdict = json!({"score": 0.8, "rationale": "names the capital"});
            Reply::message(json!({"type": "text", "text": verdict.to_string()}))
        }
    })
    .await;
    let ws = crate::common::Workspace::new();
    let suite = JUDGED_SUITE
        .replace(
            "    base_url: BASE_URL\n",
            "    provider: anthropic\n    system_prompt: Be strict.\n",
        )
        .replace("model: judge-model", "model: claude-test");
    ws.write("suite.yaml", &suite);
    ws.write_rows(
        "data.jsonl",
        &[
            judged_row("paris", "It is Paris."),
            judged_row("berlin", "Berlin."),
        ],
    );
    // The Messages API's base URL has no `/v1`: the path adds it.
    let root = server.base_url().trim_end_matches("/v1").to_string();
    let base = [("ANTHROPIC_BASE_URL", root)];
    let base: Vec<(&str, &str)> = base.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let validated = gavel(&ws, &["validate", "suite.yaml"], &base).await;
    assert!(
        validated.status.success(),
        "{}",
        crate::common::stderr(&validated)
    );
    let keyless = gavel(&ws, &["run", "suite.yaml", "-o", "keyless"], &base).await;
    assert_eq!(keyless.status.code(), Some(2));
    let message = crate::common::stderr(&keyless);
    assert!(
        message.contains("the environment variable ANTHROPIC_API_KEY is not set"),
        "{message}"
    );
    assert_eq!(server.request_count(), 0);

    let mut vars = base.clone();
    vars.push(("ANTHROPIC_API_KEY", KEY));
    let run = gavel(&ws, &["run", "suite.yaml", "-o", "out"], &vars).await;
    assert!(
        run.status.code().is_some_and(|c| c < 2),
        "{}",
        crate::common::stderr(&run)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    let body = request.json();
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be strict.", "cache_control": {"type": "ephemeral"}}])
    );
    let format = &body["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["additionalProperties"], false);
    assert_eq!(format["schema"]["required"], json!(["score", "rationale"]));

    let results = ws.results("out");
    let grade = |id: &str| {
        results
            .iter()
            .find(|r| r["sample_id"] == id)
            .map(|r| r["grades"]["quality"].clone())
            .expect("graded")
    };
    let paris = grade("paris");
    assert_eq!(
        (&paris["score"], &paris["status"]),
        (&json!(0.8), &json!("pass"))
    );
    assert_eq!(paris["rationale"], "names the capital");
    assert_eq!(
        paris["metadata"]["usage"],
        json!({"input_tokens": 12, "output_tokens": 7, "cache_creation_input_tokens": null, "cache_read_input_tokens": 3})
    );
    let berlin = grade("berlin");
    assert_eq!(berlin["status"], "error");
    assert!(
        berlin["rationale"]
            .as_str()
            .is_some_and(|r| r.contains("tool_use block")),
        "{berlin}"
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path("out/run.json")).unwrap()).unwrap();
    assert_eq!(
        record["progress"]["judge_tokens"]["claude-test"],
        json!({"grades": 1, "prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19})
    );
}

/// A judged suite with a sandboxed grader beside the judge: a batch waiting on its judge's
/// answer (two requests in flight at most, the rest waiting their turn) waits as a task, not on
/// a thread of its own, so that the hundreds of batches a judged run keeps in flight (256
/// here, one row each) do not each hold a parked thread; the sandboxed calls still run off the
/// runtime's workers, and every row is graded by both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_waiting_on_a_judge_hold_no_thread_each() {
    let server =
        Server::start(|_, _| Reply::verdict(0.9, "fine").after(Duration::from_millis(40))).await;
    let ws = crate::common::Workspace::new();
    let suite = JUDGED_SUITE
        .replace("BASE_URL", &server.base_url())
        .replace(
            "kind: tool\n    function: contains",
            "kind: tool\n    function: e.constant",
        )
        .replace(
            "graders:\n",
            &format!(
                "packs:\n  e:\n    path: {}\ngraders:\n",
                gavel_test_artifacts::packs::EMPTY
            ),
        );
    ws.write("suite.yaml", &suite);
    judged_rows(&ws, 300);
    let mut command = crate::common::gavel_command(
        ws.dir.path(),
        &["run", "suite.yaml", "-o", "out", "--concurrency", "2"],
        &[("OPENAI_API_KEY", KEY)],
    );
    let child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gavel starts");
    let status = format!("/proc/{}/status", child.id());
    let (peak, output) = tokio::task::spawn_blocking(move || {
        let mut peak = 0;
        let threads = || -> Option<usize> {
            let text = std::fs::read_to_string(&status).ok()?;
            text.lines()
                .find_map(|line| line.strip_prefix("Threads:"))?
                .trim()
                .parse()
                .ok()
        };
        let mut child = child;
        while child.try_wait().expect("wait").is_none() {
            peak = peak.max(threads().unwrap_or(0));
            std::thread::sleep(Duration::from_millis(5));
        }
        (peak, child.wait_with_output().expect("output"))
    })
    .await
    .expect("watched");
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        crate::common::stderr(&output)
    );
    let results = ws.results("out");
    assert_eq!(results.len(), 300);
    for result in &results {
        assert_eq!(result["grades"]["quality"]["status"], "pass", "{result}");
        assert_eq!(
            result["grades"]["named"]["rationale"], "constant",
            "{result}"
        );
    }
    assert!(server.max_in_flight() <= 2, "concurrency: 2 was exceeded");
    assert!(
        peak > 0 && peak < 64,
        "the process held {peak} threads at its peak"
    );
}
