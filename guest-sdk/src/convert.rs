//! Between the generated WIT types and the author-facing ones. Everything moves; nothing is
//! copied but the JSON fields, which are parsed once here.

use serde_json::{Map, Value};

use crate::bindings::gavel::grader::types as wit;
use crate::{
    Content, Event, Grade, LlmCall, MemoryBlock, RunStatus, Sample, SampleId, Status, Texts,
    Tokens, ToolCall, ToolReturn, ToolStatus, Trajectory,
};

pub(crate) fn sample(sample: wit::Sample) -> Result<Sample, String> {
    Ok(Sample {
        id: match sample.id {
            wit::SampleId::Int(id) => SampleId::Int(id),
            wit::SampleId::Str(id) => SampleId::Str(id),
        },
        input: sample.input.map(texts),
        ground_truth: sample.ground_truth.map(texts),
        rubric_vars: object("rubric-vars", &sample.rubric_vars)?,
        name: sample.name,
        description: sample.description,
        expected: sample
            .expected
            .map(|text| {
                // Keys the row did not set arrive as nulls; absent reads better in a grader.
                let mut expected = object("expected", &text)?;
                expected.retain(|_, value| !value.is_null());
                Ok::<_, String>(expected)
            })
            .transpose()?,
        reference_output: sample.reference_output,
        reference_tools: sample.reference_tools,
        tags: sample.tags,
        metadata: object("metadata", &sample.metadata)?,
        memory: sample.memory.map(|blocks| {
            blocks
                .into_iter()
                .map(|b| MemoryBlock {
                    label: b.label,
                    value: b.value,
                })
                .collect()
        }),
    })
}

/// A JSON-object field of the sample. The host always sends an object; anything else is a host
/// fault, reported rather than guessed around.
fn object(field: &str, text: &str) -> Result<Map<String, Value>, String> {
    serde_json::from_str(text).map_err(|e| {
        format!("sample.{field} is not a JSON object ({e}); the host sent: {text:.80}")
    })
}

fn texts(texts: wit::Texts) -> Texts {
    match texts {
        wit::Texts::One(text) => Texts::One(text),
        wit::Texts::PerTurn(turns) => Texts::PerTurn(turns),
    }
}

pub(crate) fn trajectory(trajectory: wit::Trajectory) -> Trajectory {
    Trajectory {
        turns: trajectory
            .turns
            .into_iter()
            .map(|turn| turn.into_iter().map(event).collect())
            .collect(),
        output: trajectory.output,
        status: match trajectory.status {
            wit::RunStatus::Success => RunStatus::Success,
            wit::RunStatus::Failure => RunStatus::Failure,
            wit::RunStatus::Timeout => RunStatus::Timeout,
            wit::RunStatus::Error => RunStatus::Error,
        },
        input: trajectory.input,
        duration_ms: trajectory.duration_ms,
        usage: trajectory.usage.map(tokens),
    }
}

fn event(event: wit::Event) -> Event {
    match event {
        wit::Event::System(text) => Event::System { text },
        wit::Event::User(c) => Event::User {
            content: content(c),
        },
        wit::Event::Assistant(c) => Event::Assistant {
            content: content(c),
        },
        wit::Event::Reasoning(text) => Event::Reasoning { text },
        wit::Event::ToolCall(call) => Event::ToolCall(ToolCall {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
            failed: call.failed,
        }),
        wit::Event::ToolReturn(ret) => Event::ToolReturn(ToolReturn {
            call_id: ret.call_id,
            content: ret.content,
            status: match ret.status {
                wit::ToolStatus::Success => ToolStatus::Success,
                wit::ToolStatus::Error => ToolStatus::Error,
            },
        }),
        wit::Event::LlmCall(call) => Event::LlmCall(LlmCall {
            model: call.model,
            input: call.input,
            output: call.output,
            tokens: call.tokens.map(tokens),
        }),
        wit::Event::HumanInput(text) => Event::HumanInput { text },
        wit::Event::Other(kind) => Event::Other { kind },
    }
}

fn content(content: wit::Content) -> Content {
    match content {
        wit::Content::Text(text) => Content::Text(text),
        wit::Content::Parts(parts) => Content::Parts(parts),
    }
}

fn tokens(t: wit::Tokens) -> Tokens {
    Tokens {
        prompt_tokens: t.prompt_tokens,
        completion_tokens: t.completion_tokens,
        total_tokens: t.total_tokens,
    }
}

pub(crate) fn grade(grade: Grade) -> wit::Grade {
    wit::Grade {
        score: grade.score,
        status: grade.status.map(|status| match status {
            Status::Pass => wit::Status::Pass,
            Status::Fail => wit::Status::Fail,
            Status::Error => wit::Status::Error,
            Status::Skip => wit::Status::Skip,
        }),
        rationale: grade.rationale,
        metadata: (!grade.metadata.is_empty()).then(|| Value::Object(grade.metadata).to_string()),
        expected: grade.expected.map(|v| v.to_string()),
        actual: grade.actual.map(|v| v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_keeps_only_the_keys_the_row_set() {
        let converted = sample(wit::Sample {
            id: wit::SampleId::Int(7),
            input: Some(wit::Texts::PerTurn(vec!["a".into(), "b".into()])),
            ground_truth: None,
            rubric_vars: r#"{"tone": "formal"}"#.into(),
            name: None,
            description: None,
            expected: Some(r#"{"tools_called": ["search"], "max_steps": null}"#.into()),
            reference_output: None,
            reference_tools: vec![],
            tags: vec!["smoke".into()],
            metadata: "{}".into(),
            memory: Some(vec![wit::MemoryBlock {
                label: "human".into(),
                value: "Ada".into(),
            }]),
        })
        .unwrap();
        let expected = converted.expected.as_ref().unwrap();
        assert_eq!(expected.len(), 1);
        assert_eq!(expected["tools_called"][0], "search");
        assert_eq!(converted.id, SampleId::Int(7));
        assert_eq!(converted.input_text(), None);
        assert_eq!(converted.rubric_vars["tone"], "formal");
        assert_eq!(converted.memory_block("human").unwrap(), "Ada");
    }
}
