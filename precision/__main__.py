"""``python -m precision ...``: the same command line as the ``precision`` script."""

import sys

from precision.runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
