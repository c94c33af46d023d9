"""Agent definitions: Claude Code's Markdown files, where they come from,
which wins, what breaks, and how a definition narrows the agent it starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from _subtasks_host import ScriptedHost, load, project
from pegboard._cli.main import cli
from pegboard.paths import config_dir
from pegboard.plugins.subtasks._definitions import DefinitionError, parse_definition

pytestmark = pytest.mark.anyio

REVIEWER = """---
name: reviewer
description: Reviews a change for bugs.
tools: Read, Grep, Glob, Agent(Explore, helper)
disallowedTools:
  - Grep
model: haiku
permissionMode: plan
maxTurns: 7
skills: [style]
isolation: worktree
background: false
mcpServers: [github]
color: blue
---
You review code carefully.
"""


def write_agent(folder: Path, name: str, text: str | None = None, description: str = "Does things.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text or f"---\nname: {name}\ndescription: {description}\n---\nYou are {name}.\n",
                    encoding="utf-8")
    return path


PEGBOARD = str(Path(sys.executable).parent / "pegboard")


def agents_list(root: Path, *args: str) -> str:
    # A real process: plugin commands are found once per process.
    done = subprocess.run([PEGBOARD, "--cwd", str(root), "agents", "list", *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def listing(root: Path) -> dict[str, Any]:
    return json.loads(agents_list(root, "--json"))  # type: ignore[no-any-return]


def test_claude_code_format_parses() -> None:
    definition = parse_definition(REVIEWER, "user", Path("reviewer.md"))
    assert definition.name == "reviewer" and definition.prompt == "You review code carefully."
    assert definition.tools == ("Read", "Grep", "Glob", "Agent")
    assert definition.agent_types == ("Explore", "helper")
    assert definition.disallowed == ("Grep",)
    assert (definition.model, definition.permission_mode, definition.max_turns) == ("haiku", "plan", 7)
    assert definition.skills == ("style",) and definition.isolation == "worktree" and definition.background is False
    assert definition.notes == ("mcpServers: not applied (MCP servers are configured for the whole toolbox, not "
                                "per agent)",)
    assert definition.extra == {"color": "blue"}
    inherit = parse_definition("---\nname: x\ndescription: y\nmodel: inherit\n---\nbody\n", "user")
    assert inherit.model is None and inherit.tools is None


@pytest.mark.parametrize("text, fragment", [
    ("no front matter", "no YAML front matter"),
    ("---\nname: x\ndescription: y\n", "not closed"),
    ("---\nname: [x\n---\nbody", "not valid YAML"),
    ("---\ndescription: y\n---\nbody", "name is required"),
    ("---\nname: x\n---\nbody", "description is required"),
    ("---\nname: has space\ndescription: y\n---\nbody", "is not usable"),
    ("---\nname: x\ndescription: y\npermissionMode: yolo\n---\nbody", "permissionMode: unknown mode"),
    ("---\nname: x\ndescription: y\nmaxTurns: 0\n---\nbody", "maxTurns must be a positive"),
    ("---\nname: x\ndescription: y\nisolation: remote\n---\nbody", "isolation must be 'worktree'"),
    ("---\nname: x\ndescription: y\nbackground: maybe\n---\nbody", "background must be true or false"),
    ("---\nname: x\ndescription: y\ntools: 3\n---\nbody", "tools must be"),
    ("---\nname: x\ndescription: y\n---\n   \n", "body"),
])
def test_broken_files_say_why(text: str, fragment: str) -> None:
    with pytest.raises(DefinitionError, match=fragment):
        parse_definition(text, "user")


@pytest.mark.slow
def test_sources_precedence_shadowing_and_broken(tmp_path: Path) -> None:
    root = project(tmp_path)
    user = config_dir() / "agents"
    write_agent(user, "Explore", description="My own explorer.")
    write_agent(user, "helper")
    (user / "broken.md").write_text("---\nname: broken\n---\nbody\n", encoding="utf-8")
    (user / "notes.txt").write_text("not an agent")
    write_agent(root / ".pegboard" / "agents", "helper", description="The project's helper.")
    found = listing(root)
    agents = {a["name"]: a for a in found["agents"]}
    assert agents["Explore"]["source"] == "user" and agents["Explore"]["description"] == "My own explorer."
    assert agents["general-purpose"]["source"] == "built-in"
    assert agents["helper"]["source"] == "user"  # the project is not trusted: its folder is not read
    assert [s["name"] for s in found["shadowed"]] == ["Explore"]
    assert found["shadowed"][0]["shadowed_by"]["source"] == "user"
    assert [Path(b["path"]).name for b in found["broken"]] == ["broken.md"]
    assert "description is required" in found["broken"][0]["reason"]
    assert found["not_read"] == [{"folder": str(root / ".pegboard" / "agents"), "source": "project",
                                  "why": "the project is not trusted (pegboard trust), so its agents are not read"}]
    text = agents_list(root)
    assert "shadowed: Explore" in text and "broken:" in text and "not read:" in text


@pytest.mark.slow
def test_a_trusted_projects_agents_override_the_users(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_agent(config_dir() / "agents", "helper")
    write_agent(root / ".pegboard" / "agents", "helper", description="The project's helper.")
    untrusted = load(root)
    assert any("1 project agent" in i.describe() for i in untrusted.settings.ignored)
    assert CliRunner().invoke(cli, ["trust", str(root)]).exit_code == 0
    agents = {a["name"]: a for a in listing(root)["agents"]}
    assert agents["helper"]["source"] == "project" and agents["helper"]["description"] == "The project's helper."
    assert [s["source"] for s in listing(root)["shadowed"]] == ["user"]


def test_the_agent_description_lists_the_types(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_agent(config_dir() / "agents", "reviewer", REVIEWER)
    toolbox = load(root)
    text = toolbox.description(toolbox.tools["Agent"])
    assert "Available agent types:" in text
    assert "- Explore: A fast, read-only agent" in text and "- general-purpose:" in text
    assert "- reviewer: Reviews a change for bugs. (Tools: Read, Grep, Glob, Agent; never Grep; mode plan)" in text


async def test_a_definition_narrows_the_agent_it_starts(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_agent(config_dir() / "agents", "reader", """---
name: reader
description: Reads.
tools: Read, Glob, Agent(Explore)
maxTurns: 3
model: haiku
---
You read.
""")
    seen: dict[str, Any] = {}

    async def inspect(run: Any) -> str:
        seen["tools"] = {t.name for t in run.session.offered()}
        seen["run"] = run
        other = await run.session.call("Agent", {"description": "x", "prompt": "inspect: x",
                                                 "subagent_type": "general-purpose", "run_in_background": False})
        seen["refusal"] = other.text_content()
        return "read it"

    host = ScriptedHost({"inspect": inspect})
    session = load(root, host).session("bypassPermissions")
    result = await session.call("Agent", {"description": "read", "prompt": "inspect: go", "subagent_type": "reader",
                                          "run_in_background": False})
    assert "read it" in result.text_content()
    assert {"Read", "Glob", "Agent"} <= seen["tools"] and {"Write", "Edit", "Grep"}.isdisjoint(seen["tools"])
    run = seen["run"]
    assert run.max_turns == 3 and run.model == "haiku" and run.agent_type == "reader"
    assert run.system_prompt.startswith("You read.") and "# Where you are" in run.system_prompt
    assert "may start only these types: Explore" in seen["refusal"]
    # The caller's model hint wins over the definition's.
    await session.call("Agent", {"description": "read", "prompt": "inspect: go", "subagent_type": "reader",
                                 "model": "opus", "run_in_background": False})
    assert seen["run"].model == "opus"


async def test_an_unknown_type_lists_the_known_ones(tmp_path: Path) -> None:
    session = load(project(tmp_path)).session("default")
    result = await session.call("Agent", {"description": "x", "prompt": "y", "subagent_type": "Nope"})
    assert result.is_error and "Available: Explore, general-purpose" in result.text_content()
    # A wrong case is a typo, not another agent.
    host = ScriptedHost({})
    session = load(project(tmp_path), host).session("default")
    await session.call("Agent", {"description": "x", "prompt": "y", "subagent_type": "explore",
                                 "run_in_background": False})
    assert host.runs[0].agent_type == "Explore"


def test_plugins_ship_agents_through_their_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _plugin_factory import PluginFactory

    factory = PluginFactory(tmp_path, monkeypatch)
    shipped = tmp_path / "shipped"
    write_agent(shipped, "linter", description="Lints.")
    factory.write(f"""
