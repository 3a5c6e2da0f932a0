"""letta_client.types.agents: the messages of a Letta run (stand-in for letta-client 1.12).

Every message has `id`, `date`, `message_type` (its own literal, or `None` when not given) and
the optional `name`, `otid`, `run_id`, `sender_id`, `seq_id`, `step_id`, `is_err`; unknown keys
are kept, as the SDK keeps them, in `__pydantic_extra__`.
"""

import sys

from _gavel_model import (
    REQUIRED,
    ExtraModel,
    Field,
    ValidationError,
    any_value,
    boolean,
    datetime,
    integer,
    list_of,
    literal,
    mapping,
    model,
    optional,
    string,
    submodules,
    union,
)


class _SdkModel(ExtraModel):
    model_config = {"extra": "allow", "defer_build": True}
    _str_is_repr = True

    # The SDK's: what the model was given (its fields set), unless told otherwise.
    def to_dict(self, *, mode="python", use_api_names=True, exclude_unset=True, exclude_defaults=False,
                exclude_none=False, warnings=True):
        return self.model_dump(mode=mode, by_alias=use_api_names, exclude_unset=exclude_unset,
                               exclude_defaults=exclude_defaults, exclude_none=exclude_none, warnings=warnings)

    def to_json(self, *, indent=2, use_api_names=True, exclude_unset=True, exclude_defaults=False,
                exclude_none=False, warnings=True):
        return self.model_dump_json(indent=indent, by_alias=use_api_names, exclude_unset=exclude_unset,
                                    exclude_defaults=exclude_defaults, exclude_none=exclude_none, warnings=warnings)

    # Named as the SDK's methods are, which a `TypeError` for a keyword they do not take shows.
    to_dict.__qualname__ = "BaseModel.to_dict"
    to_json.__qualname__ = "BaseModel.to_json"


class TextContent(_SdkModel):
    _fields = (
        Field("text", string, REQUIRED),
        Field("signature", optional(string)),
        Field("type", optional(literal("text"))),
    )


class LettaAssistantMessageContentUnion(TextContent):
    """A part of an assistant message's content (the SDK's own class for them)."""


class SourceURLImage(_SdkModel):
    _fields = (Field("url", string, REQUIRED), Field("type", optional(literal("url"))))


class SourceBase64Image(_SdkModel):
    _fields = (
        Field("data", string, REQUIRED),
        Field("media_type", string, REQUIRED),
        Field("detail", optional(string)),
        Field("type", optional(literal("base64"))),
    )


class SourceLettaImage(_SdkModel):
    _fields = (
        Field("file_id", string, REQUIRED),
        Field("data", optional(string)),
        Field("detail", optional(string)),
        Field("media_type", optional(string)),
        Field("type", optional(literal("letta"))),
    )


class ImageContent(_SdkModel):
    _fields = (
        # The SDK's `Source`: its discriminator is the SDK's own, which pydantic does not read.
        Field("source", union(model(SourceURLImage), model(SourceBase64Image), model(SourceLettaImage)), REQUIRED),
        Field("type", optional(literal("image"))),
    )


class ToolCall(_SdkModel):
    _fields = (Field("arguments", string, REQUIRED), Field("name", string, REQUIRED), Field("tool_call_id", string, REQUIRED))


class ToolCallDelta(_SdkModel):
    _fields = (Field("arguments", optional(string)), Field("name", optional(string)), Field("tool_call_id", optional(string)))


class Block(_SdkModel):
    _fields = (
        Field("value", string, REQUIRED),
        Field("label", optional(string)),
        Field("id", optional(string)),
        Field("description", optional(string)),
        Field("limit", optional(integer)),
        Field("metadata", optional(mapping)),
        Field("read_only", optional(boolean)),
    )


_content_union = union(model(TextContent), model(ImageContent))


def _content_part(value):
    """A part of a user message's content: the member its `type` names, built at once; a part
    that member refuses (or any other value) goes through the whole union, which tries each
    member and lists every member's errors when none takes it."""
    if type(value) is dict:
        try:
            return ImageContent(**value) if value.get("type") == "image" else TextContent(**value)
        except ValidationError:
            pass
    return _content_union(value)


_content_part.label = _content_union.label
# In the SDK's order, which pydantic lists a refused value's errors in.
_content = union(list_of(_content_part), string)
_assistant_content = union(list_of(model(LettaAssistantMessageContentUnion)), string)
_call = union(model(ToolCall), model(ToolCallDelta))


class ToolReturn(_SdkModel):
    _fields = (
        Field("status", literal("success", "error"), REQUIRED),
        Field("tool_call_id", string, REQUIRED),
        Field("tool_return", _content, REQUIRED),
        Field("stderr", optional(list_of(string))),
        Field("stdout", optional(list_of(string))),
        Field("type", optional(literal("tool"))),
    )


