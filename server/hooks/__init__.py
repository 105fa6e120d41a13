"""Hooks: user and project commands run around every tool call, prompt, compaction and turn end
(SPEC B-HOOK-1). ``config`` reads them, ``run`` runs one, ``service`` decides which a session gets and records
every run."""
