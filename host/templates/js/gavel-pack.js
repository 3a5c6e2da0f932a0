// Plain JavaScript functions as a gavel grader pack.
//
// This module is the glue between your functions and the WIT interface
// `gavel:grader/pack@0.1.0` (wit/grader.wit). Copy it next to your app.js unchanged; app.js
// calls `definePack` and exports the result as `pack`, the export componentize-js binds to
// the WIT interface of that name.
//
// What your functions receive are the WIT records as componentize-js passes them: objects
// with camelCase fields, variants as `{ tag, val }`, enums as strings, `option<T>` as the value
// or `undefined`, and `u64`/`s64` as BigInt. The helpers below read them the way gavel's
// built-in extractors do.

/** Throw it to fail the call with a message: the grade becomes `error` with the reason
 * `guest returned error: <message>`. */
export class GradeError extends Error {}

// ---------------------------------------------------------------------------------------------
// Grades

const STATUSES = ["pass", "fail", "error", "skip"];

/**
 * A grade with `score` in [0, 1]. `status` is "pass", "fail", "error" or "skip"; without it
 * gavel derives it (pass at 1.0, fail below). `metadata` is an object; `expected` and `actual`
 * are any JSON values (undefined leaves them out).
 */
export function scored(score, rationale, { status, metadata, expected, actual } = {}) {
  if (status !== undefined && !STATUSES.includes(status)) {
    throw new GradeError(`unknown status ${JSON.stringify(status)}`);
  }
  return {
    score: Number(score),
    status,
    rationale: String(rationale),
    metadata: metadata === undefined ? undefined : toJson(metadata),
    expected: expected === undefined ? undefined : toJson(expected),
    actual: actual === undefined ? undefined : toJson(actual),
  };
}

export const passed = (rationale, extra = {}) => scored(1, rationale, { ...extra, status: "pass" });
export const failed = (rationale, extra = {}) => scored(0, rationale, { ...extra, status: "fail" });
export const skipped = (rationale, extra = {}) => scored(0, rationale, { ...extra, status: "skip" });

/** JSON text of a value that may hold BigInts (token counts, ids), which JSON.stringify
 * refuses. */
export function toJson(value) {
  return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? Number(v) : v));
}

// ---------------------------------------------------------------------------------------------
// Reading a sample and its trajectory

/** A message's text: its parts joined by a space, as gavel flattens content parts. */
export function text(content) {
  return content.tag === "text" ? content.val : content.val.join(" ");
}

/** Every event of the run, across turns, in order: `{ tag, val }`. */
export function* events(trajectory) {
  for (const turn of trajectory.turns) yield* turn;
}

/** The assistant messages, flattened, in order. */
export function assistantTexts(trajectory) {
  return [...events(trajectory)].filter((e) => e.tag === "assistant").map((e) => text(e.val));
}

/** The built-in extractor `last_assistant`: the last assistant message, or "". */
export function lastAssistant(trajectory) {
  return assistantTexts(trajectory).at(-1) ?? "";
}

/** The recorded final output, else the last assistant message, else undefined (evaldeck's
 * `trace.output`). */
export function finalOutput(trajectory) {
  return trajectory.output ?? assistantTexts(trajectory).at(-1);
}

/** The tool calls in order (`{ id, name, arguments, failed }`, `arguments` the recorded JSON
 * text), only those of the tool `name` when given. */
export function toolCalls(trajectory, name) {
  return [...events(trajectory)]
    .filter((e) => e.tag === "tool-call" && (name === undefined || e.val.name === name))
    .map((e) => e.val);
}

/** The tool returns in order: `{ callId, content, status: "success" | "error" }`. */
export function toolReturns(trajectory) {
  return [...events(trajectory)].filter((e) => e.tag === "tool-return").map((e) => e.val);
}

/** evaldeck's `total_tokens` as a Number: the model calls' totals, or the run's usage when no
 * call records any. */
export function totalTokens(trajectory) {
  let used = 0n;
  for (const e of events(trajectory)) {
    if (e.tag === "llm-call" && e.val.tokens !== undefined) used += e.val.tokens.totalTokens;
  }
  if (used === 0n && trajectory.usage !== undefined) used = trajectory.usage.totalTokens;
  return Number(used);
}

/** The ground truth when it is one text; undefined when missing or given per turn. */
export function groundTruth(sample) {
  return sample.groundTruth?.tag === "one" ? sample.groundTruth.val : undefined;
}

