"""Compiler warnings: the non-fatal half of p4c's diagnostics.

Errors stop the compile (:class:`softnic.frontend.errors.CompileError`); warnings are collected
while lowering and handed back to the caller, which decides how to show them (``softnic
compile`` prints them like p4c-bm2-ss does, on stderr, and still exits 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from softnic.frontend.ast import Loc


@dataclass(frozen=True)
class CompileWarning:
    """A warning about construct at ``loc``; printed as ``file:line:col: warning: message``."""

    loc: Loc | None
    message: str

    def __str__(self) -> str:
        if self.loc is None:
            return f"warning: {self.message}"
        return f"{self.loc}: warning: {self.message}"
