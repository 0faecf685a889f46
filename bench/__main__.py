"""``python -m bench NAME [args]``: the same as ``p4cache-bench NAME [args]``."""

import sys

from bench.cli import main

sys.exit(main())
