//! The example packs (`examples/packs/`, written with the guest SDK and built by
//! `tests/artifacts`), loaded and called through gavel's pack host the way a suite uses them.

use std::path::Path;

use gavel::grade::pack::{FunctionKind, GuestError, Limits, Pack, PackError, PackHost, PackSpec};
use gavel::grade::{Grade, Status};
use gavel::input::sample::{AgentState, Sample, Texts};
use gavel::input::trajectory::{
    Content, Event, LlmCall, RunStatus, Tokens, ToolCall, ToolReturn, ToolStatus, Trajectory,
};
use gavel_test_artifacts::packs;
use serde_json::{Value, json};

fn load(name: &str, path: &str) -> Pack {
    let cache = tempfile::tempdir().expect("a temporary directory");
    let host = PackHost::new(cache.path()).expect("the sandbox starts");
    let spec = PackSpec {
        path: path.into(),
        sha256: None,
        limits: None,
        allow: None,
    };
    host.load(name, &spec, Path::new("/"), &Limits::default())
        .unwrap_or_else(|e| panic!("{name} loads: {e}"))
}

fn grade(pack: &Pack, grader: &str, config: Value, sample: &Sample, run: &Trajectory) -> Grade {
    let grader = pack
        .grader(grader, &config)
        .unwrap_or_else(|e| panic!("{grader} accepts {config}: {e}"));
    grader.grade(sample, run, &run.final_output().unwrap_or_default())
}

fn extract(pack: &Pack, extractor: &str, config: Value, run: &Trajectory) -> Option<String> {
    let extractor = pack
        .extractor(extractor, &config)
        .unwrap_or_else(|e| panic!("{extractor} accepts {config}: {e}"));
    extractor
        .extract(&Sample::default(), run)
        .unwrap_or_else(|e| panic!("extraction fails: {e}"))
}

fn config_error(pack: &Pack, grader: &str, config: Value) -> String {
    match pack.grader(grader, &config) {
        Err(e @ PackError::ConfigRejected { .. }) => e.to_string(),
        Err(e) => panic!("{config} is refused for another reason: {e}"),
        Ok(_) => panic!("{config} is accepted"),
    }
}

fn run(events: Vec<Event<'_>>) -> Trajectory<'_> {
    Trajectory {
        turns: vec![events],
        ..Trajectory::default()
    }
}

fn say(text: &str) -> Event<'_> {
    Event::Assistant {
        content: Content::Text(text.into()),
    }
}

fn call<'a>(name: &'a str, arguments: &'a str) -> Event<'a> {
    Event::ToolCall(ToolCall {
        id: "".into(),
        name: name.into(),
        arguments: arguments.into(),
        failed: false,
    })
}

fn llm(total_tokens: u64) -> Event<'static> {
    Event::LlmCall(LlmCall {
        model: Some("gpt-4o-mini".into()),
        tokens: Some(Tokens {
            prompt_tokens: total_tokens / 2,
            completion_tokens: total_tokens - total_tokens / 2,
            total_tokens,
        }),
        ..LlmCall::default()
    })
}

fn with_ground_truth(truth: &str) -> Sample<'static> {
    Sample {
        ground_truth: Some(Texts::One(truth.to_string())),
        ..Sample::default()
    }
}

#[test]
fn packs_describe_their_functions_from_the_pack_macro() {
    let formats = load("formats", packs::FORMATS);
    let info = formats.info();
    // `name` and `version` default to the crate's.
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("formats", "0.1.0")
    );
    assert_eq!(info.wit_version, "0.1.0");
    let functions: Vec<_> = info
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.kind, f.needs_ground_truth))
        .collect();
    assert_eq!(
        functions,
        [
            ("json_field", FunctionKind::Grader, true),
            ("confirmation", FunctionKind::Grader, false),
        ]
    );
    // The doc comment in `pack!`, its lines joined, is the description.
    assert_eq!(
        info.functions[1].description,
        "The final output holds `Confirmation: XX000000` (two capitals, six digits)."
    );

    let answers = load("answers", packs::ANSWER_EXTRACTORS);
    assert_eq!(answers.info().name, "answers");
    assert!(
        answers
            .info()
            .functions
            .iter()
            .all(|f| f.kind == FunctionKind::Extractor)
    );
}

#[test]
fn unknown_names_and_wrong_kinds_are_refused_up_front() {
    let answers = load("answers", packs::ANSWER_EXTRACTORS);
    let unknown = answers.grader("nope", &json!({})).err().expect("refused");
    assert!(unknown.to_string().contains("final_answer"), "{unknown}");
    let wrong = answers
        .grader("final_answer", &json!({}))
        .err()
        .expect("refused");
    assert!(matches!(wrong, PackError::WrongKind { .. }), "{wrong}");
}

