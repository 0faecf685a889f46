"""Lowering of a checked v1model program to BMv2 JSON (behavioral-model docs/JSON_format.md).

:func:`lower_program` is the driver: it runs the lowering steps in order (parser, checksum
controls, ingress, egress, deparser, then the extern arrays) and assembles the JSON.
:class:`LowerContext` is the state they share, passed to every per-construct lowerer: the header
layout, the JSON's global tables (actions, calculations, learn lists, field lists, checksums),
the name and id counters and the warnings. The per-construct work lives in ``lower_parser``,
``lower_control`` (pipelines, deparser, checksums), ``lower_stmt`` and ``lower_expr``.

The P4Info is not built here: :mod:`softnic.compiler.p4info` builds it from the checked program.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.bmv2.context import LowerContext
from softnic.compiler.bmv2.layout import StructLoc
from softnic.compiler.bmv2.lower_control import ControlLowerer, lower_checksums, lower_deparser
from softnic.compiler.bmv2.lower_expr import ExprLowerer
from softnic.compiler.bmv2.lower_parser import lower_parser, parse_vsets
from softnic.compiler.bmv2.lower_stmt import source_info
from softnic.compiler.diagnostics import CompileWarning, error
from softnic.compiler.frontend.check import Checker
from softnic.compiler.frontend.v1model import top_level_instances, v1switch_blocks
from softnic.compiler.ir import ast
from softnic.compiler.ir.types import (
    EnumT,
    ExternT,
    bit_width,
    is_scalar,
)

# ---------------------------------------------------------------------- the driver


def lower_program(chk: Checker, program_name: str) -> tuple[dict[str, Any], list[CompileWarning]]:
    """Lower the program ``chk`` has checked to BMv2 JSON; returns (JSON, warnings)."""
    ctx = LowerContext(chk, program_name)
    parser_d, vck_d, ig_d, eg_d, ck_d, dep_d = v1switch_blocks(chk)
    ctx.instances.extend(top_level_instances(chk))
    # standard_metadata first, then the header struct (p4c's instance order)
    if len(parser_d.params) > 3:
        ctx.root_for(chk.decl_syms[id(parser_d.params[3])].type, parser_d.params[3], False)
    ctx.root_for(chk.decl_syms[id(parser_d.params[1])].type, parser_d.params[1], False)
    # each block's environment is made just before the block is lowered: the layout allocates
    # storage in that order
    parsers = [lower_parser(ctx, parser_d, ctx.block_env(parser_d, 2))]
    lower_checksums(ctx, vck_d, ctx.block_env(vck_d, 1), verify=True)
    ig = ControlLowerer(ctx, ig_d, ctx.block_env(ig_d, 1), "ingress").lower()
    eg = ControlLowerer(ctx, eg_d, ctx.block_env(eg_d, 1), "egress").lower()
    lower_checksums(ctx, ck_d, ctx.block_env(ck_d, 1), verify=False)
    deparsers = [lower_deparser(ctx, dep_d, ctx.block_env(dep_d, None))]
    number_pipeline_nodes([ig, eg])
    ctx.layout.finish()
    counters, meters, registers = extern_arrays(ctx)
    bmv2_json = {
        "header_types": ctx.layout.header_types,
        "headers": ctx.layout.headers,
        "header_stacks": ctx.layout.header_stacks,
        "header_union_types": ctx.layout.header_union_types,
        "header_unions": ctx.layout.header_unions,
        "header_union_stacks": ctx.layout.header_union_stacks,
        "field_lists": ctx.field_lists,
        "errors": [[e, i] for i, e in enumerate(chk.errors)],
        "enums": [],
        "parsers": parsers,
        "parse_vsets": parse_vsets(ctx, parser_d),
        "deparsers": deparsers,
        "meter_arrays": meters,
        "counter_arrays": counters,
        "register_arrays": registers,
        "calculations": ctx.calculations,
        "learn_lists": ctx.learn_lists,
        "actions": ctx.actions,
        "pipelines": [ig, eg],
        "checksums": ctx.checksums,
        "force_arith": [],
        "extern_instances": [],
        "field_aliases": field_aliases(ctx),
        "program": program_name,
        "__meta__": {"version": [2, 23], "compiler": "https://github.com/p4lang/p4c"},
    }
    return bmv2_json, ctx.warnings


def number_pipeline_nodes(pipes: list[dict[str, Any]]) -> None:
    """Tables and conditionals are numbered across both pipelines, in JSON order."""
    tid = 0
    cid = 0
    for p in pipes:
        for t in p["tables"]:
            t["id"] = tid
            tid += 1
        for c in p["conditionals"]:
            c["id"] = cid
            cid += 1


def field_aliases(ctx: LowerContext) -> list[Any]:
    """``@alias`` annotations on standard_metadata fields."""
    sm = ctx.roots.get("standard_metadata")
    if not isinstance(sm, StructLoc):
        return []
    out = []
    for fn, annos in sm.type.field_annotations:
        for aname, raw in annos:
            if aname == "alias":
                out.append([raw.strip().strip('"'), ["standard_metadata", fn]])
    return out


def extern_arrays(ctx: LowerContext) -> tuple[list[Any], list[Any], list[Any]]:
    """The JSON's counter, meter and register arrays, from the instances in declaration order
    (a direct counter or meter no table uses is dropped, as p4c does)."""
    counters: list[dict[str, Any]] = []
    meters: list[dict[str, Any]] = []
    registers: list[dict[str, Any]] = []
    x = ExprLowerer(ctx.chk, {})
    for sym in ctx.instances:
        t = sym.type
        d: ast.InstantiationDecl = sym.decl
        if not isinstance(t, ExternT):
            continue
        args = [x.const(a.value) for a in d.args]
        name = sym.qualified
        si = source_info(d, d.name)
        if t.name == "register":
            et = t.args[0]
            if not is_scalar(et):
                raise error(d, f"{name}: register cells of type {et.show()} are unsupported")
            registers.append({"name": name, "id": len(registers), "source_info": si,
                              "size": args[0], "bitwidth": bit_width(et)})
        elif t.name in ("counter", "direct_counter"):
            enum_member(x, d.args[-1].value)  # the CounterType must be a constant
            entry: dict[str, Any] = {"name": name, "id": len(counters), "source_info": si}
            if t.name == "direct_counter":
                table = ctx.direct_bindings.get(("counter", name))
                if table is None:
                    continue
                entry.update({"is_direct": True, "binding": table})
            else:
                entry.update({"size": args[0], "is_direct": False})
            counters.append(entry)
        elif t.name in ("meter", "direct_meter"):
            kind = enum_member(x, d.args[-1].value)
            entry = {"name": name, "id": len(meters), "source_info": si}
            if t.name == "direct_meter":
                table = ctx.direct_bindings.get(("meter", name))
                if table is None:
                    continue
                target = ctx.direct_meter_targets.get(name)
                if target is None:
                    raise error(d, f"{name}: direct meter is never read")
                entry.update({"is_direct": True, "rate_count": 2, "type": kind,
                              "size": 1024, "binding": table, "result_target": target})
            else:
                entry.update({"is_direct": False, "size": args[0], "rate_count": 2,
                              "type": kind})
            meters.append(entry)
        elif t.name in ("packet_in", "packet_out"):
            pass
        else:
            raise error(d, f"{name}: extern {t.name} is unsupported on this target")
    return counters, meters, registers


def enum_member(x: ExprLowerer, e: ast.Expr) -> str:
    t = x.type(e)
    v = x.const(e)
    if isinstance(t, EnumT) and isinstance(v, int):
        return t.members[v]
    raise error(e, f"{e}: expected an enum constant")


__all__ = ["lower_program"]
