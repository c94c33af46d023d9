"""Adapters that hand a session's tools to agent frameworks, permission
engine included: ``pegboard.integrations.pydantic_ai``, ``.openai_agents``,
``.langchain`` and ``.claude_agent_sdk``.

Each imports its framework only when imported itself, so ``import pegboard``
never pays for one; install the framework with its extra
(``pip install 'pegboard[pydantic-ai]'`` and so on). See docs/embedding.md.
"""
