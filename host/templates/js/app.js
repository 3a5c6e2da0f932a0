// The {{name}} pack: a grader and an extractor, each a plain function listed in `definePack`.
//
// `./build.sh` tests them (app.test.js) and builds build/{{ident}}.wasm; `gavel run suite.yaml`
// grades dataset.jsonl with them. README.md walks through adding a function.

import { GradeError, assistantTexts, definePack, failed, groundTruth, passed } from "./gavel-pack.js";

// ---------------------------------------------------------------------------------------------
// contains_answer: the ground truth appears in the submission

/** The suite's `config:` for `contains_answer`: `case_sensitive` (default false). */
export function containsAnswerConfig(config) {
  const unknown = Object.keys(config).filter((key) => key !== "case_sensitive");
  if (unknown.length > 0) throw new Error(`unknown key(s) ${unknown.join(", ")}; expected case_sensitive`);
  const caseSensitive = config.case_sensitive ?? false;
  if (typeof caseSensitive !== "boolean") {
    throw new Error(`config.case_sensitive: ${JSON.stringify(caseSensitive)} is not true or false`);
  }
  return caseSensitive;
}

export function containsAnswer(sample, trajectory, submission, caseSensitive) {
  const truth = groundTruth(sample);
  if (truth === undefined) throw new GradeError("the sample has no ground_truth");
  const answer = truth.trim();
  const text = submission.trim();
  const found = caseSensitive ? text.includes(answer) : text.toLowerCase().includes(answer.toLowerCase());
  if (found) return passed(`found '${answer}'`);
  return failed(`'${answer}' is not in the answer`, { expected: answer, actual: text });
}

// ---------------------------------------------------------------------------------------------
// final_answer: the text after the last marker

/** The suite's `extractor_config:` for `final_answer`: `marker` (default `FINAL ANSWER:`). */
export function finalAnswerConfig(config) {
  const unknown = Object.keys(config).filter((key) => key !== "marker");
  if (unknown.length > 0) throw new Error(`unknown key(s) ${unknown.join(", ")}; expected marker`);
  const marker = config.marker ?? "FINAL ANSWER:";
  if (typeof marker !== "string" || marker === "") throw new Error("config.marker: must be a non-empty string");
  return marker;
}

export function finalAnswer(sample, trajectory, marker) {
  // Messages from the last to the first; in a message, the last marker, up to the line's end.
  for (const message of assistantTexts(trajectory).reverse()) {
    const at = message.lastIndexOf(marker);
    if (at >= 0) return message.slice(at + marker.length).split("\n", 1)[0].trim();
  }
  return undefined;
}

// What componentize-js exports as `gavel:grader/pack`.
export const pack = definePack({
  name: "{{name}}",
  version: "0.1.0",
  graders: {
    contains_answer: {
      description: "The submission contains the ground truth (case-insensitive unless configured).",
      needsGroundTruth: true,
      config: containsAnswerConfig,
      grade: containsAnswer,
    },
  },
  extractors: {
    final_answer: {
      description: "The text after the last 'FINAL ANSWER:' in the agent's messages.",
      config: finalAnswerConfig,
      extract: finalAnswer,
    },
  },
});
