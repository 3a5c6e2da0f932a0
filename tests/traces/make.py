"""Writes the recorded runs gavel's trajectory tests read (host/tests/data/traces/), with the
real SDKs, openai 3.57.0 and anthropic 2.14.0 (pinned with the rest in the venv of its own that
tests/traces/run.sh makes, runs this in and compares what it writes with the committed files): the clients call a stand-in API
on a loopback port, parse its replies into their own types, and the files are those objects as
the SDKs dump them (`model_dump(mode="json")`). The stand-in's replies carry fixed ids and times, so a second run
writes the same bytes.

One run of a weather agent (asked for the weather in Paris, it calls `get_weather` and answers)
is recorded in each format, plus single responses with reasoning and built-in tool calls. The
OpenTelemetry recording is the chat completions run traced by openinference-instrumentation-openai
0.1.66 with opentelemetry-sdk 1.45.2, encoded by the SDK's OTLP encoder and written as the
collector's file exporter writes JSON, the evaldeck case it runs named in the spans' metadata
(OpenInference's `using_metadata`); the research response names its case in the metadata the
Responses API gives back. The GenAI recording is the same run, then the run asked
about Oslo, traced by opentelemetry-instrumentation-openai-v2 2.4b0 (opentelemetry-util-genai
1.1b0, the latest conventions, messages on the spans), its spans written as a collector file
whose lines mix the two traces.

The Inspect logs are the same run evaluated by inspect_ai 0.3.285 with its mock model
(`mockllm/model`, given the replies above as custom outputs), two epochs of one sample whose
metadata names its evaldeck case, written
as Inspect writes them: the `.eval` zip (zstd members) and the `.json` log. What differs every
run (ids, times, the working folder) becomes fixed values, and the zip's members are written
again in order with a fixed date.

    python tests/traces/make.py OUT_DIR
"""

import http.server
import json
import sys
import threading
from pathlib import Path

import base64
import os
import re
import tempfile
import zipfile

import anthropic
import openai
from google.protobuf.json_format import MessageToDict
from openinference.instrumentation import using_metadata
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as GenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool
import zipfile_zstd  # noqa: F401 (zstd members in the stdlib's zipfile, as Inspect reads them)

QUESTION = "What is the weather in Paris?"
ARGS = '{"city": "Paris"}'
RESULT = "18C, sunny"
ANSWER = "Paris: 18C and sunny."
SYSTEM = "You are a weather bot."

USAGE_1 = {"input_tokens": 50, "output_tokens": 12, "total_tokens": 62,
           "input_tokens_details": {"cached_tokens": 0},
           "output_tokens_details": {"reasoning_tokens": 0}}
USAGE_2 = {"input_tokens": 80, "output_tokens": 9, "total_tokens": 89,
           "input_tokens_details": {"cached_tokens": 0},
           "output_tokens_details": {"reasoning_tokens": 0}}


def response(rid, output, usage, status="completed", instructions=SYSTEM):
    return {
        "id": rid, "object": "response", "created_at": 1764000000, "status": status,
        "error": None, "incomplete_details": None, "instructions": instructions,
        "model": "gpt-4.1-2025-04-14", "output": output, "parallel_tool_calls": True,
        "temperature": 1.0, "tool_choice": "auto", "tools": [], "top_p": 1.0,
        "usage": usage, "metadata": {},
    }


CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
        "arguments": ARGS, "status": "completed"}
MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}
RESEARCH = [
    {"type": "reasoning", "id": "rs_1", "summary": [
        {"type": "summary_text", "text": "Search the web first."},
        {"type": "summary_text", "text": "Then read the files."}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "Paris weather today"}},
    {"type": "file_search_call", "id": "fs_1", "status": "completed",
     "queries": ["paris climate"],
     "results": [{"file_id": "file_1", "filename": "climate.md", "score": 0.9,
                  "text": "Paris is mild.", "attributes": {}}]},
    {"type": "code_interpreter_call", "id": "ci_1", "status": "completed",
     "code": "print(18 * 9 / 5 + 32)", "container_id": "cntr_1",
     "outputs": [{"type": "logs", "logs": "64.4"}]},
    {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "18C (64.4F) and sunny.", "annotations": []}]},
]
RESEARCH_USAGE = {"input_tokens": 400, "output_tokens": 120, "total_tokens": 520,
                  "input_tokens_details": {"cached_tokens": 100},
                  "output_tokens_details": {"reasoning_tokens": 64}}

