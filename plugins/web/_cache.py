"""A small per-process cache of converted pages, keyed by final URL.

Per process rather than per session: two sessions reading the same docs page
should not download it twice. That sharing is safe only because the handler
re-checks the host for the *calling* session before it serves a hit (an
unlock in one session must not leak a loopback page into another).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ._convert import PageText

__all__ = ["CachedPage", "PageCache", "shared_cache"]


@dataclass(frozen=True)
class CachedPage:
    final_url: str
    status: int
    content_type: str
    kind: str  # "html" | "text"
    title: str | None
    text: PageText  # converted as far as calls have read it
    downloaded_bytes: int
    truncated: bool  # the download stopped at the size cap


class PageCache:
    """TTL + LRU. ``get(url)`` finds a page by the URL asked for or by its final URL."""

    def __init__(
        self,
        ttl_s: float = 900.0,
        max_entries: int = 64,
        max_chars: int = 64_000_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._clock = clock
        # url -> (stored at, page, the characters it was charged when stored)
        self._pages: OrderedDict[str, tuple[float, CachedPage, int]] = OrderedDict()
        self._aliases: dict[str, str] = {}  # requested URL -> final URL
        self._chars = 0
        # Sessions may live on different threads' event loops.
        self._lock = threading.Lock()

    def get(self, url: str) -> CachedPage | None:
        now = self._clock()
        with self._lock:
            key = self._aliases.get(url, url)
            item = self._pages.get(key)
            if item is None:
                return None
            stored, page, _ = item
            if now - stored >= self.ttl_s:
                self._drop(key)
                return None
            self._pages.move_to_end(key)
            return page

    def put(self, requested_url: str, page: CachedPage) -> None:
        chars = page.text.cache_chars
        if self.ttl_s <= 0 or chars > self.max_chars:
            return
        with self._lock:
            key = page.final_url
            if key in self._pages:
                self._drop(key)
            self._pages[key] = (self._clock(), page, chars)
            self._chars += chars
            if requested_url != key:
                self._aliases[requested_url] = key
            while self._pages and (len(self._pages) > self.max_entries or self._chars > self.max_chars):
                oldest = next(iter(self._pages))
                self._drop(oldest)

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self._aliases.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._pages)

    def __bool__(self) -> bool:
        # An empty cache is still a cache: ``cache or default`` must not swap it out.
        return True

    def _drop(self, key: str) -> None:
        _, _, chars = self._pages.pop(key)
        self._chars -= chars
        for alias in [a for a, k in self._aliases.items() if k == key]:
            del self._aliases[alias]


_shared: PageCache | None = None
_shared_lock = threading.Lock()


def shared_cache(ttl_s: float, max_entries: int) -> PageCache:
    """The process-wide cache; its limits follow the latest configuration."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PageCache(ttl_s=ttl_s, max_entries=max_entries)
        else:
            _shared.ttl_s, _shared.max_entries = ttl_s, max_entries
        return _shared
