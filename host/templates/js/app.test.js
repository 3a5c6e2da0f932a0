// The pack's functions tested under Node: the WIT records are plain objects, so no WebAssembly
// is involved. build.sh runs these (`node --test`) before it builds the component, and stops
// when one fails.

import assert from "node:assert/strict";
import { test } from "node:test";

import { pack } from "./app.js";

const run = (...messages) => ({
  turns: [messages.map((text) => ({ tag: "assistant", val: { tag: "text", val: text } }))],
  output: undefined,
  status: "success",
  input: undefined,
  durationMs: undefined,
  usage: undefined,
});
const sample = (truth) => ({
  id: { tag: "str", val: "s" },
  groundTruth: truth === undefined ? undefined : { tag: "one", val: truth },
  rubricVars: "{}",
  metadata: "{}",
  referenceTools: [],
  tags: [],
});

test("contains_answer passes when the answer is in the submission", () => {
  const grade = pack.grade("contains_answer", sample("paris"), run(), "  It is Paris. ", "{}");
  assert.equal(grade.status, "pass");
});

test("contains_answer fails with what it wanted and what it got", () => {
  const grade = pack.grade("contains_answer", sample("paris"), run(), "It is Paris.", '{"case_sensitive": true}');
  assert.equal(grade.status, "fail");
  assert.equal(grade.expected, '"paris"');
  assert.equal(grade.actual, '"It is Paris."');
});

test("a sample without ground truth is an error", () => {
  assert.throws(() => pack.grade("contains_answer", sample(), run(), "Paris", "{}"), /no ground_truth/);
});

test("final_answer takes the line after the last marker", () => {
  const trajectory = run("FINAL ANSWER: no", "Done.\nFINAL ANSWER:  42 \nThanks");
  assert.equal(pack.extract("final_answer", sample(), trajectory, "{}"), "42");
  assert.equal(pack.extract("final_answer", sample(), run("hello"), "{}"), undefined);
});

test("configs are checked", () => {
  assert.throws(() => pack.checkConfig("contains_answer", '{"case_sensitive": "yes"}'), /case_sensitive/);
  assert.throws(() => pack.checkConfig("final_answer", '{"marker": ""}'), /marker/);
  pack.checkConfig("final_answer", '{"marker": "ANSWER:"}');
});
