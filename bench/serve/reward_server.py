"""The peer of `gavel serve` in bench/serve.sh: a FastAPI reward server in the shape of OpenRLHF's
remote reward example (`POST /get_reward` with `{"query", "prompts", "labels"}`, answering
`{"rewards", "scores", "extra_logs"}`), grading each query natively in Python with the function
that GRADER (string_check, multi or python) names: the same logic as the gavel suite of that name.

    uvicorn reward_server:app --app-dir bench/serve --port PORT
"""

import os

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from rapidfuzz import fuzz

from grader import grade


def string_check(response, label):
    # OpenAI's string_check, operation ilike: the reference in the input, ignoring case.
    return 1.0 if label.lower() in response.lower() else 0.0


def multi(response, label):
    # OpenAI's multi: 0.5 * string_check(ilike) + 0.5 * text_similarity(fuzzy_match).
    return 0.5 * string_check(response, label) + 0.5 * fuzz.ratio(response, label) / 100


def python(response, label):
    # The suite's Python grader itself, called as gavel calls it.
    return float(grade({"output_text": response}, {"ground_truth": label}))


GRADERS = {"string_check": string_check, "multi": multi, "python": python}
score = GRADERS[os.environ.get("GRADER", "string_check")]
app = FastAPI()


@app.post("/get_reward")
async def get_reward(request: Request):
    data = await request.json()
    queries = data.get("query")
    prompts = data.get("prompts") or [""] * len(queries)
    labels = data.get("labels") or [""] * len(queries)
    rewards = [score(q[len(p):], str(l)) for q, p, l in zip(queries, prompts, labels)]
    return JSONResponse({"rewards": rewards, "scores": rewards, "extra_logs": {"dummy_scores": rewards}})
