"""Helpers with no pegboard imports: atomic writes, path facts, pegboard's folders, redaction."""
