"""The pegboard command line (the public part is pegboard.cli)."""
