"""The console scripts of the distribution, each behind the extra its role needs.

``pip install p4cache`` alone installs no third-party package: that is the host agent's install
(``p4cache-agent``, which needs only the standard library). Every other command lives behind an
extra (docs/packaging.md). When a command's extra is missing, the command says so in one line
and exits with 1, instead of a traceback:

    p4cache-bench needs the [bench] extra (no module named 'matplotlib'):
    pip install 'p4cache[bench]'

Only the standard library is imported here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

# Top-level modules the extras bring. A missing module outside this set is a bug, not a
# missing extra, and keeps its traceback.
EXTRA_MODULES = frozenset({
    "grpc", "google", "p4", "p4runtime_sh", "rich", "matplotlib", "mininet", "scapy", "ptf",
})


def run(command: str, extra: str, target: str) -> int:
    """Run ``target`` (``module:function``, called with no arguments) as ``command``; if a
    module of ``extra`` is missing, print which extra to install and return 1."""
    module_name, _, function = target.partition(":")
    try:
        main: Callable[[], int | None] = getattr(importlib.import_module(module_name), function)
        return main() or 0
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] not in EXTRA_MODULES:
            raise
        print(f"{command} needs the [{extra}] extra (no module named {e.name!r}): "
              f"pip install 'p4cache[{extra}]'", file=sys.stderr)
        return 1


def _script(command: str, extra: str, target: str) -> Callable[[], int]:
    def entry() -> int:
        return run(command, extra, target)

    entry.__name__ = command.replace("-", "_")
    entry.__doc__ = f"``{command}`` (needs the [{extra}] extra)."
    return entry


softnic = _script("softnic", "softnic", "softnic.cli:main")
controller = _script("p4cache-controller", "controller", "p4cache.controller.cli:main")
system = _script("p4cache", "lab", "p4cache.cli:main")
bench = _script("p4cache-bench", "bench", "p4cache_bench.cli:main")
