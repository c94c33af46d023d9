"""The conformance suite's client: pegboard embedded in a host, driven the way
an agent would drive it, against the suite's test server.

The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``)
runs ``python client.py URL`` with ``MCP_CONFORMANCE_SCENARIO`` set. This
script configures that URL as an ordinary MCP server in a private user config,
loads a toolbox with no refresh step, builds the first catalogue, and makes
the calls a model would make: the scenario's tools, and for servers that need
sign-in the ``mcp__conformance__authenticate`` / ``complete_authentication``
tools, with this script playing the person's browser. ``metadata`` scenarios
sign in through ``pegboard mcp login`` instead, with ``BROWSER`` pointing back
at this script.

Run by tests/conformance/run.py; not collected by pytest.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

SERVER = "conformance"
PREFIX = f"mcp__{SERVER}__"
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def log(*parts: Any) -> None:
    print("[pegboard-client]", *parts, file=sys.stderr, flush=True)


def browse(url: str) -> None:
    """The person's browser: open the authorization URL and follow its
    redirects, which end at pegboard's loopback callback."""
    log("browser opens", url)
    with urllib.request.urlopen(url, timeout=20) as response:  # noqa: S310 (the suite's localhost server)
        log("browser landed on", response.geturl(), response.status)


def write_config(home: Path, url: str, scenario: str) -> dict[str, str]:
    """A private HOME and XDG folders, and a user config naming the server."""
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_STATE_HOME": str(home / "state"),
        "PEGBOARD_POLICY": str(home / "no-policy.toml"),
    }
    lines = [f"[plugins.mcp.servers.{SERVER}]", f"url = {json.dumps(url)}", "startup_timeout_s = 15",
             "tool_timeout_s = 20"]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    oauth: dict[str, Any] = {}
    if scenario.startswith("auth/"):
        oauth["client_metadata_url"] = CIMD_URL
    if scenario == "auth/cross-app-access-complete-flow":
        # The authorization server's issuer is configuration (SEP-990's trust
        # model); the suite does not pass it, so read it as an operator would.
        base = url.split("/mcp")[0]
        with urllib.request.urlopen(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=10) as response:
            issuer = json.loads(response.read())["authorization_servers"][0]
        env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        env["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        oauth = {"grant": "identity_assertion", "client_id": context["client_id"],
                 "client_secret": "${CONFORMANCE_CLIENT_SECRET}", "issuer": issuer,
                 "idp_token_endpoint": context["idp_token_endpoint"], "idp_client_id": context["idp_client_id"],
                 "id_token": "${CONFORMANCE_ID_TOKEN}"}
    elif scenario.startswith("auth/client-credentials"):
        oauth = {"grant": "client_credentials", "client_id": context["client_id"]}
        if "private_key_pem" in context:
            key = home / "client-key.pem"
            key.write_text(context["private_key_pem"])
            key.chmod(0o600)
            oauth["private_key_file"] = str(key)
            oauth["signing_algorithm"] = context.get("signing_algorithm", "ES256")
        else:
            # A secret never belongs in a config file: the config names a variable.
            env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
            oauth["client_secret"] = "${CONFORMANCE_CLIENT_SECRET}"
    elif context.get("client_id"):
        oauth["client_id"] = context["client_id"]
        if context.get("client_secret"):
            env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
            oauth["client_secret"] = "${CONFORMANCE_CLIENT_SECRET}"
    if oauth:
        lines.append(f"[plugins.mcp.servers.{SERVER}.oauth]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in oauth.items()]
    folder = home / "config" / "pegboard"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text("\n".join(lines) + "\n")
    return env


def make_host() -> object:
    from pegboard import Answer, hookimpl

    class _Host:
        @hookimpl
        def pegboard_ask(self, request: Any, decision: Any) -> Any:
            log("asked about", request.tool.name, "->", "allow")
            return Answer(allow=True)

        @hookimpl
        def pegboard_elicit(self, source: str, message: str, schema: dict[str, Any]) -> Any:
            log("form from", source, ":", message, json.dumps(schema))
            return {"action": "accept", "content": {}}

        @hookimpl
        def pegboard_event(self, session: Any, kind: str, data: dict[str, Any]) -> None:
            log("event", kind, json.dumps(data, default=str)[:300])

    return _Host()


def text_of(result: Any) -> str:
    return result.text_content()


async def sign_in_with_tools(session: Any) -> None:
    """What a model does with a server that needs sign-in."""
    started = await session.call(f"{PREFIX}authenticate", {})
    log("authenticate ->", text_of(started))
    if started.is_error:
        raise SystemExit(f"authenticate failed: {text_of(started)}")
    url = next(word for word in text_of(started).split() if word.startswith("http"))
    await asyncio.to_thread(browse, url)
    done = await session.call(f"{PREFIX}complete_authentication", {})
    log("complete_authentication ->", text_of(done))
    if done.is_error:
        raise SystemExit(f"complete_authentication failed: {text_of(done)}")


def sign_in_with_cli(env: dict[str, str], project: Path) -> None:
    """``pegboard mcp login`` with this script as the browser."""
    browser = f"{sys.executable} {Path(__file__).resolve()} --browse %s"
    proc = subprocess.run([str(Path(sys.executable).parent / "pegboard"), "mcp", "login", SERVER, "--cwd", str(project)],
                          env={**os.environ, **env, "BROWSER": browser}, capture_output=True, text=True,
                          timeout=60)
    log("pegboard mcp login ->", proc.returncode, proc.stdout.strip(), proc.stderr.strip())
    if proc.returncode != 0:
        raise SystemExit("pegboard mcp login failed")


async def call_first_tool(session: Any, name: str, arguments: dict[str, Any]) -> Any:
    for _ in range(3):
        result = await session.call(name, arguments)
        log(name, "->", text_of(result)[:500])
        names = session.catalogue().names()
        if result.is_error and f"{PREFIX}authenticate" in names:
            await sign_in_with_tools(session)
            continue
        return result
    raise SystemExit(f"{name} still needs sign-in after three rounds")


async def run(url: str, scenario: str) -> None:
    with tempfile.TemporaryDirectory(prefix="pegboard-conformance-") as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        env = write_config(home, url, scenario)
        os.environ.update(env)
        if scenario.startswith("auth/") and "metadata" in scenario:
            sign_in_with_cli(env, project)
        from pegboard import Toolbox

        toolbox = Toolbox.load(cwd=project, host=make_host())
        async with toolbox.session("default") as session:
            names = session.catalogue().names()
            ours = sorted(n for n in names if n.startswith(PREFIX))
            log("first catalogue holds", ours)
            problems = [p for p in toolbox.settings.problems if SERVER in p]
            if problems:
                raise SystemExit(f"the server was not listed: {problems}")
            if scenario == "initialize":
                return
            if not ours:
                raise SystemExit("the first catalogue holds none of the server's tools")
            if f"{PREFIX}authenticate" in ours:
                await sign_in_with_tools(session)
                ours = sorted(n for n in session.catalogue().names() if n.startswith(PREFIX))
                log("after sign-in the catalogue holds", ours)
            if scenario == "initialize":
                return
            wanted = {"tools_call": ("add_numbers", {"a": 5, "b": 3}),
                      "sse-retry": ("test_reconnection", {}),
                      "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {})}
            tool, args = wanted.get(scenario, (None, {}))
            if tool is None:
                real = [n for n in ours if not n.endswith(("__authenticate", "__complete_authentication"))]
                if not real:
                    raise SystemExit("the server offers no tool after sign-in")
                tool = real[0][len(PREFIX):]
            result = await call_first_tool(session, PREFIX + tool, args)
            if result.is_error and not scenario.startswith("auth/"):
                raise SystemExit(f"{tool} failed: {text_of(result)}")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--browse":
        browse(sys.argv[2])
        return
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    asyncio.run(run(url, scenario))


if __name__ == "__main__":
    main()
