"""Deciding a call: rules, votes, the policy, protected paths, previews."""
