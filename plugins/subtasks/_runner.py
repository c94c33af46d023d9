"""The reference runners: a model loop for hosts that have none.

Each turn sends the child's catalogue and conversation to the model, runs
the tool calls of its reply through the child's session (``call_batch``:
read-only calls side by side, the others alone and in order), and sends the
results back, until the model answers without calling a tool, or the run
reaches ``max_turns``. A reply that ends while background work the child
started is still running waits for it, and the model hears how it ended.

Requests that are answered 429 wait for ``retry-after`` (or back off);
529 and 5xx answers, a reply that is not what the API promises, and a
network failure back off and try again, ``retries`` times. Any other
refusal ends the run with the API's own words. httpx is imported here, when
a runner first runs.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import os
import random
import ssl
import time
from typing import TYPE_CHECKING, Any

from ._children import RunnerError, drain_inbox, mark_driven
from ._run import assistant_message, tool_message, user_message
from ._wire import ANTHROPIC, API, OPENAI, Malformed, Reply

if TYPE_CHECKING:
    import httpx

    from ._config import SubtasksConfig
    from ._run import SubagentRun

__all__ = ["resolve_model", "run_reference", "send"]

# Claude Code's model hints; without a [plugins.subtasks] models entry they mean the configured model.
HINTS = frozenset({"sonnet", "opus", "haiku", "fable", "inherit"})
MAX_WAIT_S = 120.0


def resolve_model(hint: str | None, config: SubtasksConfig) -> str:
    if hint and hint in config.models:
        return config.models[hint]
    if hint and hint not in HINTS:
        return hint  # a model the definition or caller named
    if config.model is None:
        raise RunnerError(f"no model is set for the {config.runner} runner: set [plugins.subtasks] model in your "
                          "user config")
    return config.model


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle costs about 60 ms,
    more than many a model turn, and every run would pay it again."""
    import httpx

    return httpx.create_ssl_context()


def _api(config: SubtasksConfig) -> API:
    return ANTHROPIC if config.runner == "anthropic" else OPENAI


async def run_reference(run: SubagentRun, config: SubtasksConfig) -> str:
    import httpx

    api = _api(config)
    base_url, key_env = config.endpoint()
    key = os.environ.get(key_env)
    if not key:
        raise RunnerError(f"the {api.name} runner needs an API key in the environment variable {key_env} "
                          "([plugins.subtasks] api_key_env names another)")
    model = resolve_model(run.model, config)
    session = run.session
    mark_driven(session)
    run.messages.append(user_message(run.prompt))
    await run.save()
    async with httpx.AsyncClient(timeout=config.request_timeout_s, verify=_tls()) as client:
        while True:
            if run.turns >= run.max_turns:
                run.exhausted = True
                return _last_words(run)
            catalogue = session.catalogue()
            system = run.system_prompt
            if deferred := catalogue.deferred_text():
                system = f"{system}\n\n{deferred}"
            body = api.body(model, system, run.messages, catalogue, config.max_tokens)
            reply = await send(client, api, api.url(base_url), api.headers(key), body, config)
            run.turns += 1
            run.messages.append(assistant_message(reply.text, reply.calls))
            if reply.calls:
                results = await session.call_batch([(c["name"], c["input"], c["id"]) for c in reply.calls])
                run.messages.append(tool_message(list(zip(reply.calls, results))))
                if run.handback is not None:  # the child handed its report in (SubagentHandback)
                    await run.save()
                    return run.handback
            news = drain_inbox(session)
            if not reply.calls and not news:
                running = [t for t in session.tasks.list() if t.status == "running"]
                if not running:
                    await run.save()
                    return reply.text
                # The model is done but work it started is not: wait for it.
                await asyncio.wait({asyncio.ensure_future(session.tasks.wait(t.id)) for t in running},
                                   return_when=asyncio.FIRST_COMPLETED)
                news = drain_inbox(session)
            if news:
                run.messages.append(user_message("\n\n".join(news)))
            await run.save()


def _last_words(run: SubagentRun) -> str:
    for message in reversed(run.messages):
        if message.get("role") == "assistant" and message.get("content"):
            return str(message["content"])
    return ""


async def send(client: httpx.AsyncClient, api: API, url: str, headers: dict[str, str], body: dict[str, Any],
               config: SubtasksConfig) -> Reply:
    """One model request, retried as the module says; the reply, read."""
    import httpx

    delay = config.backoff_s
    problem = ""
    for attempt in range(config.retries + 1):
        wait = delay * (1 + random.random() / 4)
        try:
            response = await client.post(url, headers=headers, json=body)
        except httpx.TransportError as exc:
            problem = f"could not reach {url}: {type(exc).__name__}: {exc}"
        else:
            status = response.status_code
            if status == 200:
                try:
                    return api.parse(response.json())
                except (ValueError, Malformed) as exc:
                    problem = f"the model server's reply could not be read: {exc}"
            elif status == 429 or status == 529 or status >= 500:
                problem = f"{url} answered {status}: {_error_text(api, response)}"
                if status == 429:
                    wait = _retry_after(response) or wait
            else:
                raise RunnerError(f"the model server refused the request ({status}): {_error_text(api, response)}")
        if attempt == config.retries:
            break
        await asyncio.sleep(min(wait, MAX_WAIT_S))
        delay *= 2
    raise RunnerError(f"{problem} (after {config.retries + 1} attempts)")


def _error_text(api: API, response: httpx.Response) -> str:
    try:
        return api.error_message(response.json())
    except ValueError:
        return response.text[:300] or response.reason_phrase


def _retry_after(response: httpx.Response) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds, or an HTTP date)."""
    millis = response.headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
