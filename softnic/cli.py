"""The ``softnic`` command: ``softnic compile`` (p4c-bm2-ss), ``softnic run`` (simple_switch_grpc),
``softnic xdp`` (the xdp back end on its own).

Each subcommand owns its own option parser and is imported only when chosen, so
``softnic compile`` does not pay for loading gRPC and ``softnic run`` does not load the
compiler. The arguments after the subcommand are passed through untouched, because each
subcommand mimics a real tool's command line that a generic parser would get wrong (e.g.
``simple_switch_grpc``'s ``--`` separator).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module, metadata

# subcommand -> (module, one-line summary); the module exposes main(argv: list[str]) -> int
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "compile": (
        "softnic.compiler.driver",
        "compile a P4_16 v1model program to BMv2 JSON + P4Info (like p4c-bm2-ss)",
    ),
    "run": (
        "softnic.runtime.cli_run",
        "run a BMv2 JSON program with a P4Runtime server (like simple_switch_grpc)",
    ),
    "xdp": (
        "softnic.compiler.xdp.cli",
        "translate a BMv2 JSON program to eBPF C for XDP (and compile it with clang)",
    ),
}


def usage() -> str:
    lines = [
        "usage: softnic [--help] [--version] <command> [<args>]",
        "",
        "softnic: a software P4 toolchain and v1model target, drop-in for p4c-bm2-ss and",
        "simple_switch_grpc.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<9} {summary}" for name, (_, summary) in SUBCOMMANDS.items()]
    lines += ["", "Run 'softnic <command> --help' for the options of a command."]
    return "\n".join(lines)


def version() -> str:
    try:
        return f"softnic {metadata.version('p4cache')}"
    except metadata.PackageNotFoundError:
        return "softnic (version unknown)"


def load_subcommand(name: str) -> Callable[[list[str]], int]:
    module_name, _ = SUBCOMMANDS[name]
    entry: Callable[[list[str]], int] = import_module(module_name).main
    return entry


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(usage(), file=sys.stderr)
        return 1
    first, rest = argv[0], argv[1:]
    if first in ("-h", "--help", "help"):
        print(usage())
        return 0
    if first in ("-V", "--version"):
        print(version())
        return 0
    if first not in SUBCOMMANDS:
        print(f"softnic: error: unknown command '{first}'\n\n{usage()}", file=sys.stderr)
        return 1
    return load_subcommand(first)(rest)


if __name__ == "__main__":
    sys.exit(main())
