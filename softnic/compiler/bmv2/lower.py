"""Lowering of a checked v1model program to BMv2 JSON (behavioral-model docs/JSON_format.md).

:func:`lower_program` is the driver: it runs the lowering steps in order (parser, checksum
controls, ingress, egress, deparser, then the extern arrays) and assembles the JSON.
:class:`LowerContext` is the state they share, passed to every per-construct lowerer: the header
layout, the JSON's global tables (actions, calculations, learn lists, field lists, checksums),
the name and id counters and the warnings. The per-construct work lives in ``lower_parser``,
``lower_control`` (pipelines, deparser, checksums), ``lower_stmt`` and ``lower_expr``.

The P4Info is not built here: ``p4rt_resources`` builds it from the checked program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softnic.compiler.bmv2.layout import JsonLoc, Layout, Loc, StructLoc
from softnic.compiler.bmv2.lower_control import ControlLowerer, lower_checksums, lower_deparser
from softnic.compiler.bmv2.lower_expr import ExprLowerer, field_ref
from softnic.compiler.bmv2.lower_parser import lower_parser, parse_vsets
from softnic.compiler.bmv2.lower_stmt import StmtLowerer, source_info
from softnic.compiler.diagnostics import CompileWarning, error
from softnic.compiler.frontend.check import Checker, annotation_string
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import fresh_in
from softnic.compiler.ir.scope import Sym
from softnic.compiler.ir.types import (
    EnumT,
    ExternT,
    HeaderT,
    PType,
    StackT,
    StructT,
    UnionT,
    bit_width,
    is_scalar,
)


class LowerContext:
    """The state one lowering shares between its steps: what is global in the BMv2 JSON.

    ``layout`` holds the header types and instances; ``actions``, ``calculations``,
    ``learn_lists``, ``field_lists`` and ``checksums`` are the JSON's global arrays, filled by
    the per-construct lowerers through the methods below; ``names`` and ``ids`` keep the
    generated names and ids unique; ``roots`` maps block parameter types to their storage and
    ``instances`` lists the extern instances in declaration order.
    """

    def __init__(self, chk: Checker, program_name: str) -> None:
        self.chk = chk
        self.program_name = program_name
        self.layout = Layout()
        self.actions: list[dict[str, Any]] = []
        self.action_ids: dict[str, int] = {}  # JSON name -> the first action of that name
        self.action_decl_ids: dict[int, int] = {}  # id(ActionDecl) -> its JSON action id
        self.action_decl_of: dict[str, ast.ActionDecl] = {}  # JSON name -> first declaration
        self.calculations: list[dict[str, Any]] = []
        self.learn_lists: list[dict[str, Any]] = []
        self.field_lists: list[dict[str, Any]] = []
        self.field_list_ids: dict[int, int] = {}
        self.checksums: list[dict[str, Any]] = []
        self.direct_meter_targets: dict[str, list[str]] = {}
        self.direct_bindings: dict[tuple[str, str], str] = {}
        self.warnings: list[CompileWarning] = []
        self.names: set[str] = set()
        self.ids: dict[str, int] = {}
        self.meta_type: StructT | None = None
        self.meta_root: StructLoc | None = None
        self.roots: dict[str, Loc] = {}
        self.instances: list[Sym] = []

    # ------------------------------------------------------------------ small services

    def next_id(self, kind: str) -> int:
        n = self.ids.get(kind, 0)
        self.ids[kind] = n + 1
        return n

    def warn(self, node: ast.Node, msg: str, kind: str, width: int = 1,
             loc: ast.Loc | None = None) -> None:
        """A warning of p4c's class ``kind`` about ``node`` (or the position ``loc`` in it)."""
        w = CompileWarning(loc or node.loc, msg, kind, width)
        if w not in self.warnings:  # a construct lowered twice still warns once
            self.warnings.append(w)

    def fresh_name(self, base: str) -> str:
        return fresh_in(self.names, base)

    def fresh_action_name(self, base: str) -> str:
        return self.fresh_name(base)

    def fresh_table_name(self, base: str) -> str:
        return self.fresh_name(base)

    def fresh_cond_name(self) -> str:
        return f"node_{self.next_id('node') + 2}"

    # ------------------------------------------------------------------ actions

    def add_action_json(self, name: str, runtime_data: list[dict[str, Any]],
                        prims: list[dict[str, Any]], node: ast.Node) -> int:
        aid = len(self.actions)
        self.actions.append({"name": name, "id": aid, "runtime_data": runtime_data,
                             "primitives": prims})
        self.action_ids.setdefault(name, aid)
        self.names.add(name)
        return aid

    def ensure_action(self, sym: Sym | None, env: dict[int, Loc]) -> int:
        assert sym is not None
        d: ast.ActionDecl = sym.decl
        if id(d) in self.action_decl_ids:
            return self.action_decl_ids[id(d)]
        if sym.qualified in self.action_ids:
            # declarations of one control-plane name share a JSON action when they are the
            # same action; the per-table copies p4c's DuplicateActions makes (their bound
            # arguments differ) get their own, named alike, as p4c-bm2-ss emits them
            first = self.action_decl_of.get(sym.qualified)
            if first is None or (first.params == d.params and first.body == d.body):
                aid = self.action_ids[sym.qualified]
                self.action_decl_ids[id(d)] = aid
                return aid
        env2 = dict(env)
        rd: list[dict[str, Any]] = []
        for p in d.params:
            psym = self.chk.decl_syms[id(p)]
            t = psym.type
            assert t is not None
            if p.direction is not None:
                raise error(p, f"{p.name}: directional action parameters are unsupported here")
            w = bit_width(t)
            env2[id(psym)] = JsonLoc({"type": "runtime_data", "value": len(rd)}, t)
            # the control-plane name: @name keeps it when desugaring renamed the parameter
            pname = annotation_string(p, "name") or p.name
            rd.append({"name": pname, "bitwidth": w})
        sl = StmtLowerer(self, env2, "action", sym.qualified)
        sl.stmts(d.body.stmts)
        aid = self.add_action_json(sym.qualified, rd, sl.ops, d)
        self.action_decl_ids[id(d)] = aid
        self.action_decl_of.setdefault(sym.qualified, d)
        return aid

    # ------------------------------------------------------------------ calculations etc.

    def add_calculation(self, algo: str, inputs: list[dict[str, Any]], node: ast.Node) -> str:
        for c in self.calculations:
            if c["algo"] == algo and c["input"] == inputs:
                return c["name"]
        name = self.fresh_name("calc")
        self.calculations.append({"name": name, "id": len(self.calculations),
                                  "source_info": source_info(node, ""), "algo": algo,
                                  "input": inputs})
        return name

    def add_learn_list(self, name: str, elems: list[dict[str, Any]],
                       fields: list[tuple[str, int]], node: ast.Node) -> int:
        """The id of the learn list ``name`` with these elements (added when new). ``fields``
        (the digest struct's fields) is not needed here any more: P4Info takes them from the
        checked program."""
        for ll in self.learn_lists:
            if ll["name"] == name and ll["elements"] == elems:
                return ll["id"]
        lid = len(self.learn_lists) + 1
        self.learn_lists.append({"id": lid, "name": name, "source_info": source_info(node, ""),
                                 "elements": elems})
        return lid

    def field_list_id(self, index: Any, node: ast.Node) -> int:
        if not isinstance(index, int):
            raise error(node, "field list index must be a constant")
        if index in self.field_list_ids:
            return self.field_list_ids[index]
        elems: list[dict[str, Any]] = []
        if self.meta_type is not None and self.meta_root is not None:
            annos = dict(self.meta_type.field_annotations)
            for fn, _ in self.meta_type.fields:
                for aname, raw in annos.get(fn, ()):
                    if aname == "field_list" and index in parse_ints(raw, self.const_int):
                        loc = self.meta_root.fields[fn]
                        if not hasattr(loc, "field"):
                            raise error(node, f"{fn}: only scalar fields can be in field lists")
                        elems.append(field_ref(loc.header, loc.field))  # type: ignore
        fid = len(self.field_lists) + 1
        self.field_lists.append({"id": fid, "name": f"field_list{index}", "elements": elems})
        self.field_list_ids[index] = fid
        return fid

    def const_int(self, name: str) -> int | None:
        """The value of a top-level integer constant (``@field_list(FL_PACKET_IN)``)."""
        sym = self.chk.top.lookup(name)
        if sym is not None and sym.kind == "const" and isinstance(sym.value, int) and not (
                isinstance(sym.value, bool)):
            return sym.value
        return None

    def bind_direct(self, kind: str, inst: str, table: str) -> None:
        prev = self.direct_bindings.get((kind, inst))
        if prev is not None and prev != table:
            raise error(None, f"{inst}: a direct {kind} can be attached to only one table")
        self.direct_bindings[(kind, inst)] = table

    # ------------------------------------------------------------------ storage roots

    def root_for(self, t: PType, p: ast.Param, is_meta: bool) -> Loc | None:
        if isinstance(t, ExternT):
            return None
        if not isinstance(t, StructT):
            raise error(p, f"{p.name}: block parameters of type {t.show()} are unsupported")
        decl_sym = self.chk.top.lookup(t.name)
        if decl_sym is not None and annotation_string(decl_sym.decl, "name") == (
            "standard_metadata"
        ) or t.name == "standard_metadata_t":
            if "standard_metadata" not in self.roots:
                hdr = HeaderT("standard_metadata", t.fields)
                self.layout.add_header("standard_metadata", hdr, metadata=True)
                from softnic.compiler.bmv2.layout import FieldLoc

                self.roots["standard_metadata"] = StructLoc(
                    t, {fn: FieldLoc("standard_metadata", fn, ft) for fn, ft in t.fields},
                    header="standard_metadata")
            return self.roots["standard_metadata"]
        if t.name not in self.roots:
            prefix = "userMetadata." if is_meta else ""
            fields: dict[str, Loc] = {}
            for fn, ft in t.fields:
                fields[fn] = self.layout.alloc(ft, fn, prefix, "")
            self.roots[t.name] = StructLoc(t, fields)
            if is_meta:
                self.meta_type = t
                self.meta_root = self.roots[t.name]  # type: ignore[assignment]
        return self.roots[t.name]

    def block_env(self, d: Any, meta_index: int | None) -> dict[int, Loc]:
        env: dict[int, Loc] = {}
        for i, p in enumerate(d.params):
            psym = self.chk.decl_syms[id(p)]
            assert psym.type is not None
            loc = self.root_for(psym.type, p, i == meta_index)
            if loc is not None:
                env[id(psym)] = loc
        for loc_decl in d.locals:
            if isinstance(loc_decl, ast.VarDecl):
                sym = self.chk.decl_syms[id(loc_decl)]
                assert sym.type is not None
                lname = self.layout.local_name(loc_decl.name)
                env[id(sym)] = self.layout.alloc(sym.type, lname, "")
                if loc_decl.init is not None:
                    raise error(loc_decl, f"{loc_decl.name}: initializers of control-level "
                                "variables are unsupported on this target; assign in apply")
            elif isinstance(loc_decl, ast.InstantiationDecl):
                self.instances.append(self.chk.decl_syms[id(loc_decl)])
            elif isinstance(loc_decl, ast.ParserState):
                pass
        return env


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


