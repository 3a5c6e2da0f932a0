//! Bindings for `gavel:grader@0.1.0` and `@0.2.0`, and the conversion of gavel's canonical
//! model into them.
//!
//! 0.2.0 is 0.1.0 with two fields more (`sample.row`, `trajectory.recorded`) and the `program`
//! interface of interpreters. Its records are declared here over 0.1.0's bindings for every
//! type the versions share, so that one conversion serves both and one call path runs every
//! pack; they are checked against each 0.2 component's own signatures when it is loaded.

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/gavel-grader-0.1.0",
        world: "pack-v0",
    });
}

pub(super) use bindings::PackV0Pre;
pub(super) use bindings::gavel::grader::types as v0;

use wasmtime::Store;
use wasmtime::component::{ComponentExportIndex, ComponentType, Instance, Lift, Lower};

use super::digest;
use super::engine::CallState;
use super::process::GRADING;
use crate::input::sample::{Sample, SampleId, Texts};
use crate::input::trajectory::{Content, Event, Format, RunStatus, Tokens, ToolStatus, Trajectory};

/// The exported interface as bindgen names it; a pack built against a later 0.1 patch release
/// matches it by semver.
const PACK_EXPORT: &str = "gavel:grader/pack@0.1.0";

/// `gavel:grader@0.2.x`'s `sample`: 0.1's and the row as written.
#[derive(ComponentType, Lower)]
#[component(record)]
pub(super) struct Sample2 {
    id: v0::SampleId,
    input: Option<v0::Texts>,
    #[component(name = "ground-truth")]
    ground_truth: Option<v0::Texts>,
    #[component(name = "rubric-vars")]
    rubric_vars: String,
    name: Option<String>,
    description: Option<String>,
    expected: Option<String>,
    #[component(name = "reference-output")]
    reference_output: Option<String>,
    #[component(name = "reference-tools")]
    reference_tools: Vec<String>,
    tags: Vec<String>,
    metadata: String,
    memory: Option<Vec<v0::MemoryBlock>>,
    row: String,
}

/// `gavel:grader@0.2.x`'s `trajectory`: 0.1's and the run as recorded.
#[derive(ComponentType, Lower)]
#[component(record)]
pub(super) struct Trajectory2 {
    turns: Vec<Vec<v0::Event>>,
    output: Option<String>,
    status: v0::RunStatus,
    input: Option<String>,
    #[component(name = "duration-ms")]
    duration_ms: Option<f64>,
    usage: Option<v0::Tokens>,
    recorded: Option<RecordedRun>,
}

#[derive(ComponentType, Lower)]
#[component(record)]
pub(super) struct RecordedRun {
    format: String,
    value: String,
}

/// `program.source`: one user source file handed to an interpreter.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lower)]
#[component(record)]
pub struct Source {
    pub module: String,
    pub path: String,
    pub text: String,
    /// `text` compiled by the interpreter's `compile`, which `load` takes in its place.
    pub code: Option<Vec<u8>>,
}

/// `program.load-error`.
#[derive(Debug, Clone, ComponentType, Lift)]
#[component(record)]
pub(super) struct LoadError {
    path: Option<String>,
    line: Option<u32>,
    message: String,
}

impl LoadError {
    /// `path:line: message`, with what is known of the place.
    pub(super) fn located(&self) -> String {
        match (&self.path, self.line) {
            (Some(path), Some(line)) => format!("{path}:{line}: {}", self.message),
            (Some(path), None) => format!("{path}: {}", self.message),
            _ => self.message.clone(),
        }
    }
}

/// The arguments of a `grade` or `extract` call, in the shape of the pack's WIT version.
pub(super) enum Args {
    V1(v0::Sample, v0::Trajectory),
    V2(Sample2, Trajectory2),
    /// A `grade` call of an interpreter that sends no events, in `gavel:interpreter/grading`'s
    /// flat values.
    Flat(Flat),
}

/// What `gavel:interpreter/grading.grade` takes after the function's name and before the
/// submission and the config: the row's id (`key` when a string), its text, the run but its
/// events (none when the function reads nothing of it), the recorded run's format and value,
/// and the host's digest of the row.
pub(super) struct Flat {
    id: i64,
    key: Option<String>,
    row: String,
    run: Option<FlatRun>,
    recorded_format: Option<String>,
    recorded_value: Option<String>,
    digest: Option<Vec<u8>>,
}

