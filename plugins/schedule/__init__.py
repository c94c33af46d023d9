"""The schedule plugin."""

PEGBOARD_API = "1.0"

