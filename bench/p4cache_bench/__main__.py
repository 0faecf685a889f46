"""``python -m p4cache_bench NAME [args]``: the same as ``p4cache-bench NAME [args]``."""

import sys

from p4cache_bench.cli import main

sys.exit(main())
