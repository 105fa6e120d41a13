"""Editor grounding (issue 34): the client's language features as tools, and diagnostics after edits."""
