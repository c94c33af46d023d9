"""What the engine keeps: the store and its tables, pending calls, the audit log."""
