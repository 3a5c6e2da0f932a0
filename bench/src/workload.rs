//! The synthetic workload: one-turn agent runs in the shape of letta-evals' own benchmark
//! (user, reasoning, tool call, tool return, one or two assistant messages; 20% list content;
//! 3% no assistant message; a quarter of the ground truths are regexes).
//!
//! A [`Run`] is format-neutral and depends only on `(seed, index)`, so the letta and evaldeck
//! renderings of row `i` describe the same run and any row can be produced without the others.

use serde_json::{Value, json};

/// splitmix64: tiny, fast, and identical on every platform, which is all a workload needs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The generator for row `index` of a workload seeded with `seed`.
    pub fn for_row(seed: u64, index: u64) -> Rng {
        let mut mix = Rng(seed ^ index.wrapping_mul(0xA076_1D64_78BD_642F));
        Rng(mix.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant at these sizes.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Percentages of the workload's shape.
pub const LIST_CONTENT_PERCENT: u64 = 20;
pub const NO_ASSISTANT_PERCENT: u64 = 3;
pub const REGEX_GROUND_TRUTH_PERCENT: u64 = 25;
/// Runs whose answer is wrong, so that every grader sees failures too.
const WRONG_ANSWER_PERCENT: u64 = 10;
/// Runs with a second assistant message after the answer.
const SECOND_ASSISTANT_PERCENT: u64 = 50;
/// evaldeck cases with a step budget the run exceeds.
const TIGHT_STEP_BUDGET_PERCENT: u64 = 10;

/// The model handle the recorded runs are filed under (letta-evals' `<model>.jsonl`).
pub const MODEL_HANDLE: &str = "bench-model";
/// The tool through which the evaldeck rendering delivers each assistant message.
pub const SEND_MESSAGE: &str = "send_message";

/// One synthetic agent run and what is expected of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: u64,
    pub input: String,
    pub reasoning: String,
    pub tool: &'static str,
    /// JSON text of the tool-call arguments.
    pub arguments: String,
    /// The tool's output (JSON text).
    pub tool_return: String,
    /// Zero, one or two assistant messages.
    pub assistant: Vec<String>,
    /// Whether the reply states the right answer.
    pub correct: bool,
    /// Whether assistant messages are recorded as a list of text parts.
    pub list_content: bool,
    /// letta-evals' `ground_truth`: a literal answer or, for a quarter of the rows, a regex.
    pub ground_truth: String,
    pub ground_truth_is_regex: bool,
    /// evaldeck's `expected:` block.
    pub output_contains: [String; 2],
    pub output_matches: String,
    pub max_steps: u64,
}

const COUNTRIES: [(&str, &str); 12] = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Canada", "Ottawa"),
    ("Australia", "Canberra"),
    ("Norway", "Oslo"),
    ("Egypt", "Cairo"),
    ("Chile", "Santiago"),
    ("São Tomé and Príncipe", "São Tomé"),
    ("Côte d'Ivoire", "Yamoussoukro"),
    ("Iceland", "Reykjavík"),
];
const CITIES: [&str; 8] = [
    "Berlin", "Lisbon", "Denver", "Osaka", "Quito", "Dublin", "Perth", "Zürich",
];
const CONDITIONS: [&str; 5] = ["cloudy", "sunny", "rainy", "windy", "foggy"];
const AIRPORTS: [&str; 8] = ["NYC", "LAX", "SFO", "ORD", "SEA", "BOS", "MIA", "DEN"];
const FILLER: [&str; 24] = [
    "the",
    "user",
    "wants",
    "an",
    "answer",
    "so",
    "I",
    "should",
    "check",
    "with",
    "tool",
    "first",
    "then",
    "reply",
    "briefly",
    "and",
    "confirm",
    "result",
    "before",
    "responding",
    "carefully",
    "it",
    "is",
    "clear",
];

