"""The agent: turns, the query loop, approvals and request views."""
