"""pegboard-hello's tests, on pegboard.testing's fixtures (pytest loads them
wherever pegboard is installed): each test has its own config, data and
cache folders and a project folder of its own, and the plugin is loaded
from this checkout whether or not it is installed."""

from __future__ import annotations

import json

import pytest

import pegboard_hello
from pegboard.testing import call, decide


@pytest.fixture(autouse=True)
def _isolated(pegboard_env):
    """No test reads your own pegboard config."""


@pytest.fixture
def pegboard_plugins():
    return {"hello": pegboard_hello}


def test_hello_greets(pegboard_call):
    assert pegboard_call("Hello", {"name": "Ada"}).text_content() == "Hello, Ada!"


def test_the_greeting_is_an_option(pegboard_load):
    toolbox = pegboard_load(config='[plugins.hello]\ngreeting = "Hi"\n')
    assert call(toolbox, "Hello", {"name": "Ada"}).text_content() == "Hi, Ada!"


def test_an_unknown_option_is_refused(pegboard_load):
    toolbox = pegboard_load(config="[plugins.hello]\ngretting = 'Hi'\n", strict=False)
    assert "gretting" in toolbox.records["hello"].error


def test_the_plugin_allows_itself_and_a_deny_rule_still_wins(pegboard_decide, pegboard_load):
    assert pegboard_decide("Hello", {"name": "Ada"}).decision == "allow"
    toolbox = pegboard_load(config="[permissions]\ndeny = ['Hello']\n")
    assert decide(toolbox, "Hello", {"name": "Ada"}).decision == "deny"


def test_a_missing_name_is_refused_before_anything_runs(pegboard_decide):
    refused = pegboard_decide("Hello", {})
    assert (refused.decision, refused.source) == ("deny", "validation")


def test_the_description_ships_with_the_package(pegboard_toolbox):
    tool = pegboard_toolbox.tools["Hello"]
    assert pegboard_toolbox.description(tool).startswith("Greets someone by name.")


def test_the_command_line(pegboard_cli):
    result = pegboard_cli("call", "Hello", "--input", json.dumps({"name": "Ada"}))
    assert (result.exit_code, result.stdout.strip()) == (0, "Hello, Ada!")


def test_plugins_check_passes(pegboard_check):
    report = pegboard_check("hello")
    assert report.problems == [], str(report)