impl Run {
    /// Row `index` of the workload seeded with `seed`.
    pub fn generate(seed: u64, index: u64) -> Run {
        let mut rng = Rng::for_row(seed, index);
        let wrong = rng.chance(WRONG_ANSWER_PERCENT);
        let scenario = match rng.below(4) {
            0 => capital(&mut rng, wrong),
            1 => weather(&mut rng, wrong),
            2 => arithmetic(&mut rng, wrong),
            _ => booking(&mut rng, wrong),
        };
        let words = 15 + rng.below(45) as usize;
        let reasoning = filler(&mut rng, words);
        let list_content = rng.chance(LIST_CONTENT_PERCENT);
        let mut assistant = Vec::new();
        if !rng.chance(NO_ASSISTANT_PERCENT) {
            assistant.push(scenario.reply.clone());
            if rng.chance(SECOND_ASSISTANT_PERCENT) {
                assistant.push(if rng.chance(50) {
                    scenario.answer.clone()
                } else {
                    "Anything else I can help with?".to_string()
                });
            }
        }
        let ground_truth_is_regex = rng.chance(REGEX_GROUND_TRUTH_PERCENT);
        let ground_truth = if ground_truth_is_regex {
            scenario.pattern.clone()
        } else {
            scenario.answer.clone()
        };
        let max_steps = if rng.chance(TIGHT_STEP_BUDGET_PERCENT) {
            5
        } else {
            8
        };
        Run {
            id: index,
            input: scenario.input,
            reasoning,
            tool: scenario.tool,
            arguments: scenario.arguments.to_string(),
            tool_return: scenario.tool_return.to_string(),
            assistant,
            correct: scenario.correct,
            list_content,
            ground_truth,
            ground_truth_is_regex,
            output_contains: [scenario.answer, scenario.keyword.to_string()],
            output_matches: scenario.pattern,
            max_steps,
        }
    }

    /// The run as a letta-evals trajectory: one turn of Letta messages.
    pub fn letta_trajectory(&self) -> Value {
        let run_id = format!("run-{}", self.id);
        let call_id = format!("call-{}", self.id);
        let mut messages = Vec::with_capacity(6);
        let mut message = |extra: Value, kind: &str, step: Option<usize>| {
            let n = messages.len() + 1;
            let mut m = json!({"id": format!("message-{}-{n}", self.id)});
            let obj = m.as_object_mut().expect("a JSON object");
            if let Value::Object(fields) = extra {
                obj.extend(fields);
            }
            obj.insert("date".into(), json!(format!("2026-01-01T00:00:{n:02}Z")));
            obj.insert("message_type".into(), json!(kind));
            obj.insert("run_id".into(), json!(run_id));
            if let Some(step) = step {
                obj.insert("step_id".into(), json!(format!("step-{}-{step}", self.id)));
            }
            messages.push(m);
        };
        message(
            json!({"content": self.input, "otid": format!("otid-{}", self.id)}),
            "user_message",
            None,
        );
        message(
            json!({"reasoning": self.reasoning, "source": "reasoner_model"}),
            "reasoning_message",
            Some(1),
        );
        let call = json!({"arguments": self.arguments, "name": self.tool, "tool_call_id": call_id});
        message(
            json!({"tool_call": call, "tool_calls": [call]}),
            "tool_call_message",
            Some(1),
        );
        message(
            json!({"status": "success", "tool_call_id": call_id, "tool_return": self.tool_return,
                   "stderr": [], "stdout": []}),
            "tool_return_message",
            Some(1),
        );
        for text in &self.assistant {
            let content = if self.list_content {
                json!(text_parts(text))
            } else {
                json!(text)
            };
            message(json!({"content": content}), "assistant_message", Some(2));
        }
        json!([messages])
    }

    /// A letta-evals dataset row with the recorded run inline.
    pub fn letta_row(&self, trajectory: &Value) -> Value {
        json!({
            "id": self.id,
            "input": self.input,
            "ground_truth": self.ground_truth,
            "trajectory": trajectory,
        })
    }

