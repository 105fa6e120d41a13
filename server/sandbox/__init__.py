"""The OS sandbox for commands (SPEC section 15, B-SBX-1..3); see docs/SANDBOX.md.

This package's ``policy``, ``landlock``, ``linux``, ``contain`` and ``launch`` modules are stdlib only: they run
in the launcher and the keeper (fresh interpreters started without site-packages) and between fork and exec.
Keep this file free of imports.
"""
