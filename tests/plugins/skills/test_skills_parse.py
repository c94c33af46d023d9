"""SKILL.md parsing and argument substitution (the pure parts of the skills plugin)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.plugins.skills._skill import (
    SkillError,
    parse_allowed_tools,
    read_skill,
    render_skill_md,
    substitute,
)

# A skill exactly as Claude Code users write them, with keys pegboard does not use.
CLAUDE_CODE_SKILL = """\
---
name: commit-helper
description: Writes commit messages from staged changes. Use when the user asks to commit.
allowed-tools: Bash(git:*), Read
license: Apache-2.0
metadata:
  author: someone
  version: "1.2"
argument-hint: "[scope]"
model: sonnet
---

# Commit helper

1. Run `git diff --staged`.
2. Write a message for $ARGUMENTS.
3. See [the guide](reference/guide.md).
"""


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_claude_code_skill_loads_unchanged(tmp_path: Path) -> None:
    path = write(tmp_path / "commit-helper", CLAUDE_CODE_SKILL)
    skill = read_skill(path, "project", "project")
    assert skill.name == "commit-helper"
    assert skill.description.startswith("Writes commit messages")
    assert skill.allowed_tools == ("Bash(git:*)", "Read")
    assert skill.extra["license"] == "Apache-2.0"
    assert skill.extra["metadata"] == {"author": "someone", "version": "1.2"}
    assert skill.extra["argument-hint"] == "[scope]"
    assert skill.body.startswith("# Commit helper")
    assert skill.base_dir == tmp_path / "commit-helper"
    # The file on disk is untouched by loading.
    assert path.read_text(encoding="utf-8") == CLAUDE_CODE_SKILL


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Read, Grep", ("Read", "Grep")),
        ("Read Grep Glob", ("Read", "Grep", "Glob")),  # the Agent Skills spec's space-separated form
        ("Bash(git add:*), Bash(git commit:*) Read", ("Bash(git add:*)", "Bash(git commit:*)", "Read")),
        (["Read", "Bash(npm run test:*)"], ("Read", "Bash(npm run test:*)")),
        (["Read, Write"], ("Read", "Write")),
        ("Read, Read", ("Read",)),
        (None, ()),
        ("", ()),
    ],
)
def test_allowed_tools_forms(value: object, expected: tuple[str, ...]) -> None:
    assert parse_allowed_tools(value) == expected


@pytest.mark.parametrize("value", ["Bash(git:*", "Bash)", 3, ["Read", 4], {"Read": True}, "Bash()"])
def test_allowed_tools_that_do_not_parse(value: object) -> None:
    with pytest.raises(SkillError):
        parse_allowed_tools(value)


def test_name_defaults_to_folder_and_description_to_first_line(tmp_path: Path) -> None:
    path = write(tmp_path / "fallback", "---\nallowed-tools: Read\n---\n\n## Does the thing\n\nMore text.\n")
    skill = read_skill(path, "user", "user")
    assert skill.name == "fallback"
    assert skill.description == "Does the thing"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter here\n", "no YAML front matter"),
        ("---\nname: x\ndescription: y\n", "not closed"),
        ("---\nname: [unclosed\n---\nbody\n", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody\n", "must be a mapping"),
        ("---\nname: ../escape\ndescription: d\n---\nbody\n", "not usable"),
        ("---\nname: 12\ndescription: d\n---\nbody\n", "name must be a string"),
        ("---\nname: ok\ndescription: [1, 2]\n---\nbody\n", "description must be a string"),
        ("---\nname: ok\ndescription: d\nallowed-tools: 7\n---\nbody\n", "allowed-tools"),
        ("---\nname: ok\n---\n\n", "no description"),
    ],
)
def test_broken_front_matter_says_why(tmp_path: Path, text: str, reason: str) -> None:
    path = write(tmp_path / "bad", text)
    with pytest.raises(SkillError, match=reason):
        read_skill(path, "user", "user")


def test_yaml_error_names_the_file_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad", "---\nname: ok\ndescription: d\nkey: : :\n---\nbody\n")
    with pytest.raises(SkillError, match=r"line 4"):
        read_skill(path, "user", "user")


def test_oversized_and_binary_files_are_refused(tmp_path: Path) -> None:
    big = write(tmp_path / "big", "---\nname: big\ndescription: d\n---\n" + "x" * (600 * 1024))
    with pytest.raises(SkillError, match="limit"):
        read_skill(big, "user", "user")
    (tmp_path / "bin").mkdir()
    binary = tmp_path / "bin" / "SKILL.md"
    binary.write_bytes(b"---\nname: bin\n---\n\xff\xfe\x00")
    with pytest.raises(SkillError, match="UTF-8"):
        read_skill(binary, "user", "user")


def test_bom_and_closing_dots_are_accepted(tmp_path: Path) -> None:
    path = write(tmp_path / "bom", "\ufeff---\nname: bom\ndescription: d\n...\nbody\n")
    assert read_skill(path, "user", "user").body == "body"


def skill_with(tmp_path: Path, body: str, extra: str = "") -> object:
    path = write(tmp_path / "s", f"---\nname: s\ndescription: d\n{extra}---\n{body}")
    return read_skill(path, "user", "user")


def test_arguments_replaced(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "Fix issue $ARGUMENTS now. Again: $ARGUMENTS.")
    assert substitute(skill, "123") == "Fix issue 123 now. Again: 123."  # type: ignore[arg-type]


def test_arguments_appended_when_body_has_no_placeholder(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "Just do it.")
    assert substitute(skill, "the thing") == "Just do it.\n\nARGUMENTS: the thing"  # type: ignore[arg-type]
    assert substitute(skill, "") == "Just do it."  # type: ignore[arg-type]


def test_empty_args_empty_the_placeholder(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "Topic: [$ARGUMENTS]")
    assert substitute(skill, "") == "Topic: []"  # type: ignore[arg-type]


def test_positional_and_named_arguments(tmp_path: Path) -> None:
    skill = skill_with(
        tmp_path,
        "Move $0 from $ARGUMENTS[1] to $2 ($component, $target). Missing: $5. Env: $HOME.",
        extra="arguments:\n  - component\n  - source\n  - target\n",
    )
    out = substitute(skill, '"my widget" React Vue')  # type: ignore[arg-type]
    assert out == "Move my widget from React to Vue (my widget, Vue). Missing: $5. Env: $HOME."


def test_argument_text_is_not_substituted_again(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "Run with $ARGUMENTS")
    assert substitute(skill, "$1 $ARGUMENTS ${CLAUDE_SKILL_DIR}") == \
        "Run with $1 $ARGUMENTS ${CLAUDE_SKILL_DIR}"  # type: ignore[arg-type]


def test_shell_snippets_survive_without_args(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "awk '{print $1}' file")
    assert substitute(skill, "") == "awk '{print $1}' file"  # type: ignore[arg-type]


def test_skill_dir_variables(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "python ${CLAUDE_SKILL_DIR}/x.py; ${PEGBOARD_SKILL_DIR}; ${CLAUDE_SESSION_ID}")
    out = substitute(skill, "", session_id="abc")  # type: ignore[arg-type]
    folder = str(tmp_path / "s")
    assert out == f"python {folder}/x.py; {folder}; abc"


def test_unbalanced_quotes_in_args_do_not_fail(tmp_path: Path) -> None:
    skill = skill_with(tmp_path, "first=$0 all=$ARGUMENTS")
    assert substitute(skill, "it's fine") == "first=it's all=it's fine"  # type: ignore[arg-type]


def test_render_round_trip_keeps_unknown_keys(tmp_path: Path) -> None:
    front = {"name": "rt", "description": "Round trip", "allowed-tools": "Read", "license": "MIT",
             "metadata": {"a": [1, 2]}}
    text = render_skill_md(front, "Body line\n\n$ARGUMENTS\n")
    path = write(tmp_path / "rt", text)
    skill = read_skill(path, "user", "user")
    assert dict(skill.front_matter) == front
    assert skill.body == "Body line\n\n$ARGUMENTS"


def test_body_with_rules_and_unicode_survives_a_round_trip(tmp_path: Path) -> None:
    body = "Intro\n\n---\n\nname: not front matter\n---\nÜnïcode ✓"
    front = {"name": "rt", "description": "Quotes 'and: colons' — dashes"}
    path = write(tmp_path / "rt", render_skill_md(front, body))
    skill = read_skill(path, "user", "user")
    assert skill.body == body
    assert skill.description == front["description"]
    assert skill.name == "rt"
