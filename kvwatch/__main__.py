"""`python -m kvwatch`: the same entry point as the `kvwatch` console script."""

import sys

from kvwatch.cli import main

sys.exit(main())
