"""The tools' input models (the ``[plugins.web]`` config model is in
``_config``, and named here too). Pydantic only, so listing tools (which
needs their schemas) stays cheap."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._config import ENV_KEY, WebConfig, api_key

__all__ = ["ENV_KEY", "WebConfig", "WebFetchInput", "WebSearchInput", "api_key"]


class WebFetchInput(BaseModel):
    # Built when first validated (or its schema asked for), not at import:
    # a start-up that never calls the tool never builds its validator.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    url: str = Field(description="The full http(s) URL to fetch. http is upgraded to https except for localhost.")
    prompt: str = Field(description="What you want to find out from the page.")
    offset: int = Field(
        0, ge=0, description="Character offset into the page text, to continue a page longer than one call shows."
    )


class WebSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    query: str = Field(min_length=2, max_length=400, description="What to search for.")
    allowed_domains: list[str] | None = Field(
        None, description="Only return results from these domains (and their subdomains)."
    )
    blocked_domains: list[str] | None = Field(
        None, description="Never return results from these domains (and their subdomains)."
    )
    mode: Literal["standard", "extended"] = Field(
        "extended", description="standard: a quick search; extended: a more thorough one that costs more."
    )