/// `grading.run`: output, status, input, duration, usage.
type FlatRun = (
    Option<String>,
    &'static str,
    Option<String>,
    Option<f64>,
    Option<(u64, u64, u64)>,
);

/// `grading.outcome`: the fields of a `grade` record in order (`grading.status` has the cases of
/// `gavel:grader`'s `status`).
type FlatGrade = (
    f64,
    Option<v0::Status>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// `grading.grade`'s parameters.
type FlatParams<'a> = (
    &'a str,
    i64,
    Option<&'a str>,
    &'a str,
    Option<(
        Option<&'a str>,
        &'a str,
        Option<&'a str>,
        Option<f64>,
        Option<(u64, u64, u64)>,
    )>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a [u8]>,
    &'a str,
    &'a str,
);

/// Whether a call's `trajectory` carries the run's events (otherwise its list of turns is
/// empty), for a function known to read them only sometimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Events {
    Always,
    /// The function reads nothing of them.
    Never,
    /// The function reads a recording in this format instead, when the run has one.
    Unless(Format),
}

impl Events {
    /// Whether a call sends the run's events, with `recorded` the run as its row or run record
    /// wrote it ([`recorded`]).
    fn sent(self, recorded: Option<(&str, bool)>, trajectory: &Trajectory<'_>) -> bool {
        match self {
            Events::Always => true,
            Events::Never => false,
            Events::Unless(format) => recorded.is_none() || trajectory.format != format,
        }
    }
}

/// What a call of an interpreter's function reads of the row's `trajectory` member, the run as
/// the row recorded it, as its form reads it (`host/runtime/python/gavel_runtime`); a pack's
/// functions receive everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recording {
    /// The row and the recording as written.
    Sent,
    /// The row whole, as the function's own data; never the recording.
    RowOnly,
    /// The recording, when it is in this format, and the row's other members.
    Reads(Format),
    /// The row's other members only.
    Unread,
}

/// The `gavel:grader` line a pack was built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    V0_1,
    V0_2,
}

/// Where a pack's functions are among its exports. A call on a fresh instance then fetches only
/// the function it runs, typed (wasmtime checks its signature against its WIT version's); every
/// export was checked once already when the pack was described (see [`Exports::describe`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Exports {
    line: Line,
    check_config: ComponentExportIndex,
    grade: ComponentExportIndex,
    extract: ComponentExportIndex,
    /// `program`'s functions, for an interpreter.
    program: Option<ProgramExports>,
    /// `gavel:interpreter/grading.grade`, for gavel's Python interpreter.
    grading: Option<ComponentExportIndex>,
}

/// Where an interpreter's `program` functions are.
#[derive(Debug, Clone, Copy)]
struct ProgramExports {
    compile: ComponentExportIndex,
    load: ComponentExportIndex,
    reward: ComponentExportIndex,
}