#[test]
fn configs_are_parsed_into_the_authors_type_and_errors_name_the_field() {
    let budget = load("budget", packs::TOKEN_BUDGET);
    let missing = config_error(&budget, "token_budget", json!({}));
    assert!(missing.contains("missing field `max_tokens`"), "{missing}");
    let mistyped = config_error(&budget, "token_budget", json!({"max_tokens": "lots"}));
    assert!(
        mistyped.contains("config.max_tokens: invalid type: string \"lots\""),
        "{mistyped}"
    );
    assert!(
        !mistyped.contains("line 1"),
        "JSON positions mean nothing in a YAML suite: {mistyped}"
    );
    let typo = config_error(&budget, "token_budget", json!({"max_token": 5}));
    assert!(typo.contains("unknown field `max_token`"), "{typo}");
    // A function without config takes none: no config and `{}` pass, anything else does not.
    let formats = load("formats", packs::FORMATS);
    assert!(formats.grader("confirmation", &Value::Null).is_ok());
    let extra = config_error(&formats, "confirmation", json!({"strict": true}));
    assert!(extra.contains("unknown field `strict`"), "{extra}");
}

#[test]
fn json_field_requires_the_field_the_ground_truth_names() {
    let formats = load("formats", packs::FORMATS);
    let sample = with_ground_truth("name");
    let graded = |answer: &str| {
        grade(
            &formats,
            "json_field",
            json!({}),
            &sample,
            &run(vec![say(answer)]),
        )
    };

    let ok = graded(r#"{"name": "Ada", "born": 1815}"#);
    assert_eq!((ok.score, ok.status), (1.0, Status::Pass));
    assert_eq!(ok.rationale, "Valid JSON with 'name' field");

    let missing = graded(r#"{"born": 1815, "phone": "x"}"#);
    assert_eq!((missing.score, missing.status), (0.0, Status::Fail));
    assert_eq!(missing.rationale, "Missing required field: name");
    assert_eq!(missing.details().expected, Some(json!("name")));
    assert_eq!(missing.details().actual, Some(json!(["born", "phone"])));

    let prose = graded("The name is Ada.");
    assert_eq!(prose.status, Status::Fail);
    assert!(
        prose.rationale.starts_with("Invalid JSON: "),
        "{}",
        prose.rationale
    );

    let list = graded(r#"["name"]"#);
    assert_eq!(list.rationale, "Not a JSON object");

    // No ground truth: the grader's own error, kept apart from a trap.
    let error = grade(
        &formats,
        "json_field",
        json!({}),
        &Sample::default(),
        &run(vec![say("{}")]),
    );
    assert_eq!(error.status, Status::Error);
    assert!(
        error
            .rationale
            .starts_with("guest returned error: json_field needs the sample's ground_truth"),
        "{}",
        error.rationale
    );
}

#[test]
fn confirmation_reads_the_final_output() {
    let formats = load("formats", packs::FORMATS);
    let graded = |output: &str| {
        let trajectory = Trajectory {
            output: Some(output.into()),
            ..run(vec![say("not this one")])
        };
        grade(
            &formats,
            "confirmation",
            json!({}),
            &Sample::default(),
            &trajectory,
        )
    };
    let ok = graded("Booked AA123. Confirmation: X Confirmation: AB123456!");
    assert_eq!(ok.status, Status::Pass);
    assert_eq!(ok.details().metadata["code"], "AB123456");

    for bad in [
        "Confirmation: ab123456",
        "Confirmation: AB12345",
        "Confirmation:AB123456",
        "",
    ] {
        let failed = graded(bad);
        assert_eq!(failed.status, Status::Fail, "{bad:?}");
        assert_eq!(
            failed.details().expected,
            Some(json!("Confirmation: XX000000"))
        );
        assert_eq!(failed.details().actual, Some(json!(bad)));
    }
    // `actual` keeps the first 100 characters, counted as characters, not bytes.
    let long = "é".repeat(150);
    assert_eq!(graded(&long).details().actual, Some(json!("é".repeat(100))));
}

#[test]
fn search_args_checks_every_search_flights_call() {
    let flights = load("flights", packs::FLIGHT_ARGS);
    let graded = |events: Vec<Event>| {
        grade(
            &flights,
            "search_args",
            json!({}),
            &Sample::default(),
            &run(events),
        )
    };

    let ok = graded(vec![
        call("search_flights", r#"{"from":"SFO","to":"JFK"}"#),
        call("book", "{}"),
    ]);
    assert_eq!(ok.status, Status::Pass);
    assert_eq!(ok.details().metadata["calls_checked"], 1);

    let none = graded(vec![say("no search needed")]);
    assert_eq!(none.status, Status::Pass);
    assert_eq!(none.details().metadata["calls_checked"], 0);

    let missing = graded(vec![call("search_flights", r#"{"from":"SFO"}"#)]);
    assert_eq!(
        missing.rationale,
        "Search missing required from/to arguments"
    );
    assert_eq!(missing.details().actual, Some(json!(r#"{"from":"SFO"}"#)));

    let second_bad = graded(vec![
        call("search_flights", r#"{"from":"BOS","to":"DEN"}"#),
        call("search_flights", r#"{"from":"BOS","to":"den"}"#),
    ]);
    assert_eq!(second_bad.status, Status::Fail);
    assert_eq!(second_bad.rationale, "Airport code should be uppercase");
    assert_eq!(second_bad.details().actual, Some(json!("den")));
    assert_eq!(second_bad.details().metadata["argument"], "to");

    let not_a_string = graded(vec![call("search_flights", r#"{"from":1,"to":"DEN"}"#)]);
    assert_eq!(not_a_string.details().actual, Some(json!(1)));

    let garbled = graded(vec![call("search_flights", "from=SFO")]);
    assert_eq!(garbled.rationale, "Search arguments are not a JSON object");
}

#[test]
fn token_budget_comes_from_the_suite_config() {
    let budget = load("budget", packs::TOKEN_BUDGET);
    let trajectory = run(vec![llm(600), call("search", "{}"), llm(400)]);
    let at = grade(
        &budget,
        "token_budget",
        json!({"max_tokens": 1000}),
        &Sample::default(),
        &trajectory,
    );
    assert_eq!(at.status, Status::Pass);
    assert_eq!(at.rationale, "Used 1000 tokens (budget: 1000)");
    assert_eq!(at.details().metadata["total_tokens"], 1000);

    let over = grade(
        &budget,
        "token_budget",
        json!({"max_tokens": 999}),
        &Sample::default(),
        &trajectory,
    );
    assert_eq!((over.score, over.status), (0.0, Status::Fail));
    assert_eq!(over.rationale, "Exceeded token budget");
    assert_eq!(over.details().expected, Some(json!("<= 999")));
    assert_eq!(over.details().actual, Some(json!("1000")));

    // Without per-call counts, the run-level usage counts.
    let recorded = Trajectory {
        usage: Some(Tokens {
            total_tokens: 1200,
            ..Tokens::default()
        }),
        ..run(vec![say("done")])
    };
    let usage = grade(
        &budget,
        "token_budget",
        json!({"max_tokens": 1000}),
        &Sample::default(),
        &recorded,
    );
    assert_eq!(usage.details().metadata["total_tokens"], 1200);
}

#[test]
fn answer_extractors_pull_answers_and_code() {
    let answers = load("answers", packs::ANSWER_EXTRACTORS);
    let trajectory = run(vec![
        say("Let me think.\nFINAL ANSWER: 12\nmore"),
        say("FINAL ANSWER: 51  \nThanks!"),
        say("Anything else?"),
    ]);
    assert_eq!(
        extract(&answers, "final_answer", json!({}), &trajectory).as_deref(),
        Some("51")
    );
    assert_eq!(
        extract(
            &answers,
            "final_answer",
            json!({"marker": "ANSWER"}),
            &run(vec![say("ANSWER = 3")])
        )
        .as_deref(),
        Some("= 3")
    );
    assert_eq!(
        extract(
            &answers,
            "final_answer",
            json!({}),
            &run(vec![say("no marker")])
        ),
        None
    );

    let code = run(vec![say(
        "First:\n```sh\nls -l\n```\nThen:\n  ```python title=x.py\ndef f():\n    return 1\n  ```\nDone.",
    )]);
    assert_eq!(
        extract(&answers, "last_code_block", json!({}), &code).as_deref(),
        Some("def f():\n    return 1")
    );
    assert_eq!(
        extract(
            &answers,
            "last_code_block",
            json!({"language": "sh"}),
            &code
        )
        .as_deref(),
        Some("ls -l")
    );
    assert_eq!(
        extract(
            &answers,
            "last_code_block",
            json!({"language": "rust"}),
            &code
        ),
        None
    );
    let open = run(vec![say("```\nunterminated\nblock")]);
    assert_eq!(
        extract(&answers, "last_code_block", json!({}), &open).as_deref(),
        Some("unterminated\nblock")
    );
}

#[test]
fn the_empty_pack_passes_anything() {
    let empty = load("empty", packs::EMPTY);
    let graded = grade(
        &empty,
        "constant",
        Value::Null,
        &Sample::default(),
        &Trajectory::default(),
    );
    assert_eq!(
        (graded.score, graded.status, &*graded.rationale),
        (1.0, Status::Pass, "constant")
    );
}

#[test]
fn the_sdk_sees_every_field_of_the_canonical_model() {
    // The mirror pack's helpers read turns, content parts, tool calls and returns, and memory.
    let mirror = load("mirror", packs::MIRROR);
    let trajectory = Trajectory {
        turns: vec![
            vec![
                Event::System { text: "sys".into() },
                Event::User {
                    content: Content::Parts(vec!["hi".into()]),
                },
                Event::Assistant {
                    content: Content::Parts(vec!["a".into(), "".into(), "b".into()]),
                },
                Event::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "calc".into(),
                    arguments: "{ \"x\" :1 }".into(),
                    failed: true,
                }),
            ],
            vec![
                Event::ToolReturn(ToolReturn {
                    call_id: "c1".into(),
                    json: false,
                    content: "42".into(),
                    status: ToolStatus::Error,
                }),
                Event::Reasoning { text: "r".into() },
                say("ANSWER:  42 \n"),
                Event::HumanInput { text: None },
                Event::Other {
                    kind: "event_message".into(),
                },
            ],
        ],
        output: Some("out".into()),
        status: RunStatus::Timeout,
        input: Some("in".into()),
        duration_ms: Some(1.5),
        ..Trajectory::default()
    };
    let cases = [
        ("last_assistant", json!({}), "ANSWER:  42 \n"),
        ("first_assistant", json!({}), "a  b"),
        (
            "all_assistant",
            json!({"separator": "|"}),
            "a  b|ANSWER:  42 \n",
        ),
        ("last_turn", json!({}), "ANSWER:  42 \n"),
        (
            "tool_arguments",
            json!({"tool_name": "calc"}),
            "{ \"x\" :1 }",
        ),
        ("tool_arguments", json!({"tool_name": "calculator"}), "{}"),
        ("tool_output", json!({"tool_name": "calc"}), "42"),
        ("after_marker", json!({"marker": "ANSWER:"}), "42"),
    ];
    for (name, config, expected) in cases {
        assert_eq!(
            extract(&mirror, name, config.clone(), &trajectory).as_deref(),
            Some(expected),
            "{name} {config}"
        );
    }

    let extractor = mirror
        .extractor("memory_block", &json!({"block_label": "human"}))
        .expect("valid config");
    let remembered = Sample {
        agent_state: Some(AgentState {
            blocks: serde_json::from_value(json!([{"label": "human", "value": " Ada "}]))
                .expect("blocks"),
        }),
        ..Sample::default()
    };
    assert_eq!(
        extractor.extract(&remembered, &trajectory),
        Ok(Some(" Ada ".to_string()))
    );
    let forgotten = extractor
        .extract(&Sample::default(), &trajectory)
        .expect_err("no agent state");
    assert!(
        matches!(&forgotten, GuestError::Returned(m) if m.contains("no agent_state")),
        "{forgotten}"
    );
}

/// letta-evals' recorded extractor vectors (all but `pattern`, which needs Python's regex
/// engine): the SDK helpers, run as a pack through the host's letta converter, give what the
/// Python extractors gave.
#[test]
fn sdk_helpers_reproduce_letta_evals_extractor_vectors() {
    let mirror = load("mirror", packs::MIRROR);
    let vectors: Vec<Value> = serde_json::from_str(include_str!(
        "../../host/tests/data/conformance/letta-vectors.json"
    ))
    .expect("the vectors are JSON");
    let extractors: Vec<&Value> = vectors
        .iter()
        .filter(|v| v["kind"] == "extractor" && v["name"] != "pattern")
        .collect();
    assert_eq!(extractors.len(), 40);
    for vector in extractors {
        let name = vector["name"].as_str().expect("name");
        let raw = serde_json::value::to_raw_value(&vector["trajectory"]).expect("raw JSON");
        let trajectory =
            gavel::input::trajectory::convert(&raw, Some(gavel::input::trajectory::Format::Letta))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        let sample = Sample {
            agent_state: serde_json::from_value(vector["agent_state"].clone())
                .expect("agent_state"),
            ..Sample::default()
        };
        let extracted = mirror
            .extractor(name, &vector["config"])
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .extract(&sample, &trajectory);
        let case = || format!("{name} {} ({})", vector["config"], vector["mirrors_test"]);
        match &vector["expected"] {
            Value::String(expected) => {
                assert_eq!(extracted, Ok(Some(expected.clone())), "{}", case());
            }
            Value::Object(error) if error.contains_key("error") => {
                assert!(extracted.is_err(), "{}: {extracted:?}", case());
            }
            other => panic!("{}: unexpected vector {other}", case()),
        }
    }
}
