"""``python -m desktop_agent``: the same entry point as the ``desktop-agent`` command."""

import sys

from desktop_agent.cli import main

if __name__ == "__main__":
    sys.exit(main())
