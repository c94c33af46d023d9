"""The subtasks plugin."""