    /// A line of letta-evals' `<model>.jsonl`, as `letta-evals run --cached` reads it.
    pub fn letta_cached_result(&self, trajectory: &Value) -> Value {
        json!({
            "sample_id": self.id,
            "agent_id": format!("agent-{}", self.id),
            "model_handle": MODEL_HANDLE,
            "trajectory": trajectory,
            "submissions": {},
            "grades": {},
            "timing": {"total": 0.0, "target": 0.0},
        })
    }

    /// The same run as an evaldeck trace: an LLM call, reasoning, the tool call, and one
    /// LLM call plus `send_message` call per assistant message.
    pub fn evaldeck_trace(&self) -> Value {
        let step = |n: usize, fields: Value| {
            let mut s = json!({
                "id": format!("s{}-{n}", self.id),
                "timestamp": format!("2026-01-01T00:00:{n:02}"),
                "status": "success",
            });
            let obj = s.as_object_mut().expect("a JSON object");
            if let Value::Object(fields) = fields {
                obj.extend(fields);
            }
            obj.insert("duration_ms".into(), json!(100.0 + n as f64 * 12.5));
            s
        };
        let tokens = |prompt: u64, completion: u64| {
            json!({"prompt_tokens": prompt, "completion_tokens": completion,
                   "total_tokens": prompt + completion})
        };
        let args: Value = serde_json::from_str(&self.arguments).expect("generated JSON");
        let result: Value = serde_json::from_str(&self.tool_return).expect("generated JSON");
        let mut steps = vec![
            step(
                1,
                json!({"type": "llm_call", "model": "gpt-4o-mini", "input": self.input,
                       "output": format!("call {}", self.tool), "tokens": tokens(320, 24)}),
            ),
            step(
                2,
                json!({"type": "reasoning", "reasoning_text": self.reasoning}),
            ),
            step(
                3,
                json!({"type": "tool_call", "tool_name": self.tool, "tool_args": args,
                       "tool_result": result}),
            ),
        ];
        for text in &self.assistant {
            let n = steps.len() + 1;
            steps.push(step(
                n,
                json!({"type": "llm_call", "model": "gpt-4o-mini", "input": self.input,
                       "output": text, "tokens": tokens(410, 31)}),
            ));
            steps.push(step(
                n + 1,
                json!({"type": "tool_call", "tool_name": SEND_MESSAGE,
                       "tool_args": {"message": text}, "tool_result": "sent"}),
            ));
        }
        if self.assistant.is_empty() {
            let n = steps.len() + 1;
            steps.push(step(
                n,
                json!({"type": "llm_call", "model": "gpt-4o-mini", "input": self.input,
                       "output": null, "tokens": tokens(410, 0)}),
            ));
        }
        let output = (!self.assistant.is_empty()).then(|| self.assistant.join("\n"));
        json!({
            "id": format!("tr-{}", self.id),
            "input": self.input,
            "output": output,
            "status": "success",
            "steps": steps,
            "started_at": "2026-01-01T00:00:00",
            "completed_at": "2026-01-01T00:00:09",
            "duration_ms": 9000.0,
            "metadata": {},
            "framework": "custom",
            "agent_name": "BenchAgent",
        })
    }

    /// An evaldeck-shaped dataset row: the case's `expected:` block and the recorded trace.
    pub fn evaldeck_row(&self) -> Value {
        json!({
            "id": self.id,
            "name": format!("case-{}", self.id),
            "input": self.input,
            "expected": {
                "output_contains": self.output_contains,
                "tools_called": [self.tool, SEND_MESSAGE],
                "output_matches": self.output_matches,
                "max_steps": self.max_steps,
            },
            "trajectory": self.evaldeck_trace(),
        })
    }
}

/// What a scenario contributes to a run.
struct Scenario {
    input: String,
    tool: &'static str,
    arguments: Value,
    tool_return: Value,
    reply: String,
    /// The literal answer: the plain ground truth and the first `output_contains` value.
    answer: String,
    /// A regex the right reply matches (Python `re` and gavel agree on it).
    pattern: String,
    keyword: &'static str,
    correct: bool,
}