def _message(message_type, *fields):
    common_head = (Field("id", string, REQUIRED),)
    common_tail = (
        Field("is_err", optional(boolean)),
        Field("message_type", optional(literal(message_type))),
        Field("name", optional(string)),
        Field("otid", optional(string)),
        Field("run_id", optional(string)),
        Field("sender_id", optional(string)),
        Field("seq_id", optional(integer)),
        Field("step_id", optional(string)),
    )
    # The SDK orders fields: id, the required ones (date among them, alphabetically), then the
    # optional ones alphabetically; `fields` lists this message's own in that order, with a
    # `None` where `date` goes.
    head = [f for f in fields if f is not None and f.default is REQUIRED]
    tail = [f for f in fields if f is not None and f.default is not REQUIRED]
    date = Field("date", datetime, None)
    ordered = list(common_head)
    placed = False
    for f in fields:
        if f is None:
            ordered.append(date)
            placed = True
        elif f in head:
            ordered.append(f)
    if not placed:
        ordered.append(date)
    optional_fields = sorted(list(common_tail) + tail, key=lambda f: f.name)
    return tuple(ordered + optional_fields)


class SystemMessage(_SdkModel):
    _fields = _message("system_message", Field("content", string, REQUIRED), None)


class UserMessage(_SdkModel):
    _fields = _message("user_message", Field("content", _content, REQUIRED), None)


class AssistantMessage(_SdkModel):
    _fields = _message("assistant_message", Field("content", _assistant_content, REQUIRED), None)


class ReasoningMessage(_SdkModel):
    _fields = _message(
        "reasoning_message",
        None,
        Field("reasoning", string, REQUIRED),
        Field("signature", optional(string)),
        Field("source", optional(literal("reasoner_model", "non_reasoner_model"))),
    )


class HiddenReasoningMessage(_SdkModel):
    _fields = _message(
        "hidden_reasoning_message",
        None,
        Field("state", literal("redacted", "omitted"), REQUIRED),
        Field("hidden_reasoning", optional(string)),
    )


class ToolCallMessage(_SdkModel):
    _fields = _message(
        "tool_call_message",
        None,
        Field("tool_call", _call, REQUIRED),
        Field("tool_calls", optional(union(list_of(model(ToolCall)), model(ToolCallDelta)))),
    )


class ToolReturnMessage(_SdkModel):
    _fields = _message(
        "tool_return_message",
        None,
        Field("status", literal("success", "error"), REQUIRED),
        Field("tool_call_id", string, REQUIRED),
        Field("tool_return", string, REQUIRED),
        Field("stderr", optional(list_of(string))),
        Field("stdout", optional(list_of(string))),
        Field("tool_returns", optional(list_of(model(ToolReturn)))),
    )


class ApprovalRequestMessage(_SdkModel):
    _fields = _message(
        "approval_request_message",
        None,
        Field("tool_call", _call, REQUIRED),
        Field("tool_calls", optional(union(list_of(model(ToolCall)), model(ToolCallDelta)))),
    )


class ApprovalResponseMessage(_SdkModel):
    _fields = _message(
        "approval_response_message",
        None,
        Field("approval_request_id", optional(string)),
        Field("approvals", optional(list_of(any_value))),
        Field("approve", optional(boolean)),
        Field("reason", optional(string)),
    )


class SummaryMessage(_SdkModel):
    _fields = _message(
        "summary_message", None, Field("summary", string, REQUIRED), Field("compaction_stats", optional(mapping))
    )


class EventMessage(_SdkModel):
    _fields = _message(
        "event_message",
        None,
        Field("event_data", mapping, REQUIRED),
        Field("event_type", literal("compaction"), REQUIRED),
    )


MESSAGE_TYPES = {
    next(f for f in cls._fields if f.name == "message_type").check.inner.values[0]: cls
    for cls in (
        SystemMessage,
        UserMessage,
        ReasoningMessage,
        HiddenReasoningMessage,
        ToolCallMessage,
        ToolReturnMessage,
        AssistantMessage,
        ApprovalRequestMessage,
        ApprovalResponseMessage,
        SummaryMessage,
        EventMessage,
    )
}

# The SDK defines each type in a module of its own (`...agents.assistant_message`).
submodules(
    __name__,
    (
        ("approval_request_message", ApprovalRequestMessage),
        ("approval_response_message", ApprovalResponseMessage),
        ("assistant_message", AssistantMessage),
        ("block", Block),
        ("event_message", EventMessage),
        ("hidden_reasoning_message", HiddenReasoningMessage),
        ("image_content", ImageContent),
        ("letta_assistant_message_content_union", LettaAssistantMessageContentUnion),
        ("reasoning_message", ReasoningMessage),
        ("summary_message", SummaryMessage),
        ("system_message", SystemMessage),
        ("text_content", TextContent),
        ("tool_call", ToolCall),
        ("tool_call_delta", ToolCallDelta),
        ("tool_call_message", ToolCallMessage),
        ("tool_return", ToolReturn),
        ("user_message", UserMessage),
    ),
)

# `image_content` defines the image sources beside `ImageContent`.
for _cls in (SourceURLImage, SourceBase64Image, SourceLettaImage):
    setattr(sys.modules[f"{__name__}.image_content"], _cls.__name__, _cls)

__all__ = [
    "AssistantMessage",
    "ApprovalRequestMessage",
    "ApprovalResponseMessage",
    "Block",
    "EventMessage",
    "HiddenReasoningMessage",
    "ImageContent",
    "LettaAssistantMessageContentUnion",
    "ReasoningMessage",
    "SummaryMessage",
    "SystemMessage",
    "TextContent",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallMessage",
    "ToolReturn",
    "UserMessage",
]
