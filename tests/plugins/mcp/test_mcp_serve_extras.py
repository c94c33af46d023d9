"""``pegboard serve`` beyond tools, with the SDK client: skills as prompts,
the session's resources, completions, logging/setLevel, progress during a
long Bash call, and results whose text is not hidden behind structured data."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from pegboard import Toolbox

pytestmark = pytest.mark.anyio


def serve(root: Path, mode: str | None = None) -> Any:
    from pegboard.plugins.mcp._serve import AskingHost, SessionRegistry, build_server

    toolbox = Toolbox.load(cwd=root)
    toolbox.add_host(AskingHost(toolbox), name="mcp-serve")
    registry = SessionRegistry(toolbox, mode, single_connection=True)
    return build_server(toolbox, registry), registry


@pytest.fixture
def project(tmp_path: Path, isolated_env: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    skill = isolated_env / "config" / "pegboard" / "skills" / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: review\ndescription: Review a file for bugs\n---\n"
                                    "Review $ARGUMENTS carefully and list the bugs.\n")
    return root


async def test_skills_are_prompts_with_arguments(project: Path) -> None:
    server, registry = serve(project)
    try:
        async with Client(server, mode="legacy") as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert prompts["review"].description == "Review a file for bugs"
            assert [a.name for a in prompts["review"].arguments] == ["arguments"]
            got = await client.get_prompt("review", {"arguments": "main.py"})
            assert got.messages[0].content.text.strip() == "Review main.py carefully and list the bugs."
            with pytest.raises(Exception, match="no prompt called 'nope'"):
                await client.get_prompt("nope", {})
    finally:
        await registry.aclose()


async def test_scratchpad_entries_are_resources(project: Path) -> None:
    import mcp_types as types

    server, registry = serve(project, "bypassPermissions")
    (project / "big.txt").write_text("line\n" * 10)
    try:
        async with Client(server, mode="legacy") as client:
            assert (await client.list_resources()).resources == []
            saved = await client.call_tool("Read", {"file_path": str(project / "big.txt"), "scratchpad": "notes"})
            assert not saved.is_error, saved.content[0].text
            (resource,) = (await client.list_resources()).resources
            assert str(resource.uri) == "pegboard://scratchpad/notes"
            read = await client.read_resource("pegboard://scratchpad/notes")
            assert "line" in read.contents[0].text
            templates = (await client.list_resource_templates()).resource_templates
            assert templates[0].uri_template == "pegboard://scratchpad/{name}"
            with pytest.raises(Exception, match="no resource pegboard://scratchpad/missing"):
                await client.read_resource("pegboard://scratchpad/missing")
            done = await client.complete(types.ResourceTemplateReference(type="ref/resource",
                                                                         uri="pegboard://scratchpad/{name}"),
                                         {"name": "name", "value": "no"})
            assert done.completion.values == ["notes"]
    finally:
        await registry.aclose()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
async def test_saved_tool_output_is_a_resource(project: Path, user_config: Any) -> None:
    from urllib.parse import quote

    user_config("[results]\nmax_chars = 1000\n")
    server, registry = serve(project, "bypassPermissions")
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("Bash", {"command": "seq 1 2000"})
            assert not result.is_error
            assert "\n2000" not in result.content[0].text and "The whole text is saved in" in result.content[0].text
            (saved,) = [r for r in (await client.list_resources()).resources
                        if str(r.uri).startswith("pegboard://results/")]
            assert saved.name in result.content[0].text  # the file the model was told about
            assert saved.size is not None and saved.size > 1000
            read = await client.read_resource(str(saved.uri))
            assert read.contents[0].text.splitlines() == [str(n) for n in range(1, 2001)]
            # Only files in the results folder: never a path out of it.
            session_folder = Path(next(iter(registry.sessions.values())).data_path)
            (session_folder / "private.txt").write_text("not a result")
            for name in ("../private.txt", "..", ""):
                with pytest.raises(Exception, match="no resource"):
                    await client.read_resource("pegboard://results/" + quote(name, safe=""))
    finally:
        await registry.aclose()


async def test_a_handshake_era_client_sets_the_log_level(project: Path) -> None:
    # logging/setLevel is deprecated from 2026-07-28 on (there the client opts in to log messages
    # per request, with io.modelcontextprotocol/logLevel in _meta); a 2025-11-25 client still
    # sends the request, so pegboard serve answers it. Sent as that client puts it on the wire,
    # not through the SDK's deprecated helper.
    import mcp_types as types

    server, registry = serve(project)
    try:
        async with Client(server, mode="legacy") as client:
            async def set_level(level: str) -> None:
                await client.session.send_request(
                    types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),  # type: ignore[arg-type]
                    types.EmptyResult)

            await set_level("error")
            assert registry.log_level == "error"
            with pytest.raises(Exception):
                await set_level("loud")
            assert registry.log_level == "error"
    finally:
        await registry.aclose()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
async def test_bash_output_arrives_as_progress_and_text_is_not_hidden(project: Path) -> None:
    server, registry = serve(project, "bypassPermissions")
    seen: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, message))

    try:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("Bash", {"command": "echo one; sleep 0.2; echo two"},
                                            progress_callback=progress)
            assert not result.is_error
            assert "one" in result.content[0].text and "two" in result.content[0].text
            # No output schema: structured data must not stand in for the text.
            assert result.structured_content is None
            assert result.meta and "exit_code" in result.meta["pegboard/structured"]
    finally:
        await registry.aclose()
    assert [m for _, m in seen] == ["one", "two"] and [d for d, _ in seen] == [1, 2]
