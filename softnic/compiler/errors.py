"""Compile errors, printed the way p4c prints them: ``file:line:col: error: message``."""

from __future__ import annotations

from softnic.compiler.ir.ast import Loc


class CompileError(Exception):
    """A user error in the P4 program (or an unsupported construct). Carries a source location."""

    def __init__(self, loc: Loc | None, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message

    def __str__(self) -> str:
        if self.loc is None:
            return f"error: {self.message}"
        return f"{self.loc}: error: {self.message}"


def error(loc: Loc | None, message: str) -> CompileError:
    """Build a CompileError; use as ``raise error(node.loc, "...")``."""
    return CompileError(loc, message)
