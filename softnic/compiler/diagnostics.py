"""The compiler's diagnostics: errors that stop a compile and warnings that do not, printed the
way p4c prints them. Every stage raises its errors through :func:`error` (the one place a
:class:`CompileError` is built from a node or a position).

An error is a :class:`CompileError` carrying a source position, printed as
``file:line:col: error: message``. Warnings are collected while compiling and handed back to the
caller, which decides how to show them (``softnic compile`` prints them on stderr, as
p4c-bm2-ss does, and still exits 0).

p4c's form (lib/error_message.cpp, lib/source_file.cpp), which :func:`render_diagnostic` writes::

    file.p4(21): [--Wwarn=mismatch] warning: T: size 24 specified for table with constant entries
        table t {
              ^
    file.p4(56)
            size = 24;
                   ^^

The first line names the first source position the message is about, the warning's class (the
name ``-Wdisable=<kind>`` takes) and the message; then that position's source line with carets
under the construct; then each further position the message names, as ``file(line)``, its line
and its carets. A diagnostic without a position is just ``[--Wwarn=kind] warning: message``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Loc:
    """A source position, ``file:line:col`` (columns from 1, as p4c counts them). Every syntax
    tree node carries one (``ir.ast.Node.loc``), so any stage can point at the user's code."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Located(Protocol):
    """Anything with a source position: every syntax tree node."""

    loc: Loc


class CompileError(Exception):
    """A user error in the P4 program (or an unsupported construct), with its source position."""

    def __init__(self, loc: Loc | None, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message

    def __str__(self) -> str:
        if self.loc is None:
            return f"error: {self.message}"
        return f"{self.loc}: error: {self.message}"


def error(where: Located | Loc | None, message: str) -> CompileError:
    """The error ``message`` about the node or source position ``where`` (None: the program as a
    whole); use as ``raise error(node, "...")``."""
    loc = where if where is None or isinstance(where, Loc) else where.loc
    return CompileError(loc, message)

# A width that means "the token that starts there": a name, a number (``32w0x18``) or a string,
# which is what p4c underlines for a declaration's name, a literal or a path.
TOKEN = 0
_TOKEN = re.compile(r'[A-Za-z_0-9][A-Za-z_0-9]*|"(?:[^"\\]|\\.)*"')


@dataclass(frozen=True)
class Mark:
    """A source position a diagnostic underlines: where a construct starts and how many
    characters of its first line the carets cover (:data:`TOKEN`: the token there)."""

    loc: Loc
    width: int = 1


@dataclass(frozen=True)
class CompileWarning:
    """A warning about the construct at ``loc`` (``width`` characters long).

    ``kind`` is p4c's class for it (``unsupported``, ``mismatch``, ``overflow``,
    ``deprecated``...), shown as ``[--Wwarn=<kind>]``; ``more`` are the further constructs the
    message names, printed after it as p4c does.
    """

    loc: Loc | None
    message: str
    kind: str | None = None
    width: int = 1
    more: tuple[Mark, ...] = ()

    def marks(self) -> tuple[Mark, ...]:
        first = () if self.loc is None else (Mark(self.loc, self.width),)
        return first + self.more

    def __str__(self) -> str:
        """The first line of the diagnostic, as p4c prints it."""
        prefix = f"[--Wwarn={self.kind}] warning: " if self.kind else "warning: "
        where = f"{position(self.loc)}: " if _known(self.loc) else ""
        return where + prefix + self.message


def position(loc: Loc) -> str:
    """p4c's ``file(line)``."""
    return f"{loc.file}({loc.line})"


def _known(loc: Loc | None) -> bool:
    return loc is not None and loc.line > 0


def source_fragment(mark: Mark, lines: dict[str, list[str] | None]) -> list[str]:
    """The source line of ``mark`` and the carets under it (p4c's getSourceFragment: blanks
    and tabs before the construct are kept so the carets line up; at least one caret).
    ``lines`` caches each file's lines; an unreadable file or line gives nothing."""
    loc = mark.loc
    if loc.file not in lines:
        try:
            text = Path(loc.file).read_text(encoding="utf-8", errors="replace")
            lines[loc.file] = text.splitlines()
        except OSError:
            lines[loc.file] = None
    src = lines[loc.file]
    if src is None or not 0 < loc.line <= len(src):
        return []
    line = src[loc.line - 1]
    start = min(max(loc.col - 1, 0), len(line))
    width = mark.width
    if width == TOKEN:
        token = _TOKEN.match(line, start)
        width = len(token.group()) if token else 1
    pad = "".join(ch if ch in " \t" else " " for ch in line[:start])
    return [line, pad + "^" * max(width, 1)]


def render_diagnostic(w: CompileWarning) -> str:
    """The whole diagnostic as p4c prints it (without the final newline)."""
    lines: dict[str, list[str] | None] = {}
    out = [str(w)]
    for i, mark in enumerate(w.marks()):
        if not _known(mark.loc):
            continue
        if i > 0:
            out.append(position(mark.loc))
        out.extend(source_fragment(mark, lines))
    return "\n".join(out)
