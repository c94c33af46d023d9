"""An example pegboard plugin.

The entry module stays light: it declares the options and the tool, and names
the handler and input model as strings so they are imported only when the
tool is called.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from pegboard import Tool, Vote, hookimpl

# The plugin API this plugin was written against: it loads on any 1.x from 1.0 on.
PEGBOARD_API = "1.1"

class HelloConfig(BaseModel):
    """``[plugins.hello]`` in config.toml."""

    model_config = ConfigDict(extra="forbid")
    greeting: str = "Hello"


@hookimpl
def pegboard_config_model() -> type[BaseModel]:
    return HelloConfig


@hookimpl
def pegboard_register_tools(register) -> None:  # type: ignore[no-untyped-def]
    register(Tool(
        name="Hello",
        handler="pegboard_hello._tool:hello",
        input_model="pegboard_hello._tool:HelloInput",
        read_only=True,
        permission="read",
        vote=vote,
    ))


def vote(request) -> Vote:  # type: ignore[no-untyped-def]
    return Vote.allow("greeting is harmless")
