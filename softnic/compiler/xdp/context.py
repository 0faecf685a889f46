"""What every stage of the xdp back end shares while generating one program."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.xdp.expr import ExprC
from softnic.compiler.xdp.tables import TableSpec
from softnic.compiler.xdp.words import Words, build_words, limbs
from softnic.runtime.loader import Program


def indent(lines: list[str], levels: int = 1) -> list[str]:
    pad = "    " * levels
    return [pad + ln if ln else ln for ln in lines]


_COMMENT_SAFE = re.compile(r"[^A-Za-z0-9_.\[\]$ -]")


@dataclass
class RegisterSpec:
    name: str
    cname: str
    size: int
    width: int


@dataclass
class CounterSpec:
    name: str
    cname: str
    size: int


@dataclass
class DigestSpec:
    lid: int
    name: str
    fields: list[tuple[str, int, int]]  # (field name, slot, width)

    @property
    def words(self) -> int:
        return sum(limbs(w) for _, _, w in self.fields)


@dataclass
class Gen:
    p: Program
    source: str  # the JSON's file name, for messages
    drop_port: int
    cpu_port: int | None
    ctrl_in: str | None  # header type of the packet_in controller header
    w: Words = field(init=False)
    ex: ExprC = field(init=False)
    tables: dict[str, TableSpec] = field(default_factory=dict)
    registers: dict[str, RegisterSpec] = field(default_factory=dict)
    counters: dict[str, CounterSpec] = field(default_factory=dict)
    digests: dict[int, DigestSpec] = field(default_factory=dict)
    calc_bytes: int = 8  # the largest calculation input, in bytes
    param_words: int = 1  # the largest action parameter list, in words
    key_bytes: int = 8  # the largest table key, in bytes
    uses_exit: bool = False
    parser_init: int = 0
    parser_nloop: int = 1
    parser_states: int = 1
    search_fns: list[str] = field(default_factory=list)  # bpf_loop callbacks of SEARCH tables
    hash_fns: dict[str, str] = field(default_factory=dict)  # calculation -> C function
    action_fns: dict[int, str] = field(default_factory=dict)  # action id -> C function
    helpers: list[str] = field(default_factory=list)  # C functions emitted before the program
    ids: int = 0

    def __post_init__(self) -> None:
        self.lay = self.p.layout
        self.w = build_words(self.lay)
        self.ex = ExprC(self.p, self.w)

    def fresh(self, hint: str) -> str:
        self.ids += 1
        return f"{hint}{self.ids}"

    @staticmethod
    def comment(text: Any) -> str:
        """A JSON name made safe to sit inside a C comment (no '*/', no newlines)."""
        return _COMMENT_SAFE.sub("_", str(text))[:80]

    def sm(self, name: str) -> int:
        """Word of a standard_metadata field."""
        return self.w.of(self.lay.sm[name])