from pegboard import hookimpl

@hookimpl
def pegboard_agent_dirs():
    return [{str(shipped)!r}]
""", name="shipper")
    factory.write("""
from pegboard import hookimpl

@hookimpl
def pegboard_agent_dirs():
    raise RuntimeError("oops")
""", name="breaker")
    from pegboard import Toolbox

    toolbox = Toolbox.load(cwd=factory.root, plugins=["shipper", "breaker", "subtasks"])
    assert toolbox.records["shipper"].warnings == []  # its hook matches the spec subtasks declares
    text = toolbox.description(toolbox.tools["Agent"])
    assert "- linter: Lints." in text
    from pegboard.plugins.subtasks._describe import definitions_for

    context = toolbox.context_for("subtasks")
    assert context is not None
    found = definitions_for(context)
    assert found.agents["linter"].source == "plugin:shipper"
    assert [b.reason for b in found.broken] == ["pegboard_agent_dirs failed: RuntimeError: oops"]
    factory.cleanup()


async def test_a_definitions_skills_are_started_in_its_session_first(tmp_path: Path) -> None:
    root = project(tmp_path)
    skill = config_dir() / "skills" / "house-style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: house-style\ndescription: How we write.\n---\nWrite tersely.\n")
    write_agent(config_dir() / "agents", "writer", "---\nname: writer\ndescription: Writes.\n"
                                                   "skills: [house-style, missing-one]\n---\nYou write.\n")
    seen: list[str] = []

    async def remember(run: Any) -> str:
        seen.append(run.prompt)
        return "ok"

    host = ScriptedHost({"go": remember})
    session = load_with_skills(root, host).session("default")
    await session.call("Agent", {"description": "w", "prompt": "go: write it", "subagent_type": "writer",
                                 "run_in_background": False})
    prompt = seen[0]
    assert "Write tersely." in prompt and prompt.endswith("go: write it")
    assert "The skill 'missing-one' could not be started for you" in prompt


def load_with_skills(root: Path, host: object) -> Any:
    return load(root, host, plugins=("fs", "skills", "subtasks"))


# Front matter the YAML-free reader must either read exactly as YAML does or
# hand to YAML (None): never a different answer.
FRONT_MATTER_CASES = [
    "name: x\ndescription: Plain words, with commas (and parentheses) and \"quotes\" inside.\n",
    "name: x\r\ndescription: Lines end in CR LF.\r\n",
    "name: x\n\ndescription: After a blank line.\n",
    "name: x\ndescription: a#b c:d e-f [g] {h} *i &j !k |l >m %n @o `p\n",
    "name: x\ndescription: why\nname: z\n",  # a repeated key: YAML keeps the last
    "name: x\ndescription: y # a comment\n",
    "name: x\ndescription: a: b\n",
    "name: x\ndescription: ends with a colon:\n",
    "name: x\ndescription: trailing space \n",
    "name: x\ndescription: a\tb\n",
    "name: x\ndescription: a\x0cb\n", "name: x\x0cdescription: other words\n",
    "name: x\x0bdescription: other words\n", "name: x\x1ddescription: other words\n",
    "name: x\ndescription: a\x85b\n",
    "name: x\ndescription: a\u2028b\n",
    "name: x\ndescription: a\xa0b\n",
    "name: x\ndescription: 'quoted'\n",
    "name: x\ndescription: \"quoted\"\n",
    "name: x\ndescription:\n  - a list\n",
    "name: x\ndescription: folded\n  onto a second line\n",
    "name: x\ndescription: y\n# a comment line\n",
    "name: x\nbackground: true\n", "name: x\nbackground: Yes\n", "name: x\nbackground: off\n",
    "name: x\nbackground: ON\n", "name: x\nmodel: null\n", "name: x\nmodel: Null\n", "name: x\nmodel: ~\n",
    "name: x\nmodel: y\n", "name: x\nmodel: n\n", "name: x\nmodel: nan\n", "name: x\nmodel: inf\n",
    "name: x\nmaxTurns: 7\n", "name: x\nmaxTurns: 1_000\n", "name: x\nmodel: .inf\n", "name: x\nmodel: 2026-12-01\n",
    "name: x\nmodel: 0x1F\n", "name: x\nmodel: -1\n", "name: x\nmodel: 1:20\n", "name: x\nmodel: <<\n",
    "on: x\n", "yes: x\n", "null: x\n", "True: x\n", "n: x\n",
    "name: x\nskills: [a, b]\n", "name: x\ntools: {a: b}\n", "name: x\nmodel: &anchor a\n", "name: x\nmodel: *alias\n",
    "name: x\nmodel: !!str a\n", "name: x\nmodel: |\n  block\n", "name: x\nmodel: >\n  folded\n",
    "name:x\n", "name : x\n", " name: x\n", "name:  two spaces\n", "k" * 1100 + ": long key\n",
    "description: Ünïcödé wörds and 漢字\n", "name: x\n...\n", "name: x\n---\n", "",
]


@pytest.mark.parametrize("raw", FRONT_MATTER_CASES)
def test_front_matter_without_yaml_reads_as_yaml_does_or_not_at_all(raw: str) -> None:
    import yaml

    from pegboard.plugins.subtasks._definitions import _plain_front_matter

    plain = _plain_front_matter(raw)
    if plain is None:
        return
    assert plain == yaml.safe_load(raw)
    assert all(type(v) is str for v in plain.values())


def test_front_matter_without_yaml_takes_the_common_files() -> None:
    """The reader must not send everything to YAML: the built-in agents and
    the usual key: text files are its whole reason."""
    from pegboard.plugins.subtasks._definitions import BUILT_IN_DIR, _plain_front_matter, _split_front_matter

    for path in sorted(BUILT_IN_DIR.glob("*.md")):
        raw, _ = _split_front_matter(path.read_text(encoding="utf-8"))
        assert _plain_front_matter(raw) is not None, path.name
    taken = [raw for raw in FRONT_MATTER_CASES if _plain_front_matter(raw) is not None]
    assert len(taken) >= 6, taken


@pytest.mark.slow
def test_the_built_in_agents_are_described_without_yaml(tmp_path: Path) -> None:
    """`pegboard serve` describes the Agent tool at every start: PyYAML's
    import was a quarter of an empty Python's start-up."""
    code = ("import sys\nfrom pegboard.plugins.subtasks._definitions import BUILT_IN_DIR, Source, load_definitions\n"
            "found = load_definitions([Source('built-in', BUILT_IN_DIR)])\n"
            "print(sorted(found.agents), found.broken, 'yaml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "['Explore', 'general-purpose'] [] False"
