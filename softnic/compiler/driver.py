"""``softnic compile``: the command line of our stand-in for ``p4c-bm2-ss``.

It accepts the p4c-bm2-ss options that build scripts use (``-o``, ``--p4runtime-files``, the
older ``--p4runtime-file``/``--p4runtime-format`` pair, ``-I``, ``-D``, ``--arch``, ``--std``),
so Makefiles written for p4c (p4lang/tutorials, ONOS) work by swapping the program name.

All outputs are produced in memory first and only then written (each through a temporary file
and a rename): a failed compile leaves no partial or stale-looking output behind.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import NoReturn, TextIO

from softnic.compiler.diagnostics import (
    CompileError,
    CompileWarning,
    Mark,
    render_diagnostic,
    source_fragment,
)
from softnic.compiler.p4info.resources import ProgramResources
from softnic.compiler.p4info.serialize import (
    FORMATS,
    P4InfoFormatError,
    build_p4info,
    format_for_path,
    serialize_p4info,
    write_atomically,
)

PROG = "softnic compile"
P4C_VERSION = (1, 2, 4)  # the p4c release whose behaviour we follow (see FIDELITY.md)
ARCHES = ("v1model",)
STDS = {"p4-16": "p4-16", "p4_16": "p4-16", "16": "p4-16"}
TARGETS = ("bmv2", "bmv2-ss")


class UsageError(Exception):
    """A bad command line; reported as ``softnic compile: error: ...`` with exit code 1."""

    def __init__(self, message: str, show_usage: bool = False) -> None:
        super().__init__(message)
        self.show_usage = show_usage


class _Parser(argparse.ArgumentParser):
    """argparse exits with status 2 on errors; p4c exits with 1, so we raise instead."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, show_usage=True)


@dataclass
class OutputFile:
    path: Path
    fmt: str  # "bmv2-json" or a P4Info format ("text", "json", "binary")


def version_string() -> str:
    try:
        ours = metadata.version("p4cache")
    except metadata.PackageNotFoundError:
        ours = "unknown"
    p4c = ".".join(map(str, P4C_VERSION))
    return f"softnic compile {ours} (command-line compatible with p4c-bm2-ss {p4c})"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Compile a P4_16 v1model program to BMv2 JSON and P4Info "
        "(a drop-in for p4c-bm2-ss for the subset softnic supports).",
    )
    p.add_argument("source", metavar="PROG.p4", help="P4_16 source file")
    p.add_argument(
        "-o",
        "--output",
        dest="output",
        metavar="OUT.json",
        help="BMv2 JSON output file; as with p4c-bm2-ss, no JSON is written without it",
    )
    p.add_argument(
        "--p4runtime-files",
        metavar="F1[,F2...]",
        help="write the P4Info to each file; format by suffix (as p4c-bm2-ss 1.2.4): .txt text, "
        ".json JSON, .bin binary",
    )
    p.add_argument(
        "--p4runtime-file",
        metavar="FILE",
        help="(deprecated p4c option) write the P4Info to FILE in --p4runtime-format",
    )
    p.add_argument(
        "--p4runtime-format",
        choices=FORMATS,
        default="binary",
        help="format for --p4runtime-file (default: binary, as p4c)",
    )
    p.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="add DIR to the #include search path",
    )
    p.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME[=VAL]",
        help="define a preprocessor macro (VAL defaults to 1)",
    )
    p.add_argument("--arch", default="v1model", help="architecture (only v1model)")
    p.add_argument("--std", default="p4-16", help="language standard (only p4-16)")
    p.add_argument("--p4v", dest="p4v", default=None, help="language version (only 16)")
    p.add_argument("--target", default="bmv2", help="target (only bmv2)")
    p.add_argument("-v", dest="verbose", action="count", default=0, help="verbose output")
    p.add_argument("--version", action="version", version=version_string())
    return p


def parse_defines(items: list[str]) -> dict[str, str]:
    """``-D NAME[=VAL]`` options as a dict. The macros p4c-bm2-ss predefines
    (``__TARGET_BMV2__``, ``__p4c__``...) are added by the preprocessor step, and a ``-D``
    of the same name overrides them there."""
    macros: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not name.isidentifier():
            raise UsageError(f"-D {item}: '{name}' is not a valid macro name")
        macros[name] = value if sep else "1"
    return macros


def check_language(args: argparse.Namespace) -> None:
    if args.arch not in ARCHES:
        raise UsageError(
            f"--arch {args.arch}: unsupported architecture; softnic compiles only "
            + ", ".join(ARCHES)
        )
    if STDS.get(args.std) is None:
        raise UsageError(f"--std {args.std}: unsupported language standard; use p4-16")
    if args.p4v is not None and STDS.get(args.p4v) is None:
        raise UsageError(f"--p4v {args.p4v}: unsupported language version; use 16")
    if args.target not in TARGETS:
        raise UsageError(f"--target {args.target}: unsupported target; use bmv2")


def planned_outputs(args: argparse.Namespace) -> list[OutputFile]:
    """The files named by ``-o`` and ``--p4runtime-file``, with their formats, checked before
    compiling (``--p4runtime-files`` come after the front end: :func:`p4runtime_outputs`)."""
    outputs: list[OutputFile] = []
    if args.output:
        outputs.append(OutputFile(Path(args.output), "bmv2-json"))
    if args.p4runtime_file:
        outputs.append(OutputFile(Path(args.p4runtime_file), args.p4runtime_format))
    return check_writable(outputs)