fn capital(rng: &mut Rng, wrong: bool) -> Scenario {
    let (country, city) = *rng.pick(&COUNTRIES);
    let said = if wrong { rng.pick(&COUNTRIES).1 } else { city };
    Scenario {
        input: format!("What is the capital of {country}? Use the lookup tool."),
        tool: "lookup_capital",
        arguments: json!({"country": country}),
        tool_return: json!({"capital": city}),
        reply: format!("The capital of {country} is {said}."),
        answer: city.to_string(),
        pattern: format!(r"(?i)\bcapital of .+ is {city}\b"),
        keyword: "capital",
        correct: said == city,
    }
}

fn weather(rng: &mut Rng, wrong: bool) -> Scenario {
    let city = *rng.pick(&CITIES);
    let temp = rng.below(46) as i64 - 10;
    let conditions = *rng.pick(&CONDITIONS);
    let said = if wrong { temp + 3 } else { temp };
    Scenario {
        input: format!("What's the weather in {city} right now, in Celsius?"),
        tool: "get_weather",
        arguments: json!({"city": city, "unit": "celsius"}),
        tool_return: json!({"temp_c": temp, "conditions": conditions}),
        reply: format!("It is {said}°C and {conditions} in {city} right now."),
        answer: format!("{temp}°C"),
        // The lookbehind keeps "12°C" from matching an expected "2°C".
        pattern: format!(r"(?<![\d-]){temp}°C and \w+"),
        keyword: "right now",
        correct: !wrong,
    }
}

fn arithmetic(rng: &mut Rng, wrong: bool) -> Scenario {
    let a = 2 + rng.below(998);
    let b = 2 + rng.below(998);
    let product = a * b;
    let said = if wrong { product + 1 } else { product };
    Scenario {
        input: format!("Compute {a} * {b} with the calculator."),
        tool: "calculator",
        arguments: json!({"expression": format!("{a} * {b}")}),
        tool_return: json!(product.to_string()),
        reply: format!("{a} * {b} = {said}"),
        answer: product.to_string(),
        pattern: format!(r"^{a} \* {b} = {product}$"),
        keyword: "=",
        correct: !wrong,
    }
}

fn booking(rng: &mut Rng, wrong: bool) -> Scenario {
    let from = *rng.pick(&AIRPORTS);
    let to = *rng.pick(&AIRPORTS);
    let day = 1 + rng.below(28);
    let letters: String = (0..3)
        .map(|_| char::from(b'A' + rng.below(26) as u8))
        .collect();
    let code = format!("{letters}{:03}", rng.below(1000));
    let said = if wrong { "pending" } else { code.as_str() };
    Scenario {
        input: format!("Book a flight from {from} to {to} on March {day}."),
        tool: "book_flight",
        arguments: json!({"from": from, "to": to, "date": format!("2026-03-{day:02}")}),
        tool_return: json!({"confirmation": code, "flight": format!("AA{}", 100 + day)}),
        reply: format!(
            "Your flight from {from} to {to} on March {day} is booked. Confirmation: {said}"
        ),
        answer: format!("Confirmation: {code}"),
        pattern: r"Confirmation: [A-Z]{3}\d{3}".to_string(),
        keyword: "booked",
        correct: !wrong,
    }
}

fn filler(rng: &mut Rng, words: usize) -> String {
    let mut text: Vec<&str> = (0..words).map(|_| *rng.pick(&FILLER)).collect();
    text.push("done.");
    text.join(" ")
}

