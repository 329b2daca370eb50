"""`python -m cp.cli` is `cplane`."""

import sys

from cp.cli import main

sys.exit(main())
