// An example gavel pack in JavaScript: graders and extractors over recorded agent runs.
//
// Build it with `./build.sh` (it writes target/pack.wasm); `gavel run suite.yaml` uses it.

import {
  assistantTexts,
  definePack,
  failed,
  finalOutput,
  passed,
  toolCalls,
  totalTokens,
} from "./gavel-pack.js";

// ---------------------------------------------------------------------------------------------
// booking_format: evaldeck's custom-grader example

const CONFIRMATION = "Confirmation: [A-Z]{2}\\d{6}";

function bookingConfig(config) {
  const unknown = Object.keys(config).filter((k) => k !== "pattern");
  if (unknown.length > 0) throw new Error(`unknown key(s) ${unknown.join(", ")}; expected pattern`);
  const pattern = config.pattern ?? CONFIRMATION;
  if (typeof pattern !== "string") throw new Error("config.pattern: must be a string");
  try {
    return new RegExp(pattern);
  } catch (error) {
    throw new Error(`config.pattern: ${error.message}`);
  }
}

function bookingFormat(sample, trajectory, submission, pattern) {
  const output = finalOutput(trajectory) ?? "";
  if (pattern.test(output)) return passed("Booking confirmation format is valid");
  return failed("Booking confirmation format is invalid", {
    expected: pattern.source === CONFIRMATION ? "Confirmation: XX000000" : pattern.source,
    actual: output.slice(0, 100),
  });
}

// ---------------------------------------------------------------------------------------------
// token_budget: evaldeck's TokenBudgetGrader

function budgetConfig(config) {
  const unknown = Object.keys(config).filter((k) => k !== "max_tokens");
  if (unknown.length > 0) throw new Error(`unknown key(s) ${unknown.join(", ")}; expected max_tokens`);
  const max = config.max_tokens;
  if (max === undefined) throw new Error("config.max_tokens: required");
  if (!Number.isInteger(max) || max < 0) {
    throw new Error(`config.max_tokens: ${JSON.stringify(max)} is not a whole number of tokens`);
  }
  return max;
}

function tokenBudget(sample, trajectory, submission, max) {
  const used = totalTokens(trajectory);
  if (used <= max) return passed(`Used ${used} tokens (budget: ${max})`);
  return failed("Exceeded token budget", { expected: `<= ${max}`, actual: used });
}

// ---------------------------------------------------------------------------------------------
// last_json: the last JSON object an assistant message holds

// The end of the balanced `{...}` starting at `start`, strings and escapes respected; -1 when
// it does not close.
function objectEnd(text, start) {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
  }
  return -1;
}

/** The JSON object in `text` that ends last (the outermost one there), or undefined. */
export function lastJsonObject(text) {
  let best;
  // From the left, so that of the objects ending at the same brace the outermost comes first.
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    const end = objectEnd(text, start);
    if (end < 0 || (best !== undefined && end <= best.end)) continue;
    try {
      const value = JSON.parse(text.slice(start, end));
      if (value !== null && typeof value === "object" && !Array.isArray(value)) best = { end, value };
    } catch {
      // Braces in prose, not JSON.
    }
  }
  return best?.value;
}

function lastJson(sample, trajectory) {
  for (const message of assistantTexts(trajectory).reverse()) {
    const value = lastJsonObject(message);
    if (value !== undefined) return JSON.stringify(value);
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// no_null_args: deliberately buggy

function noNullArgs(sample, trajectory) {
  const calls = toolCalls(trajectory);
  for (const call of calls) {
    // The bug: recorded arguments are not always valid JSON, and JSON.parse throws on them.
    const args = JSON.parse(call.arguments);
    const empty = Object.keys(args).filter((key) => args[key] === null);
    if (empty.length > 0) {
      return failed(`\`${call.name}\` was called with null ${empty.join(", ")}`, { actual: args });
    }
  }
  return passed(`${calls.length} tool call(s), no null argument`);
}

export const pack = definePack({
  name: "agent-checks-js",
  version: "0.1.0",
  graders: {
    booking_format: {
      description:
        "The final output holds a booking confirmation (`Confirmation: XX000000`, or config `pattern`).",
      config: bookingConfig,
      grade: bookingFormat,
    },
    token_budget: {
      description: "The run used at most config `max_tokens` tokens (model calls, else run usage).",
      config: budgetConfig,
      grade: tokenBudget,
    },
    no_null_args: {
      description:
        "No tool call passes a null argument. Deliberately buggy: malformed recorded arguments make it throw, to show what an exception in a grader becomes.",
      grade: noNullArgs,
    },
  },
  extractors: {
    last_json: {
      description:
        "The last JSON object in the assistant messages (the outermost one, compact); nothing when none parses.",
      extract: lastJson,
    },
  },
});
