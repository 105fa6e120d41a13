"""What a session takes from its folder: the path walk that confines the file tools, the frozen context (AGENTS.md, rules, skills), the system prompt and the slash commands."""
