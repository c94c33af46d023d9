"""Issue 33, item 9 (6 of the brief): an error that quotes a rule quotes it
once, also when the plugin's matcher names the rule itself (as the tutorial's
did: ``raise ValueError(f"{rule.text}: ...")``)."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from pegboard import ConfigError, Tool, hookimpl


class Tickets:
    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        register(Tool(name="TicketClose", handler=lambda args, ctx: "closed", description="Closes a ticket.",
                      input_schema={"type": "object", "properties": {"id": {"type": "string"}}}))

    @hookimpl
    def pegboard_rule_matcher(self, rule: Any, context: Any) -> Any:
        if rule.tool != "TicketClose" or rule.specifier is None:
            return None
        raise ValueError(f"{rule.text}: name a ticket prefix in capitals and a dash, like TicketClose(WEB-)")


@pytest.fixture
def pegboard_plugins() -> dict[str, object]:
    return {"tickets": Tickets()}


def test_the_rule_is_quoted_once(pegboard_load: Callable[..., Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        pegboard_load(config='[permissions]\ndeny = ["TicketClose(WEB)"]\n')
    message = str(raised.value)
    assert "deny: rule 'TicketClose(WEB)': name a ticket prefix in capitals" in message, message
    assert message.count("TicketClose(WEB)") == 1, message