impl Exports {
    /// Checks the signature of every export of `instance` (built against `gavel:grader@version`),
    /// asks it to describe itself, and records where its functions are.
    pub(super) fn describe(
        instance: &Instance,
        store: &mut Store<CallState>,
        version: &str,
    ) -> wasmtime::Result<(Exports, v0::PackInfo)> {
        if !version.starts_with("0.2.") {
            let pack = bindings::PackV0::new(&mut *store, instance)?;
            let info = pack.gavel_grader_pack().call_describe(&mut *store)?;
            let interface = instance.get_export_index(&mut *store, None, PACK_EXPORT);
            let mut index = |name: &str| {
                instance
                    .get_export_index(&mut *store, interface.as_ref(), name)
                    .ok_or_else(|| wasmtime::format_err!("the pack exports no function `{name}`"))
            };
            let exports = Exports {
                line: Line::V0_1,
                check_config: index("check-config")?,
                grade: index("grade")?,
                extract: index("extract")?,
                program: None,
                grading: None,
            };
            return Ok((exports, info));
        }
        let pack = format!("gavel:grader/pack@{version}");
        let check_config =
            checked::<(&str, &str), (Result<(), String>,)>(instance, store, &pack, "check-config")?;
        let grade = checked::<
            (&str, &Sample2, &Trajectory2, &str, &str),
            (Result<v0::Grade, String>,),
        >(instance, store, &pack, "grade")?;
        let extract = checked::<
            (&str, &Sample2, &Trajectory2, &str),
            (Result<Option<String>, String>,),
        >(instance, store, &pack, "extract")?;
        let describe = checked::<(), (v0::PackInfo,)>(instance, store, &pack, "describe")?;
        let program = format!("gavel:grader/program@{version}");
        let program = match instance.get_export_index(&mut *store, None, &program) {
            None => None,
            Some(_) => Some(ProgramExports {
                compile: checked::<(&[Source],), (Result<Vec<Option<Vec<u8>>>, LoadError>,)>(
                    instance, store, &program, "compile",
                )?,
                load: checked::<(&[Source], &[String]), (Result<(), LoadError>,)>(
                    instance, store, &program, "load",
                )?,
                reward: checked::<(&str, &str), (Result<String, String>,)>(
                    instance, store, &program, "reward",
                )?,
            }),
        };
        let grading = match instance.get_export_index(&mut *store, None, GRADING) {
            None => None,
            Some(_) => Some(checked::<FlatParams<'_>, (Result<FlatGrade, String>,)>(
                instance, store, GRADING, "grade",
            )?),
        };
        let func = export(instance, store, describe)?;
        let info = func
            .typed::<(), (v0::PackInfo,)>(&*store)?
            .call(store, ())?
            .0;
        let exports = Exports {
            line: Line::V0_2,
            check_config,
            grade,
            extract,
            program,
            grading,
        };
        Ok((exports, info))
    }

    /// Whether the pack is an interpreter (it exports `program`).
    pub(super) fn is_interpreter(&self) -> bool {
        self.program.is_some()
    }

    /// The arguments of a call for this pack's WIT version, the run's events as `events` says
    /// and the row and its recording as `recording` says.
    pub(super) fn args(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
        events: Events,
        recording: Recording,
    ) -> Args {
        let recorded = match self.line {
            Line::V0_1 => None,
            Line::V0_2 => recorded(sample),
        };
        self.args_recorded(sample, trajectory, events, recording, recorded)
    }

    /// [`Exports::args`], with the run as the row (or its run record) wrote it already found.
    fn args_recorded(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
        events: Events,
        recording: Recording,
        recorded: Option<(&str, bool)>,
    ) -> Args {
        let events = events.sent(recorded, trajectory);
        let v1_sample = match self.is_interpreter() {
            // The interpreter reads the row's own text and its id (`app.py`): the row's parts,
            // parsed, would cross again for nothing.
            true => identified(sample),
            false => self::sample(sample),
        };
        let v1_trajectory = self::trajectory(trajectory, events);
        if self.line == Line::V0_1 {
            return Args::V1(v1_sample, v1_trajectory);
        }
        let v0::Sample {
            id,
            input,
            ground_truth,
            rubric_vars,
            name,
            description,
            expected,
            reference_output,
            reference_tools,
            tags,
            metadata,
            memory,
        } = v1_sample;
        let v0::Trajectory {
            turns,
            output,
            status,
            input: task,
            duration_ms,
            usage,
        } = v1_trajectory;
        let (row, recorded) = crossing(sample.row, recorded, trajectory.format, recording);
        Args::V2(
            Sample2 {
                id,
                input,
                ground_truth,
                rubric_vars,
                name,
                description,
                // Left empty by `identified` for the interpreter: the host's word on the row's
                // evaldeck recording goes with the flat call alone (see [`digest`]).
                expected,
                reference_output,
                reference_tools,
                tags,
                metadata,
                memory,
                row,
            },
            Trajectory2 {
                turns,
                output,
                status,
                input: task,
                duration_ms,
                usage,
                recorded,
            },
        )
    }

    /// The arguments of a `grade` call ([`Exports::args`]); for gavel's Python interpreter, when
    /// they carry no events, its flat `grading.grade`'s, made straight from the sample and the
    /// run.
    pub(super) fn grade_args(
        &self,
        sample: &Sample<'_>,
        trajectory: &Trajectory<'_>,
        events: Events,
        recording: Recording,
    ) -> Args {
        if self.grading.is_none() || self.line != Line::V0_2 {
            return self.args(sample, trajectory, events, recording);
        }
        let recorded = recorded(sample);
        if events.sent(recorded, trajectory) && !trajectory.turns.is_empty() {
            return self.args_recorded(sample, trajectory, events, recording, recorded);
        }
        Args::Flat(flat(
            sample,
            trajectory,
            events != Events::Never,
            sent_row(sample, trajectory, recorded, recording),
        ))
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

    /// `grade`, with `args` made for this pack's WIT version by [`Exports::args`].
    pub(super) fn grade(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        (name, args, submission, config): (&str, &Args, &str, &str),
    ) -> wasmtime::Result<Result<v0::Grade, String>> {
        let result = match args {
            Args::V1(sample, trajectory) => instance
                .get_typed_func::<
                    (&str, &v0::Sample, &v0::Trajectory, &str, &str),
                    (Result<v0::Grade, String>,),
                >(&mut *store, self.grade)?
                .call(store, (name, sample, trajectory, submission, config))?,
            Args::V2(sample, trajectory) => instance
                .get_typed_func::<
                    (&str, &Sample2, &Trajectory2, &str, &str),
                    (Result<v0::Grade, String>,),
                >(&mut *store, self.grade)?
                .call(store, (name, sample, trajectory, submission, config))?,
            Args::Flat(flat) => {
                let Some(grading) = self.grading else {
                    return Err(wasmtime::format_err!("the pack is not gavel's interpreter"));
                };
                let run = flat.run.as_ref().map(|(output, status, input, duration, usage)| {
                    (output.as_deref(), *status, input.as_deref(), *duration, *usage)
                });
                let params: FlatParams<'_> = (
                    name,
                    flat.id,
                    flat.key.as_deref(),
                    &flat.row,
                    run,
                    flat.recorded_format.as_deref(),
                    flat.recorded_value.as_deref(),
                    flat.digest.as_deref(),
                    submission,
                    config,
                );
                let func = instance
                    .get_typed_func::<FlatParams<'_>, (Result<FlatGrade, String>,)>(
                        &mut *store,
                        grading,
                    )?;
                return Ok(func.call(store, params)?.0.map(graded));
            }
        };
        Ok(result.0)
    }

    /// `extract` (see [`Exports::grade`]).
    pub(super) fn extract(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        (name, args, config): (&str, &Args, &str),
    ) -> wasmtime::Result<Result<Option<String>, String>> {
        let result = match args {
            Args::V1(sample, trajectory) => instance
                .get_typed_func::<
                    (&str, &v0::Sample, &v0::Trajectory, &str),
                    (Result<Option<String>, String>,),
                >(&mut *store, self.extract)?
                .call(store, (name, sample, trajectory, config))?,
            Args::V2(sample, trajectory) => instance
                .get_typed_func::<
                    (&str, &Sample2, &Trajectory2, &str),
                    (Result<Option<String>, String>,),
                >(&mut *store, self.extract)?
                .call(store, (name, sample, trajectory, config))?,
            Args::Flat(_) => {
                return Err(wasmtime::format_err!("flat arguments are a grade call's"));
            }
        };
        Ok(result.0)
    }

    /// `program.compile`: each source's code, in order; the error, located, when one does not
    /// compile. A pack without `program` compiles nothing.
    pub(super) fn compile(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        sources: &[Source],
    ) -> wasmtime::Result<Result<Vec<Option<Vec<u8>>>, String>> {
        let Some(program) = self.program else {
            return Ok(Ok(vec![None; sources.len()]));
        };
        let func = instance
            .get_typed_func::<(&[Source],), (Result<Vec<Option<Vec<u8>>>, LoadError>,)>(
                &mut *store,
                program.compile,
            )?;
        Ok(func.call(store, (sources,))?.0.map_err(|e| e.located()))
    }

    /// `program.load`; the error, located, when the user's code cannot be loaded. A pack
    /// without `program` loads nothing.
    pub(super) fn load(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        sources: &[Source],
        entries: &[String],
    ) -> wasmtime::Result<Result<(), String>> {
        let Some(ProgramExports { load, .. }) = self.program else {
            return Ok(Ok(()));
        };
        let func = instance.get_typed_func::<(&[Source], &[String]), (Result<(), LoadError>,)>(
            &mut *store,
            load,
        )?;
        Ok(func
            .call(store, (sources, entries))?
            .0
            .map_err(|e| e.located()))
    }

    /// `program.reward`.
    pub(super) fn reward(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        name: &str,
        context: &str,
    ) -> wasmtime::Result<Result<String, String>> {
        let Some(ProgramExports { reward, .. }) = self.program else {
            return Err(wasmtime::format_err!("the pack is not an interpreter"));
        };
        let func = instance
            .get_typed_func::<(&str, &str), (Result<String, String>,)>(&mut *store, reward)?;
        Ok(func.call(store, (name, context))?.0)
    }
}

