from __future__ import annotations

from pydantic import BaseModel, Field

from pegboard import ToolContext


class HelloInput(BaseModel):
    name: str = Field(description="Who to greet.")


async def hello(args: HelloInput, ctx: ToolContext) -> str:
    return f"{ctx.config.greeting}, {args.name}!"
