"""The subtasks plugin."""

PEGBOARD_API = "1.0"

