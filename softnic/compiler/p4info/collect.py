"""The P4Runtime resources of a checked program, for the P4Info writer (``serialize.py``).

:func:`collect_resources` reads the checker's findings (symbols, call records, folded
constants, scopes) after :meth:`Checker.run` and builds the :class:`ProgramResources` that
``serialize.build_p4info`` turns into P4Info. It does not lower anything to BMv2 JSON: the P4Info
describes the program the front end accepted, which is also how p4c works (its P4Info comes from
the front end's program, so a table its mid end later drops from the JSON is still in the
P4Info; see FIDELITY.md): ``compile.py`` runs it on a checker of the program as the front-end
passes left it, before the mid-end passes (:mod:`softnic.compiler.midend`) run.

What is collected:

* the tables applied in the six V1Switch blocks (a table declared but never applied, or applied
  only after an ``exit``/``return`` that ends the block, is not there, as with p4c), with their
  keys, action references (the implicit ``NoAction`` when there is no ``default_action``),
  size, default action, entries flags and direct counters/meters;
* the actions those tables reference and the actions called directly in an ``apply`` block,
  whatever their arguments: p4c's front end keeps such an action (only its mid end inlines the
  call), e.g. ``simple_action`` of p4c's gauntlet_inout_slice_table_key-bmv2.p4. An action
  called only from other actions is not listed: the front-end InlineActions pass has inlined
  its calls, so nothing references it (p4c's RemoveAllUnusedDeclarations drops it:
  ``do_action_1`` of gauntlet_side_effect_order_1-bmv2.p4);
* of an action's parameters only the directionless ones (the action data): p4c's P4Info lists
  no ``in``/``out``/``inout`` parameter (gauntlet_action_return-bmv2.p4's ``do_action``);
* the ``digest<T>`` types of the digest calls the program can run (one entry per ``T``);
* the register, counter and meter instances (a direct counter or meter no table uses is dropped,
  as p4c drops it);
* the headers annotated ``@controller_header``.

Order: objects are listed in the order in which the BMv2 pipeline is built, which is the order
softnic's P4Info has always had: the parser's states, then each control's ``apply`` block from
its last statement to its first (a node's successor is built before the node), the ``then`` and
``else`` branches and ``switch`` cases before the table that selects them, and inside a table its
actions before the table. Instances come in declaration order: top level, then the blocks' own.
"""

from __future__ import annotations

import re
from typing import Any

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check import Checker, annotation, annotation_string
from softnic.compiler.frontend.check.callinfo import CallInfo
from softnic.compiler.frontend.desugar import InlinedApply, walk
from softnic.compiler.frontend.key_name import table_key_name
from softnic.compiler.frontend.v1model import v1switch_blocks
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Sym
from softnic.compiler.ir.types import (
    ActionEnumT,
    ApplyResultT,
    BitT,
    BoolT,
    EnumT,
    ExternT,
    HeaderT,
    StructT,
    TupleT,
    bit_width,
)
from softnic.compiler.p4info.annotations import MATCH_TYPES, annotated_id, p4info_annotations
from softnic.compiler.p4info.resources import (
    ActionInfo,
    ActionParamInfo,
    ActionRefInfo,
    ControllerHeaderInfo,
    CounterInfo,
    DigestInfo,
    MatchFieldInfo,
    MeterInfo,
    ProgramResources,
    RegisterInfo,
    StructFieldInfo,
    TableInfo,
)
from softnic.compiler.p4info.type_info import (
    field_new_type,
    key_new_type,
    note_new_type,
    note_ser_enum,
)
from softnic.compiler.p4info.value_sets import collect_value_sets


def has_return(stmts: list[Any]) -> bool:
    """Whether an apply block has a ``return`` (not counting inlined controls' own)."""
    for s in stmts:
        if isinstance(s, ast.ReturnStmt):
            return True
        if isinstance(s, InlinedApply):
            continue
        if isinstance(s, ast.BlockStmt) and has_return(s.stmts):
            return True
        if isinstance(s, ast.IfStmt) and has_return(
                [s.then] + ([s.other] if s.other is not None else [])):
            return True
        if isinstance(s, ast.SwitchStmt) and any(
                c.body is not None and has_return(c.body.stmts) for c in s.cases):
            return True
    return False


