"""``python -m server`` is ``threadline serve`` (``python -m server serve ...`` too; ``python -m server acp`` is
``threadline acp``; ``daemon`` and ``connect`` are those commands)."""

import sys

from server.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(args if args[:1] in (["serve"], ["acp"], ["daemon"], ["connect"]) else ["serve", *args]))
