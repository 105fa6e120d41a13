"""``python -m server`` is ``threadline serve`` (``python -m server serve ...`` too)."""

import sys

from server.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(args if args[:1] == ["serve"] else ["serve", *args]))