def leaves(s: Any) -> bool:
    """Whether statement ``s`` certainly ends the block (p4c RemoveReturns' "returned: yes")."""
    if isinstance(s, (ast.ReturnStmt, ast.ExitStmt)):
        return True
    if isinstance(s, InlinedApply):
        return False
    if isinstance(s, ast.BlockStmt):
        return any(leaves(x) for x in s.stmts)
    if isinstance(s, ast.IfStmt):
        return s.other is not None and leaves(s.then) and leaves(s.other)
    return False


def collect_resources(chk: Checker, program_name: str) -> ProgramResources:
    """The control-plane resources of the program ``chk`` has checked (``chk.run()`` done)."""
    return ResourceCollector(chk, program_name).collect()


class ResourceCollector:
    """One walk over a checked V1Switch program, filling a :class:`ProgramResources`."""

    def __init__(self, chk: Checker, program_name: str) -> None:
        self.chk = chk
        self.res = ProgramResources(program_name=program_name)
        self.actions_seen: set[str] = set()
        self.tables_seen: set[str] = set()
        self.digests_seen: set[str] = set()
        self.unnamed_digests: dict[int, str] = {}  # id of a tuple digest's call -> digest_<n>
        # (kind, instance name) -> table, for direct counters and meters
        self.direct_bindings: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ whole program

    def collect(self) -> ProgramResources:
        parser_d, vck_d, ig_d, eg_d, ck_d, dep_d = v1switch_blocks(self.chk)
        for st in parser_d.states:
            self.straight(st.stmts)
        # the checksum controls and the deparser hold no control-plane objects
        self.control(ig_d)
        self.control(eg_d)
        self.controller_headers()
        self.instances([vck_d, ig_d, eg_d, ck_d, dep_d], parser_d)
        self.res.value_sets = collect_value_sets(self.chk, parser_d)
        return self.res

    # ------------------------------------------------------------------ apply blocks

    def control(self, d: ast.ControlDecl) -> None:
        self.seq(d.apply.stmts, has_return(d.apply.stmts))

    def seq(self, stmts: list[Any], returns: bool) -> None:
        """A statement list of an apply block whose control (or inlined control) has a
        ``return`` somewhere when ``returns``; runs of plain statements keep their order while
        everything else is visited last to first.

        What follows a ``return`` is dead code p4c's front end drops (RemoveReturns, then
        RemoveAllUnusedDeclarations drops a table applied only there). It drops what follows an
        ``exit`` too, or an ``if`` whose branches both leave, but only in a control that has a
        ``return`` (RemoveReturns leaves a control without one alone): otherwise such a table
        survives the front end and is in p4c's P4Info, only the mid end removes it from the
        JSON (p4c's key_after_exit-frontend.p4 keeps ``exit; simple_table_0.apply();``)."""
        for i, s in enumerate(stmts):
            if isinstance(s, ast.ReturnStmt):
                stmts = stmts[:i]
                break
            if returns and leaves(s):
                stmts = stmts[: i + 1]
                break
        segments: list[list[Any]] = []
        for s in stmts:
            if self.is_plain(s) and segments and self.is_plain(segments[-1][0]):
                segments[-1].append(s)
            else:
                segments.append([s])
        for seg in reversed(segments):
            if self.is_plain(seg[0]):
                self.straight(seg)
            else:
                self.node(seg[0], returns)

    def is_plain(self, s: Any) -> bool:
        """Statements that end up in a synthesized action (no table, no conditional node)."""
        if isinstance(s, (ast.AssignStmt, ast.VarDecl)):
            return not self.applies_in(s)
        if isinstance(s, (ast.ExitStmt, ast.EmptyStmt, ast.ConstDecl)):
            return True
        if isinstance(s, ast.CallStmt):
            info = self.chk.calls.get(id(s.call))
            if info is None or info.kind == "action":
                return False
            return not (info.kind == "builtin" and info.name == "apply")
        return False

    def node(self, s: Any, returns: bool) -> None:
        if isinstance(s, InlinedApply):  # p4c ran RemoveReturns on the control before inlining
            self.seq(s.stmts, has_return(s.stmts))
        elif isinstance(s, ast.BlockStmt):
            self.seq(s.stmts, returns)
        elif isinstance(s, ast.CallStmt):
            info = self.chk.calls[id(s.call)]
            if info.kind != "action":
                self.apply_table(s.call)
            else:
                self.action(info.sym)  # listed even when the mid end inlines the call
        elif isinstance(s, ast.IfStmt):
            self.seq([s.then], returns)
            if s.other is not None:
                self.seq([s.other], returns)
            applied = self.hit_miss_apply(s.cond)
            if applied is not None:
                self.apply_table(applied)
        elif isinstance(s, ast.SwitchStmt):
            for c in s.cases:
                if c.body is not None:
                    self.seq(c.body.stmts, returns)
            if isinstance(self.chk.types.get(id(s.expr)), ActionEnumT):
                assert isinstance(s.expr, ast.Member) and isinstance(s.expr.expr, ast.Call)
                self.apply_table(s.expr.expr)
        else:
            # any other statement that applies tables (e.g. an assignment of ``t.apply().hit``)
            for call in self.applies_in(s):
                self.apply_table(call)

    def applies_in(self, s: Any) -> list[ast.Call]:
        """The table ``apply()`` calls inside ``s``, in source order."""
        out: list[ast.Call] = []
        for n in walk(s):
            if isinstance(n, ast.Call):
                info = self.chk.calls.get(id(n))
                if info is not None and info.kind == "builtin" and info.name == "apply" and (
                    info.sym is not None and info.sym.kind == "table"
                ):
                    out.append(n)
        return out

    def hit_miss_apply(self, c: ast.Expr) -> ast.Call | None:
        """The ``t.apply()`` of a condition ``[!]t.apply().hit`` / ``.miss``."""
        while isinstance(c, ast.Unary) and c.op == "!":
            c = c.expr
        if isinstance(c, ast.Member) and c.name in ("hit", "miss") and isinstance(
            self.chk.types.get(id(c.expr)), ApplyResultT
        ) and isinstance(c.expr, ast.Call):
            return c.expr
        return None

    # ------------------------------------------------------------------ straight-line code

    def straight(self, stmts: list[Any]) -> None:
        """Statements lowered into one action body (or parser state), in source order."""
        for s in stmts:
            if isinstance(s, ast.BlockStmt):
                self.straight(s.stmts)
            elif isinstance(s, ast.IfStmt):
                self.straight([s.then])
                if s.other is not None:
                    self.straight([s.other])
            elif isinstance(s, ast.CallStmt):
                info = self.chk.calls.get(id(s.call))
                if info is None:
                    continue
                # no action call is left in an action body: the front end's InlineActions
                # (softnic.compiler.frontend.passes.inline_actions) inlined them all
                if info.kind == "extern_func" and info.name == "digest":
                    self.digest(info)

    def digest(self, info: CallInfo) -> None:
        data = info.args[1]
        assert data is not None
        t = info.bindings.get("T") or self.chk.types.get(id(data))
        unnamed = isinstance(t, TupleT) or (isinstance(t, StructT) and from_tuple(t))
        if isinstance(t, TupleT):  # the struct EliminateTuples makes of it
            t = StructT("", tuple((f"f{i}", x) for i, x in enumerate(t.elems)))
        if not isinstance(t, StructT):
            raise error(data, f"{show_expr(data)}: the digest type must be a struct")
        name = t.name
        if unnamed:
            # p4c's v1model P4RuntimeArchHandler (getDigestCall): a type argument that is not
            # a named type (a tuple) has no control-plane name; each digest call gets
            # ``digest_<n>``, n counting such calls in the order they are met
            name = self.unnamed_digests.setdefault(id(info), f"digest_{len(self.unnamed_digests)}")
        if name in self.digests_seen:
            return
        self.digests_seen.add(name)
        self.res.digests.append(
            DigestInfo(name, [StructFieldInfo(fn, bit_width(ft), note_ser_enum(self.res, ft),
                                              field_new_type(self.res, self.chk, t.name, fn)
                                              if t.name else "", _spec_kind(ft))
                              for fn, ft in t.fields], tuple=unnamed))

    # ------------------------------------------------------------------ actions and tables

    def action(self, sym: Sym | None) -> None:
        assert sym is not None
        if sym.qualified in self.actions_seen:
            return
        self.actions_seen.add(sym.qualified)
        d: ast.ActionDecl = sym.decl
        params: list[ActionParamInfo] = []
        for p in d.params:
            if p.direction is not None:
                continue  # bound by the call or the table's actions list, not action data
            t = self.chk.decl_syms[id(p)].type
            assert t is not None
            # the control-plane name: @name keeps it when desugaring renamed the parameter
            pname = annotation_string(p, "name") or p.name
            params.append(ActionParamInfo(pname, bit_width(t), p4info_annotations(p),
                                          ser_enum=note_ser_enum(self.res, t),
                                          type_name=note_new_type(self.res, self.chk, p.type)))
        self.straight(d.body.stmts)
        self.res.actions.append(
            ActionInfo(sym.qualified, params, p4info_annotations(d), annotated_id(d)))

    def apply_table(self, call: ast.Call) -> None:
        sym = self.chk.calls[id(call)].sym
        assert sym is not None
        if sym.qualified in self.tables_seen:
            return
        self.tables_seen.add(sym.qualified)
        self.res.tables.append(self.table(sym))

    def table(self, sym: Sym) -> TableInfo:
        d: ast.TableDecl = sym.decl
        props = {p.name: p for p in d.properties}
        match_fields: list[MatchFieldInfo] = []
        for k in props["key"].keys if "key" in props else []:
            kname = table_key_name(k)  # TableKeyNames: fixed before inlining
            ktype = self.chk.types[id(k.expr)]
            match_fields.append(MatchFieldInfo(kname, bit_width(ktype), MATCH_TYPES[k.match_kind],
                                               p4info_annotations(k),
                                               ser_enum=note_ser_enum(self.res, ktype),
                                               type_name=key_new_type(self.res, self.chk,
                                                                      k.expr)))
        scope = self.chk.scopes[id(d)]
        action_syms: list[Sym] = []
        refs: list[ActionRefInfo] = []
        for r in props["actions"].actions:
            asym = scope.lookup(r.name)
            assert asym is not None
            action_syms.append(asym)
            sc = "TABLE_AND_DEFAULT"
            if annotation(r, "tableonly"):
                sc = "TABLE_ONLY"
            elif annotation(r, "defaultonly"):
                sc = "DEFAULT_ONLY"
            refs.append(ActionRefInfo(asym.qualified, sc, p4info_annotations(r)))
        dflt = props.get("default_action")
        if dflt is None:
            na = self.chk.top.lookup("NoAction")
            assert na is not None
            if "NoAction" not in [s.name for s in action_syms]:
                action_syms.append(na)
                refs.append(ActionRefInfo(na.qualified, "DEFAULT_ONLY"))
        for asym in action_syms:
            self.action(asym)
        size = self.chk.consts.get(id(props["size"]), 1024) if "size" in props else 1024
        info = TableInfo(sym.qualified, match_fields, refs, size=size,
                         annotations=p4info_annotations(d), id=annotated_id(d))
        if "support_timeout" in props:
            info.support_timeout = bool(self.chk.const_eval(props["support_timeout"].value, None))
        if "counters" in props:
            info.direct_counters.append(self.direct("counter", props["counters"].value,
                                                    sym.qualified))
        if "meters" in props:
            info.direct_meters.append(self.direct("meter", props["meters"].value,
                                                  sym.qualified))
        if dflt is not None:
            assert isinstance(dflt.value, ast.Call)
            dinfo = self.chk.calls[id(dflt.value)]
            assert dinfo.sym is not None
            self.action(dinfo.sym)
            if dflt.is_const:
                info.const_default_action = dinfo.sym.qualified
            else:
                info.initial_default_action = dinfo.sym.qualified
                info.initial_default_args = self.action_data(dinfo)
        else:
            info.initial_default_action = "NoAction"
        if "entries" in props:
            ep = props["entries"]
            for ent in ep.entries:
                self.action(self.chk.calls[id(ent.action)].sym)
            info.is_const_table = ep.is_const
        return info

    def direct(self, kind: str, e: ast.Expr | None, table: str) -> str:
        assert isinstance(e, ast.PathExpr)
        name = self.chk.syms[id(e)].qualified
        self.direct_bindings.setdefault((kind, name), table)
        return name

    def action_data(self, info: CallInfo) -> list[int]:
        """The values of the directionless arguments of an action call."""
        out: list[int] = []
        for p, a in zip(info.decl.params, info.args, strict=False):
            if p.direction is not None:
                continue
            v = self.chk.consts.get(id(a))
            if v is None and a is not None:
                v = self.chk.const_eval(a, None)
            if v is None:
                raise error(a or info.decl, f"{show_expr(a)}: action data must be a "
                            "compile-time constant")
            out.append(int(v))
        return out

    # ------------------------------------------------------------------ declarations

    def controller_headers(self) -> None:
        for sym in self.chk.top.syms.values():
            t = sym.type
            if sym.kind != "type" or not isinstance(t, HeaderT):
                continue
            name = annotation_string(sym.decl, "controller_header")
            if name is not None:
                self.res.controller_headers.append(ControllerHeaderInfo(
                    name, [StructFieldInfo(fn, bit_width(ft), note_ser_enum(self.res, ft),
                                           field_new_type(self.res, self.chk, sym.name, fn))
                           for fn, ft in t.fields],
                    p4info_annotations(sym.decl), annotated_id(sym.decl), type_name=sym.name))

    def instances(self, controls: list[ast.ControlDecl], parser_d: ast.ParserDecl) -> None:
        """Registers, counters and meters: top-level instances, then each block's own."""
        main = self.chk.main
        decls: list[Any] = [d for d in self.chk.prog.decls if d is not main]
        for block in [parser_d, *controls]:
            decls.extend(block.locals)
        for d in decls:
            if not isinstance(d, ast.InstantiationDecl) or id(d) not in self.chk.decl_syms:
                continue
            sym = self.chk.decl_syms[id(d)]
            if isinstance(sym.type, ExternT):
                self.instance(sym, sym.type, d)

    def instance(self, sym: Sym, t: ExternT, d: ast.InstantiationDecl) -> None:
        args = [self.chk.const_eval(a.value, None) for a in d.args]
        name = sym.qualified
        annos = p4info_annotations(d)
        aid = annotated_id(d)
        if t.name == "register":
            et = t.args[0]
            signed = isinstance(et, BitT) and et.signed
            self.res.registers.append(
                RegisterInfo(name, bit_width(et), args[0], signed, annos, aid))
        elif t.name in ("counter", "direct_counter"):
            direct = t.name == "direct_counter"
            table = self.direct_bindings.get(("counter", name))
            if direct and table is None:
                return  # a direct counter no table uses is dropped, as p4c does
            unit = {"packets": "PACKETS", "bytes": "BYTES"}.get(self.enum_member(d), "BOTH")
            self.res.counters.append(
                CounterInfo(name, unit, 0 if direct else args[0], table, annos, aid))
        elif t.name in ("meter", "direct_meter"):
            direct = t.name == "direct_meter"
            table = self.direct_bindings.get(("meter", name))
            if direct and table is None:
                return
            self.res.meters.append(MeterInfo(name, self.enum_member(d).upper(),
                                             0 if direct else args[0], table, annos, aid))

    def enum_member(self, d: ast.InstantiationDecl) -> str:
        """The member name of the enum constant that is the last constructor argument."""
        e = d.args[-1].value
        t = self.chk.types.get(id(e))
        v = self.chk.const_eval(e, None)
        if isinstance(t, EnumT) and isinstance(v, int):
            return t.members[v]
        raise error(e, f"{show_expr(e)}: expected an enum constant")


def from_tuple(t: StructT) -> bool:
    """``t`` is the struct EliminateTuples made of a tuple type (``struct tuple_0 { A f0; B f1;
    }``): the P4Info, written by p4c before its mid end, still sees the tuple."""
    return re.fullmatch(r"tuple_\d+", t.name) is not None and [
        fn for fn, _ in t.fields] == [f"f{i}" for i in range(len(t.fields))]


def _spec_kind(t: Any) -> str:
    """How p4c's TypeSpecConverter writes a digest member of type ``t``: ``bitstring.int`` for a
    signed ``int<W>``, ``bool {}`` for a bool, else ``bitstring.bit``."""
    if isinstance(t, BoolT):
        return "bool"
    if isinstance(t, BitT) and t.signed:
        return "int"
    return "bit"
