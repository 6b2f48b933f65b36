"""`python -m engine.cli`: the headless command line (the window lives in the launcher)."""

import sys

from engine.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
