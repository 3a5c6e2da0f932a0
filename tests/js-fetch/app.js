// A JavaScript grader pack whose grader `get` fetches its submission, a URL, with the standard
// `fetch`, and grades on the reply: the pack gavel's tests run to show that a JavaScript pack
// reaches a granted host through wasi:http and is refused an ungranted one.
//
// componentize-js runs an export that returns a promise until the promise settles, so the
// grader can await.

async function get(url) {
  try {
    const reply = await fetch(url);
    return { score: 1, status: "pass", rationale: `${reply.status} ${await reply.text()}` };
  } catch (error) {
    return { score: 0, status: "fail", rationale: `${error.name}: ${error.message}` };
  }
}

export const pack = {
  describe() {
    return {
      name: "fetch",
      version: "0.1.0",
      functions: [
        { name: "get", kind: "grader", description: "Fetches the submission (a URL).", needsGroundTruth: false },
      ],
    };
  },
  checkConfig(name, config) {
    if (name !== "get") throw `no function named \`${name}\``;
  },
  grade(name, sample, trajectory, submission, config) {
    return get(submission);
  },
  extract(name, sample, trajectory, config) {
    throw `no extractor named \`${name}\``;
  },
};
