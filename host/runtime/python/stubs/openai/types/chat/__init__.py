"""`openai.types.chat`: the chat completion types graders name in imports and type hints."""

from openai.types import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    Choice,
)

# Request parameter types are TypedDicts in the real package: plain dicts here.
ChatCompletionMessageParam = dict
ChatCompletionSystemMessageParam = dict
ChatCompletionUserMessageParam = dict
ChatCompletionAssistantMessageParam = dict
ChatCompletionToolParam = dict

__all__ = [
    "ChatCompletion",
    "ChatCompletionAssistantMessageParam",
    "ChatCompletionMessage",
    "ChatCompletionMessageFunctionToolCall",
    "ChatCompletionMessageParam",
    "ChatCompletionSystemMessageParam",
    "ChatCompletionToolParam",
    "ChatCompletionUserMessageParam",
    "Choice",
]
