"""Input models of the resource tools (light: the catalogue imports them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ListResourcesInput", "ReadResourceDirInput", "ReadResourceInput"]


class ListResourcesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str | None = Field(default=None, description="Only this server's resources (default: every server).")


class ReadResourceInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str = Field(description="The server that offers the resource.")
    uri: str = Field(description="The resource URI, exactly as ListMcpResourcesTool printed it.")


class ReadResourceDirInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str = Field(description="The server that offers the resources.")
    uri: str = Field(description="The directory URI; its direct entries are listed, one level down.")
