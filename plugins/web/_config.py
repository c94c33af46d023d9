"""The ``[plugins.web]`` config model and the search key, apart from the
tools' input models (``_models``): loading the plugin builds the config, not
the tools' models, which wait until a tool is validated or listed."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from pegboard import UserScope

__all__ = ["ENV_KEY", "WebConfig", "api_key"]

ENV_KEY = "PEGBOARD_WEB_SEARCH_API_KEY"


class WebConfig(BaseModel):
    """``[plugins.web]``."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(30.0, gt=0, le=600, description="whole-fetch time limit, redirects included")
    max_bytes: int = Field(5_000_000, ge=1024, le=200_000_000, description="download cap (decoded bytes)")
    window_chars: int = Field(40_000, ge=1000, le=2_000_000, description="characters of page text per call")
    max_redirects: int = Field(5, ge=0, le=20, description="same-host redirect hops followed")
    cache_ttl_s: float = Field(900.0, ge=0, description="how long fetched pages are reused (0 turns caching off)")
    cache_max_entries: int = Field(64, ge=1, le=10_000, description="pages kept in the cache, least recently used out first")
    user_agent: str = Field("pegboard-webfetch/0.1", min_length=1, max_length=200,
                            description="the User-Agent sent with every fetch")
    search_api_key: SecretStr | None = Field(None, description="Tavily key; PEGBOARD_WEB_SEARCH_API_KEY wins")
    search_base_url: Annotated[str, UserScope("it chooses where searches and your API key are sent")] = Field(
        "https://api.tavily.com", description="Tavily-compatible endpoint base")
    search_max_results: int = Field(8, ge=1, le=20, description="results WebSearch asks for")
    search_timeout_s: float = Field(30.0, gt=0, le=300, description="how long one search may take")

    @field_validator("search_base_url")
    @classmethod
    def _http_base(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
            raise ValueError("must be an http(s) URL such as https://api.tavily.com, without credentials")
        return value.rstrip("/")


def api_key(config: WebConfig | None) -> str | None:
    """The search key: the environment variable, else ``[plugins.web] search_api_key``.
    Beside the config it reads: registering the tools asks it at every start."""
    env = os.environ.get(ENV_KEY, "").strip()
    if env:
        return env
    if config is not None and config.search_api_key is not None:
        value = config.search_api_key.get_secret_value().strip()
        return value or None
    return None
