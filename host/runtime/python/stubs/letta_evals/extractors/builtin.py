"""letta_evals.extractors.builtin (stand-in for letta-evals 0.26.0): the nine built-in
extractors, callable from user code as `last_assistant(trajectory, config)`."""

import re

from letta_client.types import ToolReturnMessage
from letta_client.types.agents import AssistantMessage, ToolCallMessage

from letta_evals.decorators import extractor
from letta_evals.extractors.utils import flatten_content, get_assistant_messages, get_last_turn_messages


def _texts(trajectory):
    return [flatten_content(m.content) for m in get_assistant_messages(trajectory)]


@extractor
def last_assistant(trajectory, config):
    texts = _texts(trajectory)
    return texts[-1] if texts else ""


@extractor
def first_assistant(trajectory, config):
    texts = _texts(trajectory)
    return texts[0] if texts else ""


@extractor
def all_assistant(trajectory, config):
    return config.get("separator", "\n").join(_texts(trajectory))


@extractor
def last_turn(trajectory, config):
    texts = [flatten_content(m.content) for m in get_last_turn_messages(trajectory, AssistantMessage)]
    return config.get("separator", "\n").join(texts)


@extractor
def pattern(trajectory, config):
    regex = config["pattern"]
    group = config.get("group", 0)
    search_all = config.get("search_all", False)
    for text in reversed(_texts(trajectory)):
        if search_all:
            found = re.findall(regex, text)
            if found:
                if isinstance(found[0], tuple):
                    return " ".join(m[group] for m in found)
                return " ".join(found)
        else:
            match = re.search(regex, text)
            if match:
                return match.group(group)
    return ""


def _calls(message):
    if message.tool_calls:
        return message.tool_calls
    return [message.tool_call] if message.tool_call else []


def _first_call(trajectory, tool_name):
    for turn in trajectory:
        for message in turn:
            if isinstance(message, ToolCallMessage):
                for call in _calls(message):
                    if call.name == tool_name:
                        return call
    return None


@extractor
def tool_arguments(trajectory, config):
    call = _first_call(trajectory, config["tool_name"])
    return call.arguments if call is not None else "{}"


@extractor
def tool_output(trajectory, config):
    call = _first_call(trajectory, config["tool_name"])
    call_id = call.tool_call_id if call is not None else None
    if call_id:
        for turn in trajectory:
            for message in turn:
                if isinstance(message, ToolReturnMessage) and message.tool_call_id == call_id:
                    return message.tool_return
    return ""


@extractor
def after_marker(trajectory, config):
    marker = config["marker"]
    include_marker = config.get("include_marker", False)
    for text in reversed(_texts(trajectory)):
        at = text.find(marker)
        if at >= 0:
            return (text[at:] if include_marker else text[at + len(marker) :]).strip()
    return ""


@extractor
def memory_block(trajectory, config, agent_state):
    if agent_state is None:
        raise RuntimeError("memory_block extractor requires agent_state, but it was not retrieved")
    label = config.get("block_label")
    if not label:
        raise ValueError("memory_block extractor requires 'block_label' in config")
    for block in agent_state.blocks or []:
        if block.label == label:
            return block.value
    return ""