/// `text` as Letta content parts, split at a space so that letta-evals' flattening (parts
/// joined by one space) gives the text back.
fn text_parts(text: &str) -> Vec<Value> {
    let parts: Vec<&str> = match text.split_once(' ') {
        Some((head, tail)) => vec![head, tail],
        None => vec![text],
    };
    parts
        .into_iter()
        .map(|p| json!({"text": p, "type": "text"}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(n: u64) -> Vec<Run> {
        (0..n).map(|i| Run::generate(7, i)).collect()
    }

    #[test]
    fn rows_depend_only_on_seed_and_index() {
        assert_eq!(Run::generate(7, 42), Run::generate(7, 42));
        assert_ne!(Run::generate(7, 42), Run::generate(8, 42));
        assert_ne!(Run::generate(7, 42).input, Run::generate(7, 43).input);
    }

    #[test]
    fn proportions_follow_letta_evals_benchmark() {
        let runs = runs(20_000);
        let share = |pred: &dyn Fn(&Run) -> bool| {
            runs.iter().filter(|r| pred(r)).count() as f64 / runs.len() as f64 * 100.0
        };
        let near = |got: f64, want: u64| (got - want as f64).abs() < 1.5;
        assert!(near(share(&|r| r.list_content), LIST_CONTENT_PERCENT));
        assert!(near(
            share(&|r| r.assistant.is_empty()),
            NO_ASSISTANT_PERCENT
        ));
        assert!(near(
            share(&|r| r.ground_truth_is_regex),
            REGEX_GROUND_TRUTH_PERCENT
        ));
    }

    #[test]
    fn letta_trajectory_has_the_benchmark_shape() {
        for run in runs(500) {
            let trajectory = run.letta_trajectory();
            let turns = trajectory.as_array().unwrap();
            assert_eq!(turns.len(), 1);
            let kinds: Vec<&str> = turns[0]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["message_type"].as_str().unwrap())
                .collect();
            assert_eq!(
                &kinds[..4],
                [
                    "user_message",
                    "reasoning_message",
                    "tool_call_message",
                    "tool_return_message"
                ]
            );
            assert_eq!(kinds.len(), 4 + run.assistant.len());
            assert!(kinds[4..].iter().all(|k| *k == "assistant_message"));
        }
    }

    #[test]
    fn list_content_flattens_back_to_the_message() {
        let run = runs(500)
            .into_iter()
            .find(|r| r.list_content && !r.assistant.is_empty())
            .unwrap();
        let trajectory = run.letta_trajectory();
        let parts = trajectory[0][4]["content"].as_array().unwrap();
        let flat: Vec<&str> = parts.iter().map(|p| p["text"].as_str().unwrap()).collect();
        assert_eq!(flat.join(" "), run.assistant[0]);
    }

    #[test]
    fn replies_meet_their_expectations_exactly_when_correct() {
        let runs = runs(2_000);
        for run in &runs {
            let Some(reply) = run.assistant.first() else {
                continue;
            };
            let matches = fancy_regex::Regex::new(&run.output_matches)
                .unwrap()
                .is_match(reply)
                .unwrap();
            let contains = run
                .output_contains
                .iter()
                .all(|v| reply.to_lowercase().contains(&v.to_lowercase()));
            assert_eq!(matches, run.correct, "{run:?}");
            if run.correct {
                assert!(contains, "{run:?}");
            }
        }
        let correct = runs.iter().filter(|r| r.correct).count();
        assert!((1_750..1_950).contains(&correct), "{correct} correct");
    }

    #[test]
    fn evaldeck_trace_mirrors_the_run() {
        for run in runs(500) {
            let trace = run.evaldeck_trace();
            let steps = trace["steps"].as_array().unwrap();
            let tools: Vec<&str> = steps
                .iter()
                .filter(|s| s["type"] == "tool_call")
                .map(|s| s["tool_name"].as_str().unwrap())
                .collect();
            assert_eq!(tools[0], run.tool);
            assert_eq!(tools.len(), 1 + run.assistant.len());
            assert_eq!(
                trace["output"].as_str().map(str::to_string),
                (!run.assistant.is_empty()).then(|| run.assistant.join("\n"))
            );
            assert!((4..=7).contains(&steps.len()));
        }
    }
}
