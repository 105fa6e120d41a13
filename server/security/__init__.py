"""Secrets and trust: the provider key's handover and redaction, the environment commands get, the [approvals] rules and the project-file approvals."""
