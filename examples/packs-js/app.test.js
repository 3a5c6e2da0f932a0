// The pack's functions tested under Node: the WIT records are plain objects, so no
// WebAssembly is involved. build.sh runs these (`node --test`) before building the component.

import assert from "node:assert/strict";
import { test } from "node:test";

import { lastJsonObject, pack } from "./app.js";

const run = (...events) => ({
  turns: [events],
  output: undefined,
  status: "success",
  input: undefined,
  durationMs: undefined,
  usage: undefined,
});
const say = (text) => ({ tag: "assistant", val: { tag: "text", val: text } });
const llm = (total) => ({
  tag: "llm-call",
  val: { model: "m", tokens: { promptTokens: 0n, completionTokens: 0n, totalTokens: BigInt(total) } },
});
const call = (name, args) => ({ tag: "tool-call", val: { id: "c1", name, arguments: args, failed: false } });
const sample = { id: { tag: "int", val: 1n }, rubricVars: "{}", metadata: "{}", referenceTools: [], tags: [] };

test("the last JSON object is the outermost one ending last", () => {
  assert.deepEqual(lastJsonObject('first {"a": 1} then {"b": {"c": 2}} done'), { b: { c: 2 } });
  assert.deepEqual(lastJsonObject('{"s": "a } in a string"} and {prose}'), { s: "a } in a string" });
  assert.equal(lastJsonObject("no json {here"), undefined);
});

test("token budget counts BigInt token totals", () => {
  const grade = pack.grade("token_budget", sample, run(llm(600), llm(500)), "", '{"max_tokens": 1000}');
  assert.equal(grade.status, "fail");
  assert.equal(grade.actual, "1100");
  assert.throws(() => pack.checkConfig("token_budget", '{"max_tokens": "lots"}'), /max_tokens/);
});

test("an exception in a grader leaves as a string naming it", () => {
  assert.throws(
    () => pack.grade("no_null_args", sample, run(call("search", "{oops")), "", "{}"),
    (error) => typeof error === "string" && error.startsWith("SyntaxError: "),
  );
});