/// The function `name` of the exported interface `interface`, its signature checked against
/// `(P) -> R`.
fn checked<P, R>(
    instance: &Instance,
    store: &mut Store<CallState>,
    interface: &str,
    name: &str,
) -> wasmtime::Result<ComponentExportIndex>
where
    P: wasmtime::component::ComponentNamedList + Lower,
    R: wasmtime::component::ComponentNamedList + Lift,
{
    let parent = instance.get_export_index(&mut *store, None, interface);
    let index = instance
        .get_export_index(&mut *store, parent.as_ref(), name)
        .ok_or_else(|| wasmtime::format_err!("`{interface}` exports no function `{name}`"))?;
    export(instance, store, index)?
        .typed::<P, R>(&*store)
        .map_err(|e| e.context(format!("`{interface}#{name}`")))?;
    Ok(index)
}

fn export(
    instance: &Instance,
    store: &mut Store<CallState>,
    index: ComponentExportIndex,
) -> wasmtime::Result<wasmtime::component::Func> {
    instance
        .get_func(store, index)
        .ok_or_else(|| wasmtime::format_err!("a pack function is missing from its instance"))
}

fn sample(sample: &Sample<'_>) -> v0::Sample {
    // A map of JSON values always serializes.
    let json = |map: &serde_json::Map<String, serde_json::Value>| {
        serde_json::to_string(map).unwrap_or_default()
    };
    v0::Sample {
        id: sample_id(sample),
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

/// A call's `grade` arguments in `grading.grade`'s flat values, the run but its events when
/// `reads_run`, with the row, recording and digest it sends ([`sent_row`]).
fn flat(
    sample: &Sample<'_>,
    trajectory: &Trajectory<'_>,
    reads_run: bool,
    (row, recorded, digest): SentRow,
) -> Flat {
    let (id, key) = match sample.id() {
        SampleId::Int(i) => (i, None),
        SampleId::Str(s) => (0, Some(s)),
    };
    let run = reads_run.then(|| {
        (
            trajectory.output.as_deref().map(str::to_string),
            trajectory.status.as_str(),
            trajectory.input.as_deref().map(str::to_string),
            trajectory.duration_ms,
            trajectory
                .usage
                .map(|t| (t.prompt_tokens, t.completion_tokens, t.total_tokens)),
        )
    });
    let (recorded_format, recorded_value) = match recorded {
        Some(RecordedRun { format, value }) => (Some(format), Some(value)),
        None => (None, None),
    };
    Flat {
        id,
        key,
        row,
        run,
        recorded_format,
        recorded_value,
        digest,
    }
}

/// `grading.grade`'s tuple as the `grade` record it stands for, to be checked as one.
fn graded((score, status, rationale, metadata, expected, actual): FlatGrade) -> v0::Grade {
    v0::Grade {
        score,
        status,
        rationale,
        metadata,
        expected,
        actual,
    }
}

/// The sample's id, and none of its parts.
fn identified(sample: &Sample<'_>) -> v0::Sample {
    v0::Sample {
        id: sample_id(sample),
        input: None,
        ground_truth: None,
        rubric_vars: "{}".to_string(),
        name: None,
        description: None,
        expected: None,
        reference_output: None,
        reference_tools: Vec::new(),
        tags: Vec::new(),
        metadata: "{}".to_string(),
        memory: None,
    }
}

fn sample_id(sample: &Sample<'_>) -> v0::SampleId {
    match sample.id() {
        SampleId::Int(i) => v0::SampleId::Int(i),
        SampleId::Str(s) => v0::SampleId::Str(s),
    }
}

fn texts(texts: &Texts) -> v0::Texts {
    match texts {
        Texts::One(s) => v0::Texts::One(s.clone()),
        Texts::PerTurn(items) => v0::Texts::PerTurn(items.clone()),
    }
}

fn trajectory(trajectory: &Trajectory<'_>, events: bool) -> v0::Trajectory {
    let turns = if events { &trajectory.turns[..] } else { &[] };
    v0::Trajectory {
        turns: turns
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

/// What a call sends of the row: its text, the recording ([`crossing`]) and the host's digest
/// of the row's evaldeck recording for a function that reads it ([`digest`]).
type SentRow = (String, Option<RecordedRun>, Option<Vec<u8>>);

/// The [`SentRow`] of a call, with `recorded` the run as its row or run record wrote it.
fn sent_row(
    sample: &Sample<'_>,
    trajectory: &Trajectory<'_>,
    recorded: Option<(&str, bool)>,
    recording: Recording,
) -> SentRow {
    let digest = match (recording, recorded) {
        (Recording::Reads(Format::Evaldeck), Some((value, true)))
            if trajectory.format == Format::Evaldeck =>
        {
            sample
                .row_memo
                .get(sample.row, |row| digest::evaldeck(row, value))
        }
        _ => None,
    };
    let (row, recorded) = crossing(sample.row, recorded, trajectory.format, recording);
    (row, recorded, digest)
}

/// The run as the row (or its run record) wrote it: the text of the `trajectory` member, and
/// whether it is the row's own (not a run record's).
fn recorded<'a>(sample: &Sample<'a>) -> Option<(&'a str, bool)> {
    #[derive(serde::Deserialize)]
    struct Record<'a> {
        #[serde(borrow)]
        trajectory: Option<&'a serde_json::value::RawValue>,
    }
    let record = sample.run.unwrap_or(sample.row);
    let value = serde_json::from_str::<Record<'_>>(record)
        .ok()?
        .trajectory?;
    Some((value.get(), sample.run.is_none()))
}

/// The row's text and the recording a call sends, as `recording` says its function reads them.
///
/// Where the recording is the row's own `trajectory` member (the only member of that name: the
/// row parsed with one, see [`recorded`]), it crosses once. To a function that reads it, the row
/// is sent whole and the recording's value empty, which no JSON text is: the interpreter takes
/// the row's `trajectory` member as the recording. To one that reads neither, the row is sent
/// without the member when its key is written plainly (with the empty recording otherwise, so
/// that the interpreter leaves the member out itself).
fn crossing(
    row: &str,
    recorded: Option<(&str, bool)>,
    format: Format,
    recording: Recording,
) -> (String, Option<RecordedRun>) {
    let run = |value: &str| {
        Some(RecordedRun {
            format: format.name().to_string(),
            value: value.to_string(),
        })
    };
    let Some((value, own)) = recorded else {
        return (row.to_string(), None);
    };
    match recording {
        Recording::Sent => (row.to_string(), run(value)),
        Recording::RowOnly => (row.to_string(), None),
        Recording::Reads(read) if read == format => match own {
            true => (row.to_string(), run("")),
            false => (row.to_string(), run(value)),
        },
        Recording::Reads(_) | Recording::Unread => match own {
            false => (row.to_string(), None),
            true => match without_member(row, value) {
                Some(cut) => (cut, None),
                None => (row.to_string(), run("")),
            },
        },
    }
}

/// `row`, a JSON object's text, without its member `"trajectory": value`, `value` being that
/// member's value as a slice of `row`; None when the key is not written plainly.
///
/// The slice is a member's value, so what comes before it is its key and a colon, and before
/// the key the object's `{` or the `,` after the member before; a key that reads
/// `"trajectory"` in its last twelve bytes and decodes to `trajectory` is those twelve bytes
/// (any escape before them would add a character).
fn without_member(row: &str, value: &str) -> Option<String> {
    const KEY: &[u8] = b"\"trajectory\"";
    let bytes = row.as_bytes();
    let start = (value.as_ptr() as usize).checked_sub(row.as_ptr() as usize)?;
    let end = start + value.len();
    if end > bytes.len() {
        return None;
    }
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let back = |mut i: usize| {
        while i > 0 && space(bytes[i - 1]) {
            i -= 1;
        }
        i
    };
    let colon = back(start).checked_sub(1)?;
    let key = back(colon).checked_sub(KEY.len())?;
    if bytes[colon] != b':' || &bytes[key..key + KEY.len()] != KEY {
        return None;
    }
    let before = back(key).checked_sub(1)?;
    let mut after = end;
    while after < bytes.len() && space(bytes[after]) {
        after += 1;
    }
    let (from, to) = match (bytes[before], bytes.get(after)) {
        // Not the first member: from the comma before it to the end of its value.
        (b',', _) => (before, end),
        // The first of several: from the key to the comma after it.
        (b'{', Some(b',')) => (before + 1, after + 1),
        // The only member.
        (b'{', _) => (before + 1, end),
        _ => return None,
    };
    Some([&row[..from], &row[to..]].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row's `trajectory` member cut out of `row`, found as serde finds it.
    fn cut(row: &str) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Record<'a> {
            #[serde(borrow)]
            trajectory: &'a serde_json::value::RawValue,
        }
        let value = serde_json::from_str::<Record<'_>>(row)
            .unwrap()
            .trajectory
            .get();
        without_member(row, value)
    }

    #[test]
    fn the_rows_recording_is_cut_out_wherever_it_stands() {
        let run = r#"{"steps": [{"trajectory": 1}], "output": "x"}"#;
        for (row, left) in [
            (
                format!(r#"{{"id": 1, "trajectory": {run}}}"#),
                r#"{"id": 1}"#,
            ),
            (
                format!(r#"{{"trajectory": {run}, "id": 1}}"#),
                r#"{ "id": 1}"#,
            ),
            (
                format!(r#"{{"a": 1, "trajectory" :{run} , "b": [2]}}"#),
                r#"{"a": 1 , "b": [2]}"#,
            ),
            (format!("{{ \"trajectory\"\n:\t{run}\n}}"), "{\n}"),
            (format!(r#"{{"trajectory":{run}}}"#), "{}"),
        ] {
            let rest = cut(&row).unwrap_or_else(|| panic!("not cut: {row}"));
            assert_eq!(rest, left, "{row}");
            let parsed: serde_json::Value = serde_json::from_str(&rest).unwrap();
            let mut whole: serde_json::Value = serde_json::from_str(&row).unwrap();
            whole.as_object_mut().unwrap().remove("trajectory");
            assert_eq!(parsed, whole, "{row}");
        }
    }

    #[test]
    fn a_key_written_with_escapes_is_left_to_the_interpreter() {
        let row = r#"{"id": 1, "traj\u0065ctory": [1]}"#;
        assert_eq!(cut(row), None);
        let (sent, recorded) = crossing(
            row,
            Some(("[1]", true)),
            Format::Evaldeck,
            Recording::Unread,
        );
        assert_eq!(sent, row);
        assert_eq!(recorded.map(|r| r.value), Some(String::new()));
    }

    #[test]
    fn the_recording_crosses_once_as_the_function_reads_it() {
        let row = r#"{"id": 1, "trajectory": [1]}"#;
        let own = Some((&row[24..27], true));
        let sent = |recorded, format, recording| {
            let (row, run) = crossing(row, recorded, format, recording);
            (row, run.map(|r| (r.format, r.value)))
        };
        let whole = |value: &str| (row.to_string(), Some(("evaldeck".into(), value.into())));
        assert_eq!(sent(own, Format::Evaldeck, Recording::Sent), whole("[1]"));
        assert_eq!(
            sent(own, Format::Evaldeck, Recording::Reads(Format::Evaldeck)),
            whole("")
        );
        assert_eq!(
            sent(own, Format::Evaldeck, Recording::RowOnly),
            (row.to_string(), None)
        );
        let apart = (r#"{"id": 1}"#.to_string(), None);
        assert_eq!(sent(own, Format::Evaldeck, Recording::Unread), apart);
        assert_eq!(
            sent(own, Format::Evaldeck, Recording::Reads(Format::Letta)),
            apart
        );
        // A run record's recording is not in the row: its text crosses to a function reading it.
        let record = Some(("[2]", false));
        let text = (row.to_string(), Some(("evaldeck".into(), "[2]".into())));
        assert_eq!(
            sent(record, Format::Evaldeck, Recording::Reads(Format::Evaldeck)),
            text
        );
        assert_eq!(
            sent(record, Format::Evaldeck, Recording::Unread),
            (row.to_string(), None)
        );
        assert_eq!(
            sent(None, Format::Evaldeck, Recording::Sent),
            (row.to_string(), None)
        );
    }
}