def check_writable(outputs: list[OutputFile]) -> list[OutputFile]:
    for out in outputs:
        if not out.path.parent.is_dir():
            raise UsageError(f"{out.path}: cannot open file: directory does not exist")
        if out.path.is_dir():
            raise UsageError(f"{out.path}: is a directory; give a file name")
    return outputs


def p4runtime_outputs(args: argparse.Namespace) -> list[OutputFile]:
    """The ``--p4runtime-files`` list, each file with the format its suffix names.
    Raises :class:`P4InfoFormatError` for a name p4c-bm2-ss 1.2.4 cannot place."""
    if not args.p4runtime_files:  # p4c-bm2-ss writes no P4Info for an empty list
        return []
    return check_writable([OutputFile(Path(name), format_for_path(name))
                           for name in args.p4runtime_files.split(",")])


def render_error(err: CompileError | CompileWarning) -> str:
    """An error as ``file:line:col: error: msg``, then (when the file is readable) the line
    and a caret; a warning as p4c prints it (:func:`render_diagnostic`)."""
    if isinstance(err, CompileWarning):
        return render_diagnostic(err)
    loc = err.loc
    if loc is None or loc.line <= 0:
        return str(err)
    return "\n".join([str(err), *source_fragment(Mark(loc), {})])


def compile_program(
    args: argparse.Namespace, defines: dict[str, str], warnings: list[CompileWarning],
    after_front_end: Callable[[], None],
) -> tuple[dict, ProgramResources]:
    """Run the compiler; imported lazily so ``--help`` and usage errors stay fast."""
    from softnic.compiler.compile import compile_file

    return compile_file(args.source, include_dirs=tuple(args.include_dirs), defines=defines,
                        warnings=warnings, after_front_end=after_front_end)


class WarningPrinter:
    """Prints the compile's warnings as they become final, each once: p4c-bm2-ss prints the
    front end's before it checks the P4Runtime file names, the rest when the compile ends."""

    def __init__(self, stderr: TextIO) -> None:
        self.stderr = stderr
        self.warnings: list[CompileWarning] = []
        self.printed = 0

    def flush(self) -> None:
        for w in self.warnings[self.printed:]:
            print(render_error(w), file=self.stderr)
        self.printed = len(self.warnings)


def run(args: argparse.Namespace, stderr: TextIO) -> int:
    check_language(args)
    outputs = planned_outputs(args)
    defines = parse_defines(args.defines)
    if not Path(args.source).is_file():
        print(f"{args.source}: error: No such file or directory", file=stderr)
        return 1
    started = time.perf_counter()
    printer = WarningPrinter(stderr)

    def front_end_done() -> None:
        # p4c-bm2-ss: the front end's warnings, then the P4Runtime file names are read (an
        # unknown suffix ends the compile there, nothing written), then the mid end runs
        printer.flush()
        outputs.extend(p4runtime_outputs(args))

    bmv2_json, resources = compile_program(args, defines, printer.warnings, front_end_done)
    # Like p4c, warnings go to stderr as soon as they are known; they never fail the compile.
    printer.flush()
    p4info = build_p4info(resources)
    contents: list[tuple[Path, bytes]] = []
    for out in outputs:
        if out.fmt == "bmv2-json":
            data = (json.dumps(bmv2_json, indent=2) + "\n").encode("utf-8")
        else:
            data = serialize_p4info(p4info, out.fmt)
        contents.append((out.path, data))
    for path, data in contents:
        write_atomically(path, data)
    if args.verbose:
        ms = (time.perf_counter() - started) * 1000
        print(f"{PROG}: compiled {args.source} in {ms:.0f} ms", file=stderr)
        for path, _ in contents:
            print(f"{PROG}: wrote {path}", file=stderr)
    return 0


def main(argv: list[str] | None = None, stderr: TextIO | None = None) -> int:
    """Entry point of ``softnic compile``; returns the process exit code (0 ok, 1 error)."""
    err = stderr if stderr is not None else sys.stderr
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    verbose = False
    try:
        args = parser.parse_args(argv)
        verbose = bool(args.verbose)
        return run(args, err)
    except SystemExit as e:  # --help / --version
        return e.code if isinstance(e.code, int) else 0
    except UsageError as e:
        if e.show_usage:
            print(parser.format_usage().rstrip(), file=err)
        print(f"{PROG}: error: {e}", file=err)
        return 1
    except CompileError as e:
        print(render_error(e), file=err)
        return 1
    except P4InfoFormatError as e:
        # p4c-bm2-ss's own wording and class ([--Werror=unknown]); exit status 1, no output
        print(f"[--Werror=unknown] error: {e}", file=err)
        return 1
    except OSError as e:
        print(f"{PROG}: error: {e}", file=err)
        return 1
    except Exception as e:  # a compiler bug must still exit with 1
        print(f"{PROG}: internal compiler error: {type(e).__name__}: {e}", file=err)
        if verbose:
            traceback.print_exc(file=err)
        return 1