ANTHROPIC_USAGE_1 = {"input_tokens": 50, "output_tokens": 12,
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
ANTHROPIC_USAGE_2 = {"input_tokens": 80, "output_tokens": 9,
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def message(mid, content, stop_reason, usage):
    return {"id": mid, "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": content,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
            "input": {"city": "Paris"}}
THINKING = [
    {"type": "thinking", "thinking": "The user wants Paris; call the tool.",
     "signature": "sig-1"},
    {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
]

CHAT_REPLIES = [
    {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764000000,
     "model": "gpt-4.1-2025-04-14",
     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
         "role": "assistant", "content": None, "tool_calls": [
             {"id": "call_1", "type": "function",
              "function": {"name": "get_weather", "arguments": ARGS}}]}}],
     "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}},
    {"id": "chatcmpl-2", "object": "chat.completion", "created": 1764000001,
     "model": "gpt-4.1-2025-04-14",
     "choices": [{"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": ANSWER}}],
     "usage": {"prompt_tokens": 80, "completion_tokens": 9, "total_tokens": 89}},
]

# The same run asked about Oslo.
OSLO_REPLIES = json.loads(json.dumps(CHAT_REPLIES)
                          .replace("chatcmpl-1", "chatcmpl-3").replace("chatcmpl-2", "chatcmpl-4")
                          .replace("Paris", "Oslo").replace("18C and sunny", "4C with snow"))

# What the stand-in answers, in order, per endpoint.
REPLIES = {
    "/v1/chat/completions": CHAT_REPLIES + CHAT_REPLIES + OSLO_REPLIES,
    "/v1/responses": [
        response("resp_1", [CALL], USAGE_1),
        response("resp_2", [MESSAGE], USAGE_2),
        response("resp_3", RESEARCH, RESEARCH_USAGE, instructions=None),
    ],
    "/v1/messages": [
        message("msg_a1", [TOOL_USE], "tool_use", ANTHROPIC_USAGE_1),
        message("msg_a2", [{"type": "text", "text": ANSWER}], "end_turn", ANTHROPIC_USAGE_2),
        message("msg_a3", THINKING + [{"type": "text", "text": "Let me look."}, TOOL_USE],
                "tool_use", ANTHROPIC_USAGE_1),
    ],
}


class StandIn(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        reply = REPLIES[self.path].pop(0)
        if self.path == "/v1/responses":
            # The Responses API gives back the request's metadata.
            reply = dict(reply, metadata=request.get("metadata") or {})
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def dump(model):
    return model.model_dump(mode="json")


def otlp_json(spans):
    """The spans as the collector's file exporter writes a line: OTLP JSON with hex ids. Ids,
    times and the SDK's instance id, which differ every run, become fixed ones in order."""
    export = MessageToDict(encode_spans(spans))
    ids = {}

    def fixed(value, width):
        raw = base64.b64decode(value).hex()
        return ids.setdefault(raw, format(len(ids) + 1, f"0{width}x"))

    spans = [span for resource in export["resourceSpans"]
             for scope in resource["scopeSpans"] for span in scope["spans"]]
    for rank, span in enumerate(sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))):
        span["startTimeUnixNano"] = str(1764000000000000000 + rank * 1000000)
        span["endTimeUnixNano"] = str(1764000000000000000 + rank * 1000000 + 500000)
    for span in spans:
        span["traceId"] = fixed(span["traceId"], 32)
        span["spanId"] = fixed(span["spanId"], 16)
        if "parentSpanId" in span:
            span["parentSpanId"] = fixed(span["parentSpanId"], 16)
    return export