/** The row's id: a Number or a string. */
export function sampleId(sample) {
  return sample.id.tag === "int" ? Number(sample.id.val) : sample.id.val;
}

/** The evaldeck `expected:` block as an object ({} when the row has none). */
export function expectedBlock(sample) {
  return sample.expected === undefined ? {} : JSON.parse(sample.expected);
}

/** The row's `metadata` as an object. */
export function metadata(sample) {
  return JSON.parse(sample.metadata);
}

// ---------------------------------------------------------------------------------------------
// Registration

function noConfig(config) {
  const keys = Object.keys(config);
  if (keys.length > 0) throw new Error(`takes no config, got: ${keys.sort().join(", ")}`);
  return undefined;
}

function parseConfig(fn, text) {
  const value = JSON.parse(text);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error("the config must be a mapping");
  }
  return (fn.config ?? noConfig)(value);
}

// componentize-js turns a thrown string into the `err` of a `result`; anything else it cannot
// lower aborts the instance and loses the message, so every failure leaves as a string.
function guarded(call) {
  try {
    return call();
  } catch (error) {
    if (error instanceof GradeError) throw error.message;
    if (typeof error === "string") throw error;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    // The stack goes to stderr, which gavel keeps in the grade's metadata.
    console.error(`${message}\n${error?.stack ?? ""}`);
    throw message;
  }
}

/**
 * The `pack` export for `gavel:grader/pack`:
 *
 *     export const pack = definePack({
 *       name: "my-pack",
 *       version: "0.1.0",
 *       graders: {
 *         exact: {
 *           description: "The submission equals the ground truth.",
 *           needsGroundTruth: true,
 *           grade: (sample, trajectory, submission, config) => ...,
 *         },
 *       },
 *       extractors: {
 *         answer: { description: "...", extract: (sample, trajectory, config) => "..." },
 *       },
 *     });
 *
 * A grader returns a grade (build it with `passed`, `failed`, `scored`, `skipped`); an
 * extractor returns a string, or undefined when there is nothing to extract. The key is the
 * name suites use. `config` is an optional function from the suite's `config:` (an object) to
 * what your function receives; it throws to refuse the config, and gavel stops before grading
 * with its message. Without it, the function takes no config.
 *
 * An exception thrown by your function becomes an `error` grade for that sample (other samples
 * are graded): `guest returned error: TypeError: ...`, with the stack at the end of the
 * grade's `metadata.sandbox.stderr`.
 */
export function definePack({ name, version, graders = {}, extractors = {} }) {
  const functions = new Map();
  for (const [kind, table] of [["grader", graders], ["extractor", extractors]]) {
    for (const [fnName, fn] of Object.entries(table)) {
      if (functions.has(fnName)) throw new Error(`\`${fnName}\` is registered twice`);
      const entry = kind === "grader" ? fn.grade : fn.extract;
      if (typeof entry !== "function") {
        throw new Error(`\`${fnName}\` needs a ${kind === "grader" ? "grade" : "extract"} function`);
      }
      functions.set(fnName, { ...fn, kind });
    }
  }
  const lookup = (fnName, kind) => {
    const fn = functions.get(fnName);
    if (fn === undefined || fn.kind !== kind) {
      const names = [...functions].filter(([, f]) => f.kind === kind).map(([n]) => n);
      throw `no ${kind} named \`${fnName}\`; this pack's ${kind}s: ${names.join(", ") || "none"}`;
    }
    return fn;
  };
  return {
    describe() {
      return {
        name,
        version,
        functions: [...functions].map(([fnName, fn]) => ({
          name: fnName,
          kind: fn.kind,
          description: fn.description ?? "",
          needsGroundTruth: Boolean(fn.needsGroundTruth),
        })),
      };
    },
    checkConfig(fnName, config) {
      const fn = functions.get(fnName);
      if (fn === undefined) throw `no function named \`${fnName}\``;
      try {
        parseConfig(fn, config);
      } catch (error) {
        throw error?.message ?? String(error);
      }
    },
    grade(fnName, sample, trajectory, submission, config) {
      const fn = lookup(fnName, "grader");
      return guarded(() => fn.grade(sample, trajectory, submission, parseConfig(fn, config)));
    },
    extract(fnName, sample, trajectory, config) {
      const fn = lookup(fnName, "extractor");
      return guarded(() => fn.extract(sample, trajectory, parseConfig(fn, config)) ?? undefined);
    },
  };
}
