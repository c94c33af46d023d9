"""Deciding a call without running it: ``Session.decide`` and the CLI's
``permissions check``. Kept apart from the pipeline so that deciding imports
no event loop (asyncio is a fair share of a cold ``permissions check``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._arguments import Refusal, as_mapping, parse_arguments, split_reserved, validate
from ._decisions import Decision, PermissionRequest
from ._tracing import tracer

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["decide_call"]


def decide_call(session: Session, name: str, arguments: Any) -> Decision:
    """The decision for a call as the pipeline reaches it before anyone is
    asked, without running anything: pegboard's own parameters taken out,
    the input validated, then the permission engine ("ask": a person, or in
    auto mode the classifier, would be consulted). A call that could not
    run is a deny whose source says why ("catalogue", "validation")."""
    toolbox = session.toolbox
    tool = toolbox.tools.get(name)
    if tool is None or session.hides(tool):
        return Decision("deny", toolbox.why_unavailable(name, session), "catalogue")
    try:
        args = parse_arguments(name, arguments)
        split_reserved(session, tool, args)
        validated, _ = validate(tool, args)
    except Refusal as refusal:
        return Decision("deny", refusal.result.text_content(), "validation")
    request = PermissionRequest(tool=tool, input=as_mapping(validated), session=session, policy=session.policy)
    found = tracer()
    if found is None:
        return toolbox.permissions.evaluate(request)
    from ._tracing import decision_span, record_decision

    with decision_span(found, name, None) as current:
        decision = toolbox.permissions.evaluate(request)
        record_decision(current, decision)
    return decision
