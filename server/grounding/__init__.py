"""Editor grounding: the client's language features as tools, and diagnostics after edits."""
