"""Compile a loaded :class:`Program` into Python functions, once, at load time.

Every parser state, action, conditional, table key, checksum and the deparser becomes a small
specialised Python function whose source is generated from the JSON and ``exec``-ed once. The
per-packet path therefore never looks at a JSON dict: field accesses are ``F[<const>]``, header
extraction is one ``int.from_bytes`` plus shifts and masks, deparsing one ``to_bytes`` per header.

The parser is generated twice: a fast version and one that reports each step to a trace
callback (``T``), so tracing costs nothing when it is off.

The work is split by program part: ``gen_parser`` (parse states, transitions, loop bound),
``gen_actions`` (actions and primitives), ``gen_deparse`` (calculations, checksums, deparser),
all sharing ``gen_base``; this module joins them and executes the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.externs import CounterArray, MeterArray, RegisterArray
from softnic.runtime.gen_actions import ActionGen, ActionInfo
from softnic.runtime.gen_base import DROP_PORT
from softnic.runtime.gen_deparse import DeparseGen
from softnic.runtime.gen_parser import PARSER_STEPS_BASE, PARSER_STEPS_PER_BYTE, ParserGen
from softnic.runtime.loader import Program

__all__ = ["DROP_PORT", "PARSER_STEPS_BASE", "PARSER_STEPS_PER_BYTE", "ActionInfo", "CodeGen",
           "Compiled", "compile_program"]


@dataclass
class Compiled:
    parser_init: Callable
    parser_init_traced: Callable
    traced_env: dict
    actions: dict[int, ActionInfo]
    deparse: Callable[[list[int]], bytes]
    packers: dict[str, Callable[[list[int]], bytes]]
    deparse_order: list[str]
    verify_checksums: Callable | None
    update_checksums: Callable | None
    conditions: dict[str, Callable]
    key_fns: dict[str, tuple[Callable, Callable]]  # table -> (tuple key fn, int key fn)
    registers: dict[str, RegisterArray]
    counters: dict[str, CounterArray]
    meters: dict[str, MeterArray]
    hashes: dict[str, Callable] = field(default_factory=dict)
    # The program changes header validity with add/remove_header or writes packet_length, so
    # egress must start from the length register rather than the ingress packet_length value.
    track_len: bool = False



class CodeGen(ParserGen, ActionGen, DeparseGen):
    """The whole generator: the part mixins plus conditions and table keys."""

    # -- conditions and table keys -----------------------------------------------------------
    def condition(self, c: dict) -> str:
        fname = f"_cond_{c.get('id', len(self.src))}_{len(self.src)}"
        expr = self.eg.data(c.get("expression"), f"conditional '{c.get('name')}'")
        self.src += [f"def {fname}(F):", f"    return {expr}", ""]
        return fname

    def table_key(self, t: dict) -> tuple[str, str, list[int]]:
        where = f"table '{t.get('name')}'"
        srcs = []
        widths = []
        for k in t.get("key") or []:
            if not isinstance(k, dict):
                raise PipelineLoadError(f"{where}: malformed key {k!r}")
            mt = k.get("match_type")
            if mt == "valid":
                h = self.lay.header(k.get("target"))
                src, w = f"F[{h.valid_slot}]", 1
            elif mt in ("exact", "lpm", "ternary", "range", "optional"):
                src, w = self.slot_source({"type": "field", "value": k.get("target")}, where)
            else:
                raise PipelineLoadError(f"{where}: unsupported match type {mt!r}")
            if k.get("mask") is not None:
                src = f"({src} & {hexint(k['mask'], where)})"
            srcs.append(src)
            widths.append(w)
        tid = f"{t.get('id')}_{len(self.src)}"
        tup = f"_ktup_{tid}"
        kint = f"_kint_{tid}"
        self.src += [f"def {tup}(F):", f"    return ({', '.join(srcs)}{',' if srcs else ''})", ""]
        parts = []
        shift = 0
        for src, w in zip(reversed(srcs), reversed(widths), strict=True):
            parts.append(f"({src} << {shift})" if shift else src)
            shift += w
        self.src += [f"def {kint}(F):", f"    return {' | '.join(parts) if parts else '0'}", ""]
        return tup, kint, widths


def compile_program(prog: Program) -> tuple[Compiled, CodeGen, dict[str, Any]]:
    """Generate and exec all code; returns the compiled callables and the live environment."""
    g = CodeGen(prog)
    actions = {aid: g.action(a) for aid, a in prog.actions_by_id.items()}
    g.deparser()
    verify, update = g.checksums()
    init_fast = g.parser(traced=False)
    fast_src_len = len(g.src)
    conds: dict[str, str] = {}
    keys: dict[str, tuple[str, str]] = {}
    for pl in prog.json["pipelines"]:
        for c in pl.get("conditionals") or []:
            conds[c.get("name")] = g.condition(c)
        for t in pl.get("tables") or []:
            tup, kint, _ = g.table_key(t)
            keys[t.get("name")] = (tup, kint)
    source = "\n".join(g.src[:fast_src_len] + g.src[fast_src_len:])
    env = g.env
    try:
        exec(compile(source, "<softnic-pipeline>", "exec"), env)  # noqa: S102
    except SyntaxError as e:  # a bug in codegen, but still a load-time failure
        raise PipelineLoadError(f"internal code generation error: {e}") from e
    # The traced parser lives in its own module so that its ``T`` global can be swapped.
    g.src = []
    init_traced = g.parser(traced=True)
    tenv = dict(env)
    tenv["T"] = print
    exec(compile("\n".join(g.src), "<softnic-parser-traced>", "exec"), tenv)  # noqa: S102
    for a in actions.values():
        a.fn = env[a.fn]  # type: ignore[index]
    comp = Compiled(
        parser_init=env[init_fast], parser_init_traced=tenv[init_traced], traced_env=tenv,
        actions=actions, deparse=env["_deparse"],
        packers={h: env[f] for h, f in g.packer_exprs.items()}, deparse_order=g.deparse_order,
        verify_checksums=env[verify] if verify else None,
        update_checksums=env[update] if update else None,
        conditions={n: env[f] for n, f in conds.items()},
        key_fns={n: (env[a], env[b]) for n, (a, b) in keys.items()},
        registers=g.registers, counters=g.counters, meters=g.meters,
        track_len=g.len_changes or g.sm_plen in g.eg.written)
    return comp, g, env
