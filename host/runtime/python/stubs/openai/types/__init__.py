"""The response types of openai 3.57 that graders read, with the real models' fields in their
order (see `_gavel_api.Model`)."""

from _gavel_api import Model


class CompletionUsage(Model):
    FIELDS = (
        ("completion_tokens", None),
        ("prompt_tokens", None),
        ("total_tokens", None),
        ("completion_tokens_details", None),
        ("prompt_tokens_details", None),
    )


class Function(Model):
    FIELDS = (("arguments", None), ("name", None))


class ChatCompletionMessageFunctionToolCall(Model):
    FIELDS = (("id", None), ("function", Function), ("type", None))


class ChatCompletionMessage(Model):
    FIELDS = (
        ("content", None),
        ("refusal", None),
        ("role", None),
        ("annotations", None),
        ("audio", None),
        ("function_call", Function),
        ("tool_calls", [{"function": ChatCompletionMessageFunctionToolCall}]),
    )


class Choice(Model):
    FIELDS = (("finish_reason", None), ("index", None), ("logprobs", None), ("message", ChatCompletionMessage))


class ChatCompletion(Model):
    FIELDS = (
        ("id", None),
        ("choices", [Choice]),
        ("created", None),
        ("model", None),
        ("object", None),
        ("metadata", None),
        ("moderation", None),
        ("service_tier", None),
        ("system_fingerprint", None),
        ("usage", CompletionUsage),
    )


class Embedding(Model):
    FIELDS = (("embedding", [float]), ("index", None), ("object", None))


class Usage(Model):
    """An embedding request's usage (`openai.types.create_embedding_response.Usage`)."""

    FIELDS = (("prompt_tokens", None), ("total_tokens", None))


class CreateEmbeddingResponse(Model):
    FIELDS = (("data", [Embedding]), ("model", None), ("object", None), ("usage", Usage))


class ResponseOutputText(Model):
    FIELDS = (("annotations", None), ("text", None), ("type", None), ("logprobs", None))


class ResponseOutputMessage(Model):
    FIELDS = (
        ("id", None),
        ("content", [{"output_text": ResponseOutputText}]),
        ("role", None),
        ("status", None),
        ("type", None),
        ("phase", None),
    )


class ResponseUsage(Model):
    FIELDS = (
        ("input_tokens", None),
        ("input_tokens_details", None),
        ("output_tokens", None),
        ("output_tokens_details", None),
        ("total_tokens", None),
    )


_RESPONSE_KINDS = {
    "created_at": float,
    "completed_at": float,
    "temperature": float,
    "top_p": float,
    "output": [{"message": ResponseOutputMessage}],
    "usage": ResponseUsage,
}


class Response(Model):
    FIELDS = tuple(
        (name, _RESPONSE_KINDS.get(name))
        for name in """
        id access_programs created_at error incomplete_details instructions metadata model object
        output parallel_tool_calls temperature tool_choice tools top_p background completed_at
        conversation image input_transformations max_output_tokens max_tool_calls moderation
        previous_response_id prompt prompt_cache_diagnostics prompt_cache_key prompt_cache_options
        prompt_cache_retention reasoning safety_identifier service_tier status text tool_usage
        top_logprobs truncation usage user
        """.split()
    )

    @property
    def output_text(self):
        """The text of every `output_text` part of the output's messages, joined."""
        texts = []
        for item in self.output or []:
            if getattr(item, "type", None) == "message":
                for part in item.content or []:
                    if getattr(part, "type", None) == "output_text" and part.text is not None:
                        texts.append(part.text)
        return "".join(texts)


__all__ = [
    "ChatCompletion",
    "ChatCompletionMessage",
    "ChatCompletionMessageFunctionToolCall",
    "Choice",
    "CompletionUsage",
    "CreateEmbeddingResponse",
    "Embedding",
    "Response",
    "ResponseOutputMessage",
    "ResponseOutputText",
    "ResponseUsage",
]

# Imported with the package, so that the sandbox's snapshot holds it.
from openai.types import chat  # noqa: E402
