"""The plugin author's test kit behind pegboard.testing."""