def v1switch_blocks(chk: Checker) -> tuple[ast.ParserDecl, ast.ControlDecl, ast.ControlDecl,
                                           ast.ControlDecl, ast.ControlDecl, ast.ControlDecl]:
    """The six blocks of ``V1Switch(parser, verifyChecksum, ingress, egress, computeChecksum,
    deparser) main``."""
    main = chk.main
    if main is None:
        raise error(None, "main: no V1Switch instantiation")
    blocks = []
    for a in main.args:
        info = chk.calls.get(id(a.value))
        if info is None:
            raise error(a, "main: expected parser/control instantiations")
        blocks.append(info.decl)
    if len(blocks) != 6:
        raise error(main, "main: only V1Switch(parser, verifyChecksum, ingress, egress, "
                    "computeChecksum, deparser) is supported")
    for d, kind in zip(blocks, (ast.ParserDecl, ast.ControlDecl, ast.ControlDecl,
                                ast.ControlDecl, ast.ControlDecl, ast.ControlDecl), strict=True):
        if not isinstance(d, kind):
            raise error(main, f"main: {d.name} has the wrong kind of block")
    parser_d, vck_d, ig_d, eg_d, ck_d, dep_d = blocks
    return parser_d, vck_d, ig_d, eg_d, ck_d, dep_d


def top_level_instances(chk: Checker) -> list[Sym]:
    """The instances declared at the top level (``main`` excluded), in declaration order."""
    return [chk.decl_syms[id(d)] for d in chk.prog.decls
            if isinstance(d, ast.InstantiationDecl) and d is not chk.main
            and id(d) in chk.decl_syms]


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


def parse_ints(raw: str, const: Callable[[str], int | None] | None = None) -> list[int]:
    """The integers in an annotation's argument text; a name is looked up with ``const``."""
    out = []
    for part in raw.split(","):
        part = part.strip()
        try:
            out.append(int(part, 0))
        except ValueError:
            v = const(part) if const is not None else None
            if v is not None:
                out.append(v)
    return out


__all__ = ["LowerContext", "StackT", "UnionT", "lower_program"]
