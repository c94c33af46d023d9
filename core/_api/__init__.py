"""The contract plugins and hosts see: hook specifications, tools, decisions, checks, records.

Nothing here names an engine, loading or services module, not even for type hints."""
