"""The core's own tools (ToolSearch, the scratchpad, background tasks), as a plugin registers tools."""
