//! Bindings for `gavel:grader@0.1.0` and the conversion of gavel's canonical model into them.

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/gavel-grader-0.1.0",
        world: "pack-v0",
    });
}

pub(super) use bindings::PackV0Pre;
pub(super) use bindings::gavel::grader::types as v0;

use wasmtime::Store;
use wasmtime::component::{ComponentExportIndex, Instance};

use super::engine::CallState;
use crate::input::sample::{Sample, SampleId, Texts};
use crate::input::trajectory::{Content, Event, RunStatus, Tokens, ToolStatus, Trajectory};

/// The exported interface as bindgen names it; a pack built against a later 0.1 patch release
/// matches it by semver.
const PACK_EXPORT: &str = "gavel:grader/pack@0.1.0";

/// Where a pack's functions are among its exports. A call on a fresh instance then fetches only
/// the function it runs, typed (wasmtime checks its signature against this WIT version's).
#[derive(Debug, Clone, Copy)]
pub(super) struct Exports {
    check_config: ComponentExportIndex,
    grade: ComponentExportIndex,
    extract: ComponentExportIndex,
}

impl Exports {
    /// Checks the signature of every export of `instance`, asks it to describe itself, and
    /// records where its functions are.
    pub(super) fn describe(
        instance: &Instance,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<(Exports, v0::PackInfo)> {
        let pack = bindings::PackV0::new(&mut *store, instance)?;
        let info = pack.gavel_grader_pack().call_describe(&mut *store)?;
        let interface = instance.get_export_index(&mut *store, None, PACK_EXPORT);
        let mut index = |name: &str| {
            instance
                .get_export_index(&mut *store, interface.as_ref(), name)
                .ok_or_else(|| wasmtime::format_err!("the pack exports no function `{name}`"))
        };
        let exports = Exports {
            check_config: index("check-config")?,
            grade: index("grade")?,
            extract: index("extract")?,
        };
        Ok((exports, info))
    }

    pub(super) fn check_config(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        name: &str,
        config: &str,
    ) -> wasmtime::Result<Result<(), String>> {
        let func = instance.get_typed_func::<(&str, &str), (Result<(), String>,)>(
            &mut *store,
            self.check_config,
        )?;
        Ok(func.call(store, (name, config))?.0)
    }

    pub(super) fn grade(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        args: (&str, &v0::Sample, &v0::Trajectory, &str, &str),
    ) -> wasmtime::Result<Result<v0::Grade, String>> {
        let func = instance.get_typed_func::<
            (&str, &v0::Sample, &v0::Trajectory, &str, &str),
            (Result<v0::Grade, String>,),
        >(&mut *store, self.grade)?;
        Ok(func.call(store, args)?.0)
    }

    pub(super) fn extract(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        args: (&str, &v0::Sample, &v0::Trajectory, &str),
    ) -> wasmtime::Result<Result<Option<String>, String>> {
        let func = instance.get_typed_func::<
            (&str, &v0::Sample, &v0::Trajectory, &str),
            (Result<Option<String>, String>,),
        >(&mut *store, self.extract)?;
        Ok(func.call(store, args)?.0)
    }
}

pub(super) fn sample(sample: &Sample<'_>) -> v0::Sample {
    // A map of JSON values always serializes.
    let json = |map: &serde_json::Map<String, serde_json::Value>| {
        serde_json::to_string(map).unwrap_or_default()
    };
    v0::Sample {
        id: match sample.id() {
            SampleId::Int(i) => v0::SampleId::Int(i),
            SampleId::Str(s) => v0::SampleId::Str(s),
        },
        input: sample.input.as_ref().map(texts),
        ground_truth: sample.ground_truth.as_ref().map(texts),
        rubric_vars: json(&sample.rubric_vars),
        name: sample.name.clone(),
        description: sample.description.clone(),
        expected: sample
            .expected
            .as_ref()
            .and_then(|e| serde_json::to_string(e).ok()),
        reference_output: sample.reference_output.clone(),
        reference_tools: sample.reference_tools.clone(),
        tags: sample.tags.clone(),
        metadata: json(&sample.metadata),
        memory: sample.agent_state.as_ref().map(|state| {
            state
                .blocks
                .iter()
                .map(|b| v0::MemoryBlock {
                    label: b.label.clone(),
                    value: b.value.clone(),
                })
                .collect()
        }),
    }
}

fn texts(texts: &Texts) -> v0::Texts {
    match texts {
        Texts::One(s) => v0::Texts::One(s.clone()),
        Texts::PerTurn(items) => v0::Texts::PerTurn(items.clone()),
    }
}

pub(super) fn trajectory(trajectory: &Trajectory<'_>) -> v0::Trajectory {
    v0::Trajectory {
        turns: trajectory
            .turns
            .iter()
            .map(|turn| turn.iter().map(event).collect())
            .collect(),
        output: trajectory.output.as_deref().map(str::to_string),
        status: match trajectory.status {
            RunStatus::Success => v0::RunStatus::Success,
            RunStatus::Failure => v0::RunStatus::Failure,
            RunStatus::Timeout => v0::RunStatus::Timeout,
            RunStatus::Error => v0::RunStatus::Error,
        },
        input: trajectory.input.as_deref().map(str::to_string),
        duration_ms: trajectory.duration_ms,
        usage: trajectory.usage.map(tokens),
    }
}

fn event(event: &Event<'_>) -> v0::Event {
    match event {
        Event::System { text } => v0::Event::System(text.to_string()),
        Event::User { content: c } => v0::Event::User(content(c)),
        Event::Assistant { content: c } => v0::Event::Assistant(content(c)),
        Event::Reasoning { text } => v0::Event::Reasoning(text.to_string()),
        Event::ToolCall(call) => v0::Event::ToolCall(v0::ToolCall {
            id: call.id.to_string(),
            name: call.name.to_string(),
            arguments: call.arguments.to_string(),
            failed: call.failed,
        }),
        Event::ToolReturn(ret) => v0::Event::ToolReturn(v0::ToolReturn {
            call_id: ret.call_id.to_string(),
            content: ret.content.to_string(),
            status: match ret.status {
                ToolStatus::Success => v0::ToolStatus::Success,
                ToolStatus::Error => v0::ToolStatus::Error,
            },
        }),
        Event::LlmCall(call) => v0::Event::LlmCall(v0::LlmCall {
            model: call.model.as_deref().map(str::to_string),
            input: call.input.as_deref().map(str::to_string),
            output: call.output.as_deref().map(str::to_string),
            tokens: call.tokens.map(tokens),
        }),
        Event::HumanInput { text } => v0::Event::HumanInput(text.as_deref().map(str::to_string)),
        Event::Other { kind } => v0::Event::Other(kind.to_string()),
    }
}

fn content(content: &Content<'_>) -> v0::Content {
    match content {
        Content::Text(text) => v0::Content::Text(text.to_string()),
        Content::Parts(parts) => v0::Content::Parts(parts.iter().map(|p| p.to_string()).collect()),
    }
}

fn tokens(tokens: Tokens) -> v0::Tokens {
    v0::Tokens {
        prompt_tokens: tokens.prompt_tokens,
        completion_tokens: tokens.completion_tokens,
        total_tokens: tokens.total_tokens,
    }
}
