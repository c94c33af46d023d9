"""The schedule plugin."""
