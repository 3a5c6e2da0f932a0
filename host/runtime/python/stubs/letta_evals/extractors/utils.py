"""letta_evals.extractors.utils (stand-in for letta-evals 0.26.0): reading a trajectory, a list
of turns each a list of letta_client messages."""

from letta_client.types import ToolReturnMessage
from letta_client.types.agents import AssistantMessage, ToolCallMessage


def flatten_content(content):
    """A message's text: a string as is, the parts' `.text` joined by one space."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.text for part in content)
    raise ValueError(f"Unexpected content type: {type(content)}")


def get_messages_by_type(trajectory, message_type):
    return [message for turn in trajectory for message in turn if isinstance(message, message_type)]


def get_assistant_messages(trajectory):
    return get_messages_by_type(trajectory, AssistantMessage)


def get_tool_calls(trajectory):
    """Each tool-call message with the first tool return after it in the same turn."""
    pairs = []
    for turn in trajectory:
        for i, message in enumerate(turn):
            if isinstance(message, ToolCallMessage):
                following = next((m for m in turn[i + 1 :] if isinstance(m, ToolReturnMessage)), None)
                if following is not None:
                    pairs.append((message, following))
    return pairs


def get_last_turn_messages(trajectory, message_type=AssistantMessage):
    if not trajectory:
        return []
    return [message for message in trajectory[-1] if isinstance(message, message_type)]
