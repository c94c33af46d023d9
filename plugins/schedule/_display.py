"""Times and durations as the model and the operator read them."""

from __future__ import annotations

from datetime import datetime, timezone

from ._timing import zone

__all__ = ["firing_id", "local_time", "span", "utc_iso", "zone_iso"]


def utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def zone_iso(ts: float, zone_name: str) -> str:
    return datetime.fromtimestamp(ts, zone(zone_name)).isoformat(timespec="seconds")


def firing_id(job_id: str, due: float) -> str:
    """A firing's stable id: its job and its due time, the same on every
    worker and every delivery attempt."""
    return f"{job_id}@{utc_iso(due)}"


def local_time(ts: float, zone_name: str) -> str:
    """``Mon 2026-12-07 09:03:12 CET``."""
    moment = datetime.fromtimestamp(ts, zone(zone_name))
    return moment.strftime("%a %Y-%m-%d %H:%M:%S %Z")


def span(seconds: float) -> str:
    """``45 s``, ``4 min 30 s``, ``2 h 5 min``, ``3 d 4 h``."""
    total = int(round(abs(seconds)))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"
