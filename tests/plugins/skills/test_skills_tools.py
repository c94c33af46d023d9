"""The skills plugin's tools through a real Toolbox and Session: Skill,
pre-approvals starting and ending, the switches, SkillRead/Search/Write/Delete,
rules, the description listing and ``pegboard skills list``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)
from _trusted import trust

from pegboard import Answer, ConfigError, PermissionRequest, Session, Toolbox, ToolResult, Vote, hookimpl
from pegboard._loading.config import config_dir


def make_skill(folder: Path, name: str, description: str = "", body: str = "Body.\n", extra: str = "") -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description or 'About ' + name}\n{extra}---\n{body}",
                    encoding="utf-8")
    return path


def user_dir() -> Path:
    return config_dir() / "skills"


def project_dir(tmp_path: Path) -> Path:
    return tmp_path / "project" / ".pegboard" / "skills"


class Host:
    """Answers every ask the same way and records it."""

    def __init__(self, allow: bool):
        self.allow = allow
        self.asked: list[tuple[str, str]] = []

    @hookimpl
    def pegboard_ask(self, request: PermissionRequest, decision: Any) -> Answer:
        self.asked.append((request.tool.name, decision.reason))
        return Answer(allow=self.allow)


def load(tmp_path: Path, options: str = "", extra: str = "", host: object | None = None,
         trusted: bool = True) -> Toolbox:
    """The skills plugin on ``tmp_path/project``, trusted unless ``trusted=False``
    (an untrusted project's skills are not loaded: test_trust.py)."""
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    if trusted:
        trust(root)
    cfg = tmp_path / "extra.toml"
    cfg.write_text(f"{extra}\n[plugins.skills]\n{options}\n", encoding="utf-8")
    return Toolbox.load(cwd=root, config=cfg, plugins=["skills"], host=host)


def call(session: Session, tool: str, args: dict[str, Any]) -> ToolResult:
    return asyncio.run(session.call(tool, args))


def decide(session: Session, tool: str, args: dict[str, Any]) -> str:
    request = PermissionRequest(session.toolbox.tools[tool], args, session, session.policy)
    return session.toolbox.permissions.evaluate(request).decision


# --- Skill ----------------------------------------------------------------------


def test_skill_loads_instructions_with_base_dir_and_arguments(tmp_path: Path) -> None:
    path = make_skill(project_dir(tmp_path), "fix-issue", body="Fix issue $ARGUMENTS.\nThen test.\n")
    session = load(tmp_path).session()
    result = call(session, "Skill", {"skill": "/fix-issue", "args": "#42"})
    assert not result.is_error
    assert result.content[0].text == f"Base directory for this skill: {path.parent}\n\nFix issue #42.\nThen test."


def test_skill_appends_arguments_without_placeholder(tmp_path: Path) -> None:
    make_skill(user_dir(), "plain", body="Do the plain thing.\n")
    result = call(load(tmp_path).session(), "Skill", {"skill": "plain", "args": "on main.py"})
    assert result.content[0].text.endswith("Do the plain thing.\n\nARGUMENTS: on main.py")


def test_unknown_skill_suggests_close_names(tmp_path: Path) -> None:
    make_skill(user_dir(), "deploy")
    result = call(load(tmp_path).session(), "Skill", {"skill": "deplyo"})
    assert result.is_error
    assert "'deploy'" in result.text_content() and "SkillSearch" in result.text_content()


def test_person_only_skill_is_refused(tmp_path: Path) -> None:
    make_skill(user_dir(), "release", extra="disable-model-invocation: true\n")
    result = call(load(tmp_path).session(), "Skill", {"skill": "release"})
    assert result.is_error and "only a person may start it" in result.text_content()


def test_broken_skill_is_explained_when_called(tmp_path: Path) -> None:
    bad = user_dir() / "broken" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: broken\ndescription: [\n---\n", encoding="utf-8")
    result = call(load(tmp_path).session(), "Skill", {"skill": "broken"})
    assert result.is_error and "failed to load" in result.text_content()


def test_claude_code_skill_runs_unchanged(tmp_path: Path) -> None:
    text = ("---\nname: commit-helper\ndescription: Commit messages.\nallowed-tools: Bash(git:*), Read\n"
            "license: MIT\nmetadata:\n  team: x\n---\n\nWrite a message for $ARGUMENTS.\n")
    path = project_dir(tmp_path) / "commit-helper" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    session = load(tmp_path).session()
    result = call(session, "Skill", {"skill": "commit-helper", "args": "the fix"})
    assert "Write a message for the fix." in result.content[0].text
    # Read is granted; Bash(git:*) is not, because no loaded plugin provides
    # Bash here and the rule cannot be checked (it must not become "all of Bash").
    assert [(r.text, r.source) for r in session.grants()] == [("Read", "skill:commit-helper")]
    note = result.content[1].text
    assert "Read" in note and "Bash(git:*) (no loaded plugin provides Bash)" in note
    assert path.read_text(encoding="utf-8") == text


# --- pre-approval ---------------------------------------------------------------


SCRIPT_SKILL = "allowed-tools: run_skill_script({name}:scripts/hello.py)\n"


def script_skill(folder: Path, name: str) -> Path:
    path = make_skill(folder, name, body="Run scripts/hello.py.\n", extra=SCRIPT_SKILL.format(name=name))
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "hello.py").write_text("import sys\nprint('hello', *sys.argv[1:])\n",
                                                       encoding="utf-8")
    return path


def test_preapproval_starts_with_the_skill_and_ends_with_the_next(tmp_path: Path) -> None:
    script_skill(user_dir(), "alpha")
    make_skill(user_dir(), "beta")
    session = load(tmp_path, "scripts = true").session()
    args = {"skill": "alpha", "relpath": "scripts/hello.py", "args": ["x"]}
    assert decide(session, "run_skill_script", args) == "ask"
    # Headless: the ask becomes a deny, so the script does not run.
    refused = call(session, "run_skill_script", args)
    assert refused.is_error and "needs approval" in refused.text_content()

    started = call(session, "Skill", {"skill": "alpha"})
    assert "run_skill_script(alpha:scripts/hello.py)" in started.content[1].text
    assert decide(session, "run_skill_script", args) == "allow"
    ran = call(session, "run_skill_script", args)
    assert not ran.is_error and "hello x" in ran.text_content()
    # The grant is for that script only.
    assert decide(session, "run_skill_script", {**args, "relpath": "scripts/other.py"}) == "ask"

    switched = call(session, "Skill", {"skill": "beta"})
    assert "'alpha' is no longer active" in switched.text_content()
    assert session.grants() == []
    assert decide(session, "run_skill_script", args) == "ask"


def test_preapproval_ends_when_the_session_closes(tmp_path: Path) -> None:
    script_skill(user_dir(), "alpha")
    session = load(tmp_path, "scripts = true").session()
    call(session, "Skill", {"skill": "alpha"})
    assert [r.source for r in session.grants()] == ["skill:alpha"]
    asyncio.run(session.aclose())
    assert session.grants() == []


def test_preapproval_is_per_session(tmp_path: Path) -> None:
    script_skill(user_dir(), "alpha")
    toolbox = load(tmp_path, "scripts = true")
    one, two = toolbox.session(), toolbox.session()
    call(one, "Skill", {"skill": "alpha"})
    args = {"skill": "alpha", "relpath": "scripts/hello.py"}
    assert decide(one, "run_skill_script", args) == "allow"
    assert decide(two, "run_skill_script", args) == "ask"


def test_preapproval_does_not_beat_a_deny_rule(tmp_path: Path) -> None:
    script_skill(user_dir(), "alpha")
    session = load(tmp_path, "scripts = true",
                   extra='[permissions]\ndeny = ["run_skill_script(alpha:scripts/hello.py)"]').session()
    call(session, "Skill", {"skill": "alpha"})
    assert decide(session, "run_skill_script", {"skill": "alpha", "relpath": "scripts/hello.py"}) == "deny"


def test_preapprove_switch_limits_sources(tmp_path: Path) -> None:
    script_skill(project_dir(tmp_path), "repo")
    session = load(tmp_path, 'scripts = true\npreapprove = ["user"]').session()
    result = call(session, "Skill", {"skill": "repo"})
    assert session.grants() == []
    assert "pre-approvals from project skills are off" in result.text_content()
    assert decide(session, "run_skill_script", {"skill": "repo", "relpath": "scripts/hello.py"}) == "ask"


# --- switches -------------------------------------------------------------------


def test_switches_off_by_default(tmp_path: Path) -> None:
    toolbox = load(tmp_path)
    assert {"Skill", "SkillRead", "SkillSearch"} <= set(toolbox.tools)
    assert not {"SkillWrite", "SkillDelete", "run_skill_script"} & set(toolbox.tools)


def test_switches_on(tmp_path: Path) -> None:
    toolbox = load(tmp_path, "agent_managed = true\nscripts = true")
    tools = toolbox.tools
    assert tools["SkillWrite"].subagents is False and tools["SkillDelete"].subagents is False
    assert tools["Skill"].subagents is True
    assert "run_skill_script" in tools


def test_unknown_option_is_a_config_error(tmp_path: Path) -> None:
    toolbox = load(tmp_path, "agent_manged = true")
    assert "agent_manged" in (toolbox.records["skills"].error or "")


# --- rules and votes ------------------------------------------------------------


def test_skill_rules_name_one_skill(tmp_path: Path) -> None:
    make_skill(user_dir(), "secret")
    make_skill(user_dir(), "deploy-web")
    make_skill(user_dir(), "open")
    session = load(tmp_path, extra='[permissions]\ndeny = ["Skill(secret)", "Skill(deploy-*)"]').session()
    assert decide(session, "Skill", {"skill": "open"}) == "allow"
    assert decide(session, "Skill", {"skill": "secret"}) == "deny"
    assert decide(session, "Skill", {"skill": "/secret"}) == "deny"
    assert decide(session, "Skill", {"skill": "deploy-web"}) == "deny"
    denied = call(session, "Skill", {"skill": "secret"})
    assert denied.is_error and session.grants() == []


@pytest.mark.parametrize("rule", ["Skill(a b)", "Skill(../x)", "run_skill_script(x:../y.sh)",
                                  "run_skill_script(x:/abs.sh)"])
def test_bad_specifiers_are_config_errors(tmp_path: Path, rule: str) -> None:
    with pytest.raises(ConfigError, match="skills|specifier|skill name|path inside"):
        load(tmp_path, "scripts = true", extra=f'[permissions]\nallow = ["{rule}"]')


def test_run_skill_script_folder_rule(tmp_path: Path) -> None:
    script_skill(user_dir(), "alpha")
    session = load(tmp_path, "scripts = true", extra='[permissions]\nallow = ["run_skill_script(alpha:scripts/*)"]'
                   ).session()
    assert decide(session, "run_skill_script", {"skill": "alpha", "relpath": "scripts/./hello.py"}) == "allow"
    assert decide(session, "run_skill_script", {"skill": "alpha", "relpath": "hello.py"}) == "ask"
    assert decide(session, "run_skill_script", {"skill": "alphabet", "relpath": "scripts/x"}) == "ask"


# --- description ----------------------------------------------------------------


def test_description_lists_skills_within_budget(tmp_path: Path) -> None:
    for i in range(30):
        make_skill(user_dir(), f"skill-{i:02d}", "d" * 80)
    toolbox = load(tmp_path, "listing_budget = 600")
    text = toolbox.description(toolbox.tools["Skill"])
    assert text.startswith("Start a skill")
    listing = text.split("Available skills:\n", 1)[1]
    assert len(listing) <= 600
    assert "- skill-00: " in listing and "more skills are not listed here; SkillSearch finds them." in listing
    # The other tools keep their shipped descriptions.
    assert toolbox.description(toolbox.tools["SkillRead"]).startswith("Show a skill without starting it")


def test_operator_override_of_description_wins(tmp_path: Path) -> None:
    override = config_dir() / "descriptions" / "Skill.md"
    override.parent.mkdir(parents=True)
    override.write_text("Operator text.", encoding="utf-8")
    make_skill(user_dir(), "x")
    toolbox = load(tmp_path)
    assert toolbox.description(toolbox.tools["Skill"]) == "Operator text."


# --- SkillRead and SkillSearch --------------------------------------------------


def test_skill_read_shows_whole_file_base_dir_and_shipped_files(tmp_path: Path) -> None:
    path = make_skill(user_dir(), "pdf", body="See reference.md\n", extra="allowed-tools: Read\n")
    (path.parent / "reference.md").write_text("Deep details\n", encoding="utf-8")
    make_skill(project_dir(tmp_path), "pdf", "the project's")
    session = load(tmp_path).session()
    # content[0]: the core may append a note about calling a deferred tool unloaded.
    text = call(session, "SkillRead", {"name": "pdf"}).content[0].text
    assert text.startswith(f"Base directory for this skill: {path.parent}\n")
    assert "shadows the project skill" in text
    assert "reference.md" in text
    assert text.endswith(path.read_text(encoding="utf-8"))
    assert session.grants() == []  # reading is not starting
    shipped = call(session, "SkillRead", {"name": "pdf", "file": "reference.md"})
    assert shipped.content[0].text.endswith("Deep details\n")


def test_skill_read_refuses_files_outside_the_skill(tmp_path: Path) -> None:
    path = make_skill(user_dir(), "pdf")
    secret = tmp_path / "secret.txt"
    secret.write_text("token", encoding="utf-8")
    os.symlink(secret, path.parent / "link.txt")
    session = load(tmp_path).session()
    for bad in ("../../secret.txt", "link.txt", str(secret)):
        result = call(session, "SkillRead", {"name": "pdf", "file": bad})
        assert result.is_error and "token" not in result.text_content(), bad


def test_skill_search_through_the_tool(tmp_path: Path) -> None:
    path = make_skill(user_dir(), "pdf", body="extract text with pdftotext\n")
    session = load(tmp_path).session()
    text = call(session, "SkillSearch", {"pattern": "PDFTOTEXT", "ignore_case": True}).text_content()
    assert f"{path}:5: extract text with pdftotext" in text and text.startswith("pdf (user)")
    bad = call(session, "SkillSearch", {"pattern": "("})
    assert bad.is_error and "regular expression" in bad.text_content()
    none = call(session, "SkillSearch", {"pattern": "zzz"})
    assert not none.is_error and "No line" in none.text_content()


# --- SkillWrite and SkillDelete -------------------------------------------------


def managed(tmp_path: Path, host: object | None = None, extra: str = "") -> Session:
    return load(tmp_path, "agent_managed = true\nscripts = true", extra=extra, host=host).session()


def test_skill_write_creates_a_loadable_skill(tmp_path: Path) -> None:
    session = managed(tmp_path)
    result = call(session, "SkillWrite", {"name": "notes", "description": "Keep notes tidy.",
                                          "body": "Sort the notes by $ARGUMENTS.", "fields": {"license": "MIT"}})
    assert not result.is_error, result.text_content()
    path = user_dir() / "notes" / "SKILL.md"
    assert path.read_text(encoding="utf-8") == (
        "---\nname: notes\ndescription: Keep notes tidy.\nlicense: MIT\n---\n\nSort the notes by $ARGUMENTS.\n")
    assert [p.name for p in path.parent.iterdir()] == ["SKILL.md"]  # no temporary files left
    started = call(session, "Skill", {"skill": "notes", "args": "date"})
    assert started.content[0].text.endswith("Sort the notes by date.")


def test_skill_write_update_keeps_body_and_unknown_keys(tmp_path: Path) -> None:
    path = make_skill(user_dir(), "keep", "old", body="Original body.\n",
                      extra="license: Apache-2.0\nmetadata:\n  v: 1\n")
    session = managed(tmp_path)
    result = call(session, "SkillWrite", {"name": "keep", "description": "new"})
    assert not result.is_error, result.text_content()
    text = path.read_text(encoding="utf-8")
    assert "description: new" in text and "license: Apache-2.0" in text and "v: 1" in text
    assert text.endswith("Original body.\n")
    call(session, "SkillWrite", {"name": "keep", "fields": {"license": None}})
    assert "license" not in path.read_text(encoding="utf-8")


def test_skill_write_refusals(tmp_path: Path) -> None:
    session = managed(tmp_path)
    for args, why in [
        ({"name": "../evil", "description": "d", "body": "b"}, "name"),
        ({"name": "Bad Name", "description": "d", "body": "b"}, "name"),
        ({"name": "new-one", "body": "b"}, "needs description and body"),
        ({"name": "new-one", "description": "d", "body": "b", "fields": {"allowed-tools": "Bash"}},
         "fields may not set allowed-tools"),
    ]:
        result = call(session, "SkillWrite", args)
        assert result.is_error and why in result.text_content(), (args, result.text_content())
    assert not (user_dir() / "new-one").exists()
    assert not (config_dir() / "evil").exists()


def test_skill_write_does_not_overwrite_a_folder_holding_another_skill(tmp_path: Path) -> None:
    path = user_dir() / "taken" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: other-name\ndescription: d\n---\nkeep me\n", encoding="utf-8")
    result = call(managed(tmp_path), "SkillWrite", {"name": "taken", "description": "d", "body": "b"})
    assert result.is_error and path.read_text(encoding="utf-8").endswith("keep me\n")


def test_skill_write_allowed_tools_asks_firmly(tmp_path: Path) -> None:
    args = {"name": "grabby", "description": "d", "body": "b", "allowed_tools": ["run_skill_script"]}
    refused = call(managed(tmp_path), "SkillWrite", args)  # headless: the ask is a deny
    assert refused.is_error and not (user_dir() / "grabby").exists()
    assert "pre-approves tools" in refused.text_content()
    host = Host(allow=True)
    session = managed(tmp_path, host, extra='[permissions]\nallow = ["SkillWrite"]')
    # Not even an allow rule for SkillWrite waves it through.
    assert decide(session, "SkillWrite", args) == "ask"
    assert not call(session, "SkillWrite", args).is_error
    assert host.asked and host.asked[0][0] == "SkillWrite"
    assert "allowed-tools: run_skill_script" in (user_dir() / "grabby" / "SKILL.md").read_text(encoding="utf-8")
    # Without allowed_tools it is allowed outright.
    assert decide(session, "SkillWrite", {"name": "grabby", "description": "e"}) == "allow"


class Classifier:
    """An auto-mode classifier that would wave everything through."""

    @hookimpl
    def pegboard_classify(self, request: PermissionRequest, decision: Any) -> Vote:
        return Vote.allow("looks fine")


def test_skill_write_allowed_tools_is_not_left_to_the_classifier(tmp_path: Path) -> None:
    toolbox = load(tmp_path, "agent_managed = true", host=Classifier())
    session = toolbox.session(mode="auto")
    plain = call(session, "SkillWrite", {"name": "ok", "description": "d", "body": "b"})
    assert not plain.is_error
    grabby = call(session, "SkillWrite", {"name": "grabby", "description": "d", "body": "b",
                                          "allowed_tools": ["Read"]})
    assert grabby.is_error and not (user_dir() / "grabby").exists()


def test_skill_write_reports_what_it_shadows_and_ends_activation(tmp_path: Path) -> None:
    make_skill(project_dir(tmp_path), "style", "project style")
    script_skill(user_dir(), "alpha")
    session = managed(tmp_path)
    result = call(session, "SkillWrite", {"name": "style", "description": "mine", "body": "b"})
    assert "takes precedence over the project skill" in result.text_content()
    call(session, "Skill", {"skill": "alpha"})
    assert session.grants()
    result = call(session, "SkillWrite", {"name": "alpha", "body": "new body"})
    assert "pre-approvals ended" in result.text_content() and session.grants() == []


def test_skill_delete(tmp_path: Path) -> None:
    path = script_skill(user_dir(), "alpha")
    make_skill(project_dir(tmp_path), "alpha", "project alpha")
    make_skill(project_dir(tmp_path), "repo-only")
    session = managed(tmp_path)
    call(session, "Skill", {"skill": "alpha"})
    result = call(session, "SkillDelete", {"name": "alpha"})
    assert not result.is_error, result.text_content()
    assert not path.parent.exists() and session.grants() == []
    assert "project skill of the same name" in result.text_content()
    assert list(user_dir().iterdir()) == []  # no half-deleted folder left behind
    refused = call(session, "SkillDelete", {"name": "repo-only"})
    assert refused.is_error and "only skills in the user's folder" in refused.text_content()
    assert (project_dir(tmp_path) / "repo-only" / "SKILL.md").exists()


def test_skill_delete_unlinks_a_symlinked_skill_without_touching_its_target(tmp_path: Path) -> None:
    target = make_skill(tmp_path / "mine", "linked")
    user_dir().mkdir(parents=True)
    os.symlink(target.parent, user_dir() / "linked")
    result = call(managed(tmp_path), "SkillDelete", {"name": "linked"})
    assert not result.is_error
    assert not (user_dir() / "linked").exists() and target.exists()


# --- pegboard skills list -------------------------------------------------------


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "pegboard"
    env = {**os.environ, "PEGBOARD_PLUGINS": "skills"}
    return subprocess.run([str(exe), "--cwd", str(tmp_path / "project"), "skills", "list", *args],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.slow
def test_cli_lists_effective_shadowed_and_broken(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    trust(tmp_path / "project")
    make_skill(user_dir(), "dup", "user dup", extra="allowed-tools: Read\n")
    make_skill(project_dir(tmp_path), "dup", "project dup")
    bad = project_dir(tmp_path) / "bad" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: bad\ndescription: 'unclosed\n---\n", encoding="utf-8")
    out = run_cli(tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Precedence: user > project > plugin" in out.stdout
    assert "dup  (user)" in out.stdout and "allowed-tools: Read" in out.stdout
    assert "shadowed: dup (project)" in out.stdout
    assert f"broken: {bad} (project): front matter is not valid YAML" in out.stdout

    data = json.loads(run_cli(tmp_path, "--json").stdout)
    assert [s["name"] for s in data["skills"]] == ["dup"]
    assert data["skills"][0]["allowed_tools"] == ["Read"]
    assert data["shadowed"][0]["origin"] == "project" and data["shadowed"][0]["shadowed_by"]["origin"] == "user"
    assert data["broken"][0]["path"] == str(bad)


# --- skills shipped by a third-party plugin --------------------------------------

SHIPPER = '''
    from pathlib import Path
    from pegboard import hookimpl

    @hookimpl
    def pegboard_skill_dirs():
        return [Path({folder!r})]
'''


def test_plugin_shipped_skills_load_below_project_and_user(plugin_factory: PluginFactory, tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    make_skill(shipped, "lint", "plugin lint", body="Plugin lint body.\n")
    make_skill(shipped, "format", "plugin format", body="Plugin format body.\n")
    make_skill(plugin_factory.root / ".pegboard" / "skills", "lint", "project lint", body="Project lint body.\n")
    plugin_factory.write(SHIPPER.format(folder=str(shipped)), name="acme")
    trust(plugin_factory.root)
    session = Toolbox.load(cwd=plugin_factory.root, plugins=["acme", "skills"]).session()
    assert call(session, "Skill", {"skill": "format"}).content[0].text.endswith("Plugin format body.")
    assert call(session, "Skill", {"skill": "lint"}).content[0].text.endswith("Project lint body.")
    found = call(session, "SkillSearch", {"pattern": "Plugin format"}).text_content()
    assert "format (plugin:acme)" in found


def test_plugin_shipped_skills_in_the_listing(plugin_factory: PluginFactory, tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    make_skill(shipped, "format", "plugin format")
    plugin_factory.write(SHIPPER.format(folder=str(shipped)), name="acme")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["acme", "skills"])
    assert "- format: plugin format" in toolbox.description(toolbox.tools["Skill"])


# --- with the fs and shell plugins: a Claude Code skill's allowed-tools take effect ----


def test_claude_code_allowed_tools_pre_approve_real_tools(tmp_path: Path) -> None:
    make_skill(project_dir(tmp_path), "cc", extra="allowed-tools: Bash(git:*), Read\nlicense: MIT\n")
    make_skill(project_dir(tmp_path), "other")
    outside = tmp_path / "outside.txt"
    outside.write_text("data\n", encoding="utf-8")
    toolbox = Toolbox.load(cwd=tmp_path / "project", plugins=["skills", "fs", "shell"], trust_project=True)
    assert {name: r.error for name, r in toolbox.records.items()} == {"skills": None, "fs": None, "shell": None}
    session = toolbox.session()
    read = {"file_path": str(outside)}
    assert decide(session, "Read", read) == "ask"  # outside the working directories
    result = call(session, "Skill", {"skill": "cc"})
    assert [(r.text, r.source) for r in session.grants()] == [("Bash(git:*)", "skill:cc"), ("Read", "skill:cc")]
    assert "Bash(git:*), Read" in result.content[1].text
    assert decide(session, "Read", read) == "allow"
    assert "data" in call(session, "Read", read).text_content()
    call(session, "Skill", {"skill": "other"})
    assert decide(session, "Read", read) == "ask"
