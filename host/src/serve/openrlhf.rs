//! OpenRLHF's remote reward protocol: `{"query": [...], "prompts": [...], "labels": [...]}` in
//! (what `--remote_rm_url` posts: each query is the prompt and the response as one decoded
//! text), `{"rewards": [...], "scores": [...], "extra_logs": {...}}` out.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::grading::Scored;

/// The body OpenRLHF posts.
#[derive(Deserialize)]
pub struct RewardRequest {
    query: Vec<String>,
    #[serde(default)]
    prompts: Option<Vec<String>>,
    #[serde(default)]
    labels: Option<Vec<Value>>,
}

/// Why a body is not OpenRLHF's.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(
        "the body is not OpenRLHF's reward request ({0}): send {{\"query\": [text], \
         \"prompts\": [text], \"labels\": [label]}}"
    )]
    Shape(serde_json::Error),
    #[error("`{field}` has {got} entries for {want} queries: send one per query")]
    Length {
        field: &'static str,
        got: usize,
        want: usize,
    },
}

impl RewardRequest {
    pub fn parse(body: &[u8]) -> Result<RewardRequest, RequestError> {
        let request: RewardRequest = serde_json::from_slice(body).map_err(RequestError::Shape)?;
        let want = request.query.len();
        let lengths = [
            ("prompts", request.prompts.as_ref().map(Vec::len)),
            ("labels", request.labels.as_ref().map(Vec::len)),
        ];
        for (field, got) in lengths {
            if let Some(got) = got.filter(|&got| got != want) {
                return Err(RequestError::Length { field, got, want });
            }
        }
        Ok(request)
    }

    /// One row per query, as JSON Lines: the prompt is the row's `input`, the label its
    /// `ground_truth` (a label that is not text as its JSON), and the response (the query
    /// after its prompt) the assistant's message of an openai trajectory.
    pub fn rows(&self) -> Vec<u8> {
        let mut lines = Vec::new();
        for (i, query) in self.query.iter().enumerate() {
            let prompt = (self.prompts.as_ref())
                .map(|p| p[i].as_str())
                .unwrap_or_default();
            let response = query.strip_prefix(prompt).unwrap_or(query);
            let mut row = Map::new();
            row.insert("sample_id".into(), json!(i));
            row.insert("input".into(), json!(prompt));
            match self.labels.as_ref().map(|l| &l[i]) {
                None | Some(Value::Null) => {}
                Some(Value::String(label)) => {
                    row.insert("ground_truth".into(), json!(label));
                }
                Some(label) => {
                    row.insert("ground_truth".into(), json!(label.to_string()));
                }
            }
            row.insert(
                "trajectory".into(),
                json!([
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": response},
                ]),
            );
            // A map of JSON values always serializes.
            let _ = serde_json::to_writer(&mut lines, &row);
            lines.push(b'\n');
        }
        lines
    }
}

/// The answer: each row's reward (0 for a row with none, which `gavel_error` marks 1), as
/// `rewards` and `scores`, and each grader's scores in `extra_logs`.
pub fn answer(scored: &[Scored]) -> Value {
    let rewards: Vec<f64> = scored.iter().map(|s| s.reward.unwrap_or(0.0)).collect();
    let mut logs = Map::new();
    if let Some(first) = scored.first() {
        for (index, (key, _)) in first.grades.iter().enumerate() {
            let scores: Vec<f64> = (scored.iter())
                .map(|s| s.grades.get(index).map_or(0.0, |(_, score)| *score))
                .collect();
            logs.insert(key.to_string(), json!(scores));
        }
    }
    let errors: Vec<f64> = (scored.iter())
        .map(|s| if s.reward.is_some() { 0.0 } else { 1.0 })
        .collect();
    logs.insert("gavel_error".into(), json!(errors));
    json!({"rewards": rewards, "scores": rewards, "extra_logs": logs})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_query_is_a_row_with_its_response_after_the_prompt() {
        let body = br#"{"query": ["Q: 2+2? A: 4", "other"], "prompts": ["Q: 2+2? ", "P"], "labels": ["4", {"x": 1}]}"#;
        let request = RewardRequest::parse(body).unwrap();
        let rows = String::from_utf8(request.rows()).unwrap();
        let rows: Vec<Value> = rows
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0]["ground_truth"], "4");
        assert_eq!(rows[0]["trajectory"][1]["content"], "A: 4");
        assert_eq!(rows[1]["ground_truth"], "{\"x\":1}");
        assert_eq!(rows[1]["trajectory"][1]["content"], "other");
    }

    #[test]
    fn lists_of_other_lengths_are_refused() {
        let body = br#"{"query": ["a", "b"], "prompts": ["a"]}"#;
        let error = RewardRequest::parse(body).err().unwrap().to_string();
        assert!(
            error.contains("`prompts` has 1 entries for 2 queries"),
            "{error}"
        );
    }
}
