"""Compile a loaded :class:`Program` into Python functions, once, at load time.

Every parser state, action, conditional, table key, checksum and the deparser becomes a small
specialised Python function whose source is generated from the JSON and ``exec``-ed once. The
per-packet path therefore never looks at a JSON dict: field accesses are ``F[<const>]``, header
extraction is one ``int.from_bytes`` plus shifts and masks, deparsing one ``to_bytes`` per header.

The parser is generated twice: a fast version and one that reports each step to a trace
callback (``T``), so tracing costs nothing when it is off.

The work is split by program part: ``gen_parser`` (parse states, transitions, loop bound),
``gen_actions`` (actions; ``primitives`` is the registry of primitive generators),
``gen_deparse`` (calculations, checksums, deparser), all sharing one ``gen_base.GenContext``;
this module adds conditions and table keys, has ``gen_check`` verify the whole source, and only
then executes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.externs import CounterArray, MeterArray, RegisterArray
from softnic.runtime.gen_actions import ActionGen, ActionInfo
from softnic.runtime.gen_base import DROP_PORT, GenContext
from softnic.runtime.gen_check import check_source
from softnic.runtime.gen_deparse import DeparseGen
from softnic.runtime.gen_parser import PARSER_STEPS_BASE, PARSER_STEPS_PER_BYTE, ParserGen
from softnic.runtime.loader import Program

__all__ = ["DROP_PORT", "PARSER_STEPS_BASE", "PARSER_STEPS_PER_BYTE", "ActionInfo", "Compiled",
           "compile_program"]


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
    # For gen_control_block: each condition function's expression (source over ``F``), and the
    # namespace the generated code runs in (the names those expressions use).
    cond_exprs: dict[Callable, str] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    # The program changes header validity with add/remove_header or writes packet_length, so
    # egress must start from the length register rather than the ingress packet_length value.
    track_len: bool = False


def condition(ctx: GenContext, c: dict) -> str:
    fname = ctx.fresh("cond")
    expr = ctx.eg.data(c.get("expression"), f"conditional {c.get('name')!r}")
    ctx.src += [f"def {fname}(F):", f"    return {expr}", ""]
    ctx.cond_exprs[fname] = expr
    return fname


def table_key(ctx: GenContext, t: dict) -> tuple[str, str]:
    """Functions computing the table's lookup key from ``F``: as a tuple, and packed in an int."""
    where = f"table {t.get('name')!r}"
    srcs = []
    widths = []
    for k in t.get("key") or []:
        if not isinstance(k, dict):
            raise PipelineLoadError(f"{where}: malformed key {k!r}")
        mt = k.get("match_type")
        if mt == "valid":
            h = ctx.lay.header(k.get("target"))
            src, w = f"F[{h.valid_slot}]", 1
        elif mt in ("exact", "lpm", "ternary", "range", "optional"):
            src, w = ctx.slot_source({"type": "field", "value": k.get("target")}, where)
        else:
            raise PipelineLoadError(f"{where}: unsupported match type {mt!r}")
        if k.get("mask") is not None:
            src = f"({src} & {hexint(k['mask'], where)})"
        srcs.append(src)
        widths.append(w)
    tup, kint = ctx.fresh("ktup"), ctx.fresh("kint")
    ctx.src += [f"def {tup}(F):", f"    return ({', '.join(srcs)}{',' if srcs else ''})", ""]
    parts = []
    shift = 0
    for src, w in zip(reversed(srcs), reversed(widths), strict=True):
        parts.append(f"({src} << {shift})" if shift else src)
        shift += w
    ctx.src += [f"def {kint}(F):", f"    return {' | '.join(parts) if parts else '0'}", ""]
    return tup, kint


def _run(ctx: GenContext, label: str, env: dict[str, Any]) -> None:
    """Verify the generated source (``gen_check``), then execute it into ``env``."""
    source = "\n".join(ctx.src)
    tree = check_source(source, set(env) | ctx.names, label)
    try:
        exec(compile(tree, label, "exec"), env)  # noqa: S102
    except (SyntaxError, RecursionError, MemoryError) as e:  # a codegen bug; still a load error
        raise PipelineLoadError(f"internal code generation error: {type(e).__name__}: {e}") from e


def compile_program(prog: Program, drop_port: int = DROP_PORT
                    ) -> tuple[Compiled, GenContext, dict[str, Any]]:
    """Generate, verify and exec all code; returns the compiled callables and the namespace."""
    ctx = GenContext(prog, drop_port)
    ctx.calcs = dp = DeparseGen(ctx)
    actions = {aid: ActionGen(ctx).action(a) for aid, a in prog.actions_by_id.items()}
    deparse = dp.deparser()
    verify, update = dp.checksums()
    init_fast = ParserGen(ctx).parser(traced=False)
    conds: dict[str, str] = {}
    keys: dict[str, tuple[str, str]] = {}
    for pl in prog.json["pipelines"]:
        for c in pl.get("conditionals") or []:
            conds[c.get("name")] = condition(ctx, c)
        for t in pl.get("tables") or []:
            keys[t.get("name")] = table_key(ctx, t)
    env = ctx.env
    _run(ctx, "<softnic-pipeline>", env)
    # The traced parser lives in its own namespace so that its ``T`` global can be swapped.
    ctx.src = []
    init_traced = ParserGen(ctx).parser(traced=True)
    tenv = dict(env)
    tenv["T"] = print
    _run(ctx, "<softnic-parser-traced>", tenv)
    for a in actions.values():
        a.fn = env[a.fn]  # type: ignore[index]
    comp = Compiled(
        parser_init=env[init_fast], parser_init_traced=tenv[init_traced], traced_env=tenv,
        actions=actions, deparse=env[deparse],
        packers={h: env[f] for h, f in dp.packer_exprs.items()}, deparse_order=ctx.deparse_order,
        verify_checksums=env[verify] if verify else None,
        update_checksums=env[update] if update else None,
        conditions={n: env[f] for n, f in conds.items()},
        key_fns={n: (env[a], env[b]) for n, (a, b) in keys.items()},
        registers=ctx.registers, counters=ctx.counters, meters=ctx.meters,
        track_len=ctx.len_changes or ctx.sm_plen in ctx.eg.written,
        cond_exprs={env[f]: expr for f, expr in ctx.cond_exprs.items()}, env=env)
    return comp, ctx, env
