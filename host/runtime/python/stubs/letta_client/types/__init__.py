"""letta_client.types (stand-in for letta-client 1.12): `ToolReturnMessage` and `AgentState`
live here, the other messages in `letta_client.types.agents`."""

from _gavel_model import Field, list_of, model, optional, string, submodules

from letta_client.types.agents import Block, ToolReturnMessage, _SdkModel


class AgentState(_SdkModel):
    """The agent's state as recorded with the run; only `blocks` (its memory) is typed, every
    other recorded key is kept as an attribute."""

    _fields = (
        Field("id", optional(string)),
        Field("name", optional(string)),
        Field("blocks", list_of(model(Block)), factory=list),
    )


submodules(__name__, (("agent_state", AgentState), ("tool_return_message", ToolReturnMessage)))

__all__ = ["AgentState", "ToolReturnMessage"]
