"""The response types of anthropic 2.14 that graders read, with the real models' fields in
their order (see `_gavel_api.Model`)."""

from _gavel_api import Model


class Usage(Model):
    FIELDS = (
        ("cache_creation", None),
        ("cache_creation_input_tokens", None),
        ("cache_read_input_tokens", None),
        ("inference_geo", None),
        ("input_tokens", None),
        ("output_tokens", None),
        ("output_tokens_details", None),
        ("server_tool_use", None),
        ("service_tier", None),
        ("speed", None),
    )


class TextBlock(Model):
    FIELDS = (("citations", None), ("text", None), ("type", None))


class ToolUseBlock(Model):
    FIELDS = (("id", None), ("caller", None), ("input", None), ("name", None), ("type", None), ("toolset_name", None))


class ThinkingBlock(Model):
    FIELDS = (("signature", None), ("thinking", None), ("type", None))


class RedactedThinkingBlock(Model):
    FIELDS = (("data", None), ("type", None))


ContentBlock = {
    "text": TextBlock,
    "tool_use": ToolUseBlock,
    "thinking": ThinkingBlock,
    "redacted_thinking": RedactedThinkingBlock,
}


class Message(Model):
    FIELDS = (
        ("id", None),
        ("container", None),
        ("content", [ContentBlock]),
        ("diagnostics", None),
        ("model", None),
        ("role", None),
        ("stop_details", None),
        ("stop_reason", None),
        ("stop_sequence", None),
        ("type", None),
        ("usage", Usage),
    )


class MessageTokensCount(Model):
    FIELDS = (("input_tokens", None),)


# Request parameter types are TypedDicts in the real package: plain dicts here.
MessageParam = dict
TextBlockParam = dict
ToolParam = dict

__all__ = [
    "Message",
    "MessageParam",
    "MessageTokensCount",
    "RedactedThinkingBlock",
    "TextBlock",
    "TextBlockParam",
    "ThinkingBlock",
    "ToolParam",
    "ToolUseBlock",
    "Usage",
]
