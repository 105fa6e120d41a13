"""``python -m server`` is ``threadline serve`` (``python -m server serve ...`` too; ``python -m server acp`` is
``threadline acp``)."""

import sys

from server.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(args if args[:1] in (["serve"], ["acp"]) else ["serve", *args]))