def openinference_run(base):
    """The weather run through the chat completions API, traced by OpenInference's
    instrumentation of the openai client, under an agent span of the application's, the
    evaldeck case it runs named in the spans' metadata."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(api_key="test", base_url=base + "/v1", max_retries=0)
    tools = [{"type": "function", "function": {
        "name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    with using_metadata({"case_name": "weather"}), \
            provider.get_tracer("weather-agent").start_as_current_span("agent"):
        first = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": RESULT})
        client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
    OpenAIInstrumentor().uninstrument()
    return otlp_json(exporter.get_finished_spans())


@tool
def get_weather():
    async def execute(city: str):
        """Weather in a city.

        Args:
            city: The city.
        """
        return RESULT

    return execute


# Inspect's random ids (shortuuid, 22 characters) and ISO times.
SHORT_ID = re.compile(r'"[2-9A-HJ-NP-Za-km-z]{22}"')
ISO_TIME = re.compile(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d"')
# Times in seconds, which differ every run.
SECONDS = ("time", "working_start", "working_time", "total_time", "completed_time",
           "started_time", "retries_time")


def fixed_inspect(text, ids):
    """An Inspect JSON document with its ids, times and working folder made fixed."""
    text = SHORT_ID.sub(lambda m: ids.setdefault(m.group(0), f'"id{len(ids) + 1:020d}"'), text)
    text = ISO_TIME.sub('"2025-11-24T00:00:00+00:00"', text)
    text = text.replace(os.getcwd(), "/work")

    def walk(value):
        if isinstance(value, dict):
            # A time set by a state change: {"op", "path": "/output/time", "value"}.
            if str(value.get("path", "")).rsplit("/", 1)[-1] in SECONDS:
                value = dict(value, value=0.5)
            return {k: 0.5 if k in SECONDS and isinstance(v, (int, float)) else walk(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    value = walk(json.loads(text))
    return value


def inspect_run(out):
    """The weather run evaluated by Inspect with its mock model: two epochs of one sample."""
    outputs = []
    for _ in range(2):
        call = ModelOutput.for_tool_call(model="mockllm/model", tool_name="get_weather",
                                         tool_arguments={"city": "Paris"},
                                         tool_call_id="call_1", content="")
        call.usage = ModelUsage(input_tokens=50, output_tokens=12, total_tokens=62)
        answer = ModelOutput.from_content(model="mockllm/model", content=ANSWER)
        answer.usage = ModelUsage(input_tokens=80, output_tokens=9, total_tokens=89)
        outputs += [call, answer]
    task = Task(name="weather",
                dataset=[Sample(id="paris", input=QUESTION, target="18C",
                                metadata={"case_name": "weather"})],
                solver=[system_message(SYSTEM), use_tools(get_weather()), generate()],
                scorer=includes(), epochs=2)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        # Outside any git checkout, so that the log records no revision.
        os.chdir(work)
        try:
            [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=outputs),
                                 log_dir=work, display="none", max_samples=1,
                                 log_format="eval")
            ids = {}
            with zipfile.ZipFile(log.location) as written, \
                    zipfile.ZipFile(out / "inspect-weather.eval", "w") as fixed:
                for member in written.infolist():
                    value = fixed_inspect(written.read(member).decode(), ids)
                    info = zipfile.ZipInfo(member.filename, date_time=(2025, 11, 24, 0, 0, 0))
                    info.compress_type = member.compress_type
                    fixed.writestr(info, json.dumps(value, separators=(",", ":")))
            write_eval_log(read_eval_log(log.location), work + "/log.json", format="json")
            value = fixed_inspect(Path(work, "log.json").read_text(), ids)
            (out / "inspect-weather.json").write_text(json.dumps(value, indent=2) + "\n")
        finally:
            os.chdir(here)
    with zipfile.ZipFile(out / "inspect-weather.eval") as fixed:
        return json.loads(fixed.read("samples/paris_epoch_1.json"))


def genai_run(base):
    """The weather run through the chat completions API, traced by OpenTelemetry's own GenAI
    instrumentation of the openai client (messages on the spans, the latest conventions), twice
    (Paris, then Oslo), each under an agent span: two traces, as a collector file's lines
    hold them, a batch of spans of both per line."""
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    GenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(api_key="test", base_url=base + "/v1", max_retries=0)
    tools = [{"type": "function", "function": {
        "name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}]
    tracer = provider.get_tracer("weather-agent")
    for question, result in [(QUESTION, RESULT), ("What is the weather in Oslo?", "4C, snow")]:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        with tracer.start_as_current_span("agent"):
            first = client.chat.completions.create(model="gpt-4.1", messages=messages,
                                                   tools=tools)
            messages.append(first.choices[0].message.model_dump(exclude_none=True))
            messages.append({"role": "tool", "tool_call_id": "call_1", "content": result})
            client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
    GenAIInstrumentor().uninstrument()
    export = otlp_json(exporter.get_finished_spans())
    # A line per batch of two spans, one of each trace in turn, as a collector exporting both
    # runs at once writes them.
    [resource] = export["resourceSpans"]
    by_trace = {}
    for scope in resource["scopeSpans"]:
        for span in scope["spans"]:
            by_trace.setdefault(span["traceId"], []).append((scope["scope"], span))
    first, second = by_trace.values()
    mixed = [item for pair in zip(first, second) for item in pair]
    return [{"resourceSpans": [{"resource": resource["resource"], "scopeSpans": [
        {"scope": scope, "spans": [span]} for scope, span in mixed[i:i + 2]]}]}
        for i in range(0, len(mixed), 2)]


def first_trace(lines):
    """The lines of a collector file with the spans of its first trace only."""
    first = lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    kept = []
    for line in lines:
        [resource] = line["resourceSpans"]
        scopes = [scope for scope in resource["scopeSpans"]
                  if scope["spans"][0]["traceId"] == first]
        if scopes:
            kept.append({"resourceSpans": [dict(resource, scopeSpans=scopes)]})
    return kept


def main(out):
    server = http.server.HTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"

    oai = openai.OpenAI(api_key="test", base_url=base + "/v1", max_retries=0)
    tools = [{"type": "function", "name": "get_weather", "description": "Weather in a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    inputs = [{"role": "user", "content": QUESTION}]
    first = oai.responses.create(model="gpt-4.1", instructions=SYSTEM, input=inputs, tools=tools)
    call = first.output[0]
    returned = {"type": "function_call_output", "call_id": call.call_id, "output": RESULT}
    second = oai.responses.create(model="gpt-4.1", instructions=SYSTEM, tools=tools,
                                  input=inputs + [dump(call), returned])
    responses_run = ([{"role": "system", "content": SYSTEM}] + inputs
                     + [dump(item) for item in first.output] + [returned]
                     + [dump(item) for item in second.output])
    research = oai.responses.create(model="gpt-4.1", input="Weather in Paris, in F?",
                                    tools=[{"type": "web_search"}],
                                    metadata={"case_name": "fahrenheit"})

    ant = anthropic.Anthropic(api_key="test", base_url=base, max_retries=0)
    a_tools = [{"name": "get_weather", "description": "Weather in a city",
                "input_schema": {"type": "object",
                                 "properties": {"city": {"type": "string"}}}}]
    messages = [{"role": "user", "content": QUESTION}]
    a_first = ant.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM,
                                  messages=messages, tools=a_tools)
    messages += [
        {"role": "assistant", "content": [dump(block) for block in a_first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": TOOL_USE["id"],
                                      "content": RESULT}]},
    ]
    a_second = ant.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM,
                                   messages=messages, tools=a_tools)
    thinking = ant.messages.create(model="claude-sonnet-4-5", max_tokens=2048,
                                   messages=[{"role": "user", "content": QUESTION}],
                                   thinking={"type": "enabled", "budget_tokens": 1024},
                                   tools=a_tools)
    otel = openinference_run(base)
    genai = genai_run(base)
    server.shutdown()
    out.mkdir(parents=True, exist_ok=True)
    inspect_sample = inspect_run(out)

    chat = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": ARGS}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
        {"role": "assistant", "content": ANSWER},
    ]
    files = {
        "responses-object.json": dump(research),
        "responses-items.json": responses_run,
        "anthropic-message.json": dump(thinking),
        "anthropic-conversation.json": {"model": "claude-sonnet-4-5", "system": SYSTEM,
                                        "messages": messages, "response": dump(a_second)},
        "otel-openinference.json": otel,
    }
    out.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (out / name).write_text(json.dumps(value) + "\n")
    (out / "otel-genai.jsonl").write_text("".join(json.dumps(line) + "\n" for line in genai))
    # The same run in every format, as dataset rows that one suite grades.
    rows = [
        {"id": "chat", "input": QUESTION, "trajectory": chat},
        {"id": "responses", "input": QUESTION, "trajectory": responses_run},
        {"id": "anthropic", "input": QUESTION, "trajectory": files["anthropic-conversation.json"]},
        {"id": "otel", "input": QUESTION, "trajectory": otel},
        {"id": "inspect", "input": QUESTION, "trajectory": inspect_sample},
        {"id": "genai", "input": QUESTION, "trajectory": first_trace(genai)},
    ]
    (out / "same-run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
