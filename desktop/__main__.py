"""`python -m desktop`: the same window as `brim` with no subcommand."""

import sys

from desktop.app import main

sys.exit(main())
