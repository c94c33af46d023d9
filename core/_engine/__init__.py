"""Toolboxes, sessions, the call pipeline and the permission engine."""
