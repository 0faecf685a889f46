"""Lowering of a control's apply block to a BMv2 pipeline (tables + conditionals).

BMv2 pipelines are graphs: each node (table or conditional) names its successor. We lower a
statement list back to front, passing each statement the name of the node that runs after it.
Like p4c-bm2-ss:
- a run of plain statements (assignments, extern calls) becomes a synthesized action applied by a
  keyless table ``tbl_<name>`` whose const default action it is;
- a direct call of a declared action becomes ``tbl_<action>`` with that action as const default;
- ``switch (t.apply().action_run)`` sets ``next_tables`` per action; ``t.apply().hit/miss`` uses
  ``__HIT__``/``__MISS__``;
- a key that is not a plain field is computed into a scalar temporary by a synthesized action.
"""

from __future__ import annotations

import os
from typing import Any

from softnic.compiler.bmv2.context import LowerContext, source_info
from softnic.compiler.bmv2.layout import (
    FieldLoc,
    HeaderLoc,
    JsonLoc,
    Loc,
    StackLoc,
    StructLoc,
    UnionLoc,
)
from softnic.compiler.bmv2.lower_expr import ExprLowerer, field_ref, hexstr
from softnic.compiler.bmv2.lower_stmt import StmtLowerer, ensure_action
from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.desugar import InlinedApply
from softnic.compiler.frontend.key_name import table_key_name
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.types import ActionEnumT, ApplyResultT, BoolT, bit_width

MATCH_TYPES = {"exact": "exact", "lpm": "lpm", "ternary": "ternary", "range": "range",
               "optional": "optional"}


class ControlLowerer:
    def __init__(self, prog: LowerContext, d: ast.ControlDecl, env: dict[int, Loc],
                 pipeline: str) -> None:
        self.prog = prog
        self.chk = prog.chk
        self.d = d
        self.env = env
        self.pipeline = pipeline
        self.tables: list[dict[str, Any]] = []
        self.conditionals: list[dict[str, Any]] = []
        self.applied: set[str] = set()
        self.return_targets: list[str | None] = [None]  # where ``return`` continues
        self.x = ExprLowerer(self.chk, env)

    # ------------------------------------------------------------------ entry

    def lower(self) -> dict[str, Any]:
        self.preallocate(self.d.apply)
        init = self.seq(self.d.apply.stmts, None)
        return {
            "name": self.pipeline,
            "id": 0 if self.pipeline == "ingress" else 1,
            "source_info": source_info(self.d, self.d.name),
            "init_table": init,
            "tables": list(reversed(self.tables)),
            "action_profiles": [],
            "conditionals": list(reversed(self.conditionals)),
        }

    def preallocate(self, s: Any) -> None:
        """Give every apply-block local its scalar up front: the graph is built back to front,
        so a use can be lowered before its declaration."""
        if isinstance(s, ast.VarDecl):
            sym = self.chk.decl_syms[id(s)]
            assert sym.type is not None
            lname = self.prog.layout.local_name(s.name)
            self.env[id(sym)] = self.prog.layout.alloc(sym.type, lname, "")
        elif isinstance(s, ast.BlockStmt):
            for x in s.stmts:
                self.preallocate(x)
        elif isinstance(s, ast.IfStmt):
            self.preallocate(s.then)
            if s.other is not None:
                self.preallocate(s.other)
        elif isinstance(s, ast.SwitchStmt):
            for c in s.cases:
                if c.body is not None:
                    self.preallocate(c.body)

    # ------------------------------------------------------------------ statements

    def is_simple(self, s: Any) -> bool:
        if isinstance(s, (ast.AssignStmt, ast.ExitStmt, ast.EmptyStmt, ast.ConstDecl)):
            return True
        if isinstance(s, ast.VarDecl):
            return True
        if isinstance(s, ast.CallStmt):
            info = self.chk.calls.get(id(s.call))
            if info is None:
                return False
            if info.kind == "action":
                return False
            if info.kind == "builtin" and info.name == "apply":
                return False
            return True
        return False

    def seq(self, stmts: list[Any], nxt: str | None) -> str | None:
        for i, s in enumerate(stmts):
            if isinstance(s, ast.ReturnStmt):
                stmts = stmts[:i]
                nxt = self.return_targets[-1]
                break
            if isinstance(s, ast.ExitStmt):
                stmts = stmts[: i + 1]
                nxt = None
                break
        segments: list[list[Any]] = []
        for s in stmts:
            if self.is_simple(s):
                if segments and segments[-1] and self.is_simple(segments[-1][0]):
                    segments[-1].append(s)
                else:
                    segments.append([s])
            else:
                segments.append([s])
        for seg in reversed(segments):
            if self.is_simple(seg[0]):
                nxt = self.simple_run(seg, nxt)
            else:
                nxt = self.complex(seg[0], nxt)
        return nxt

    def simple_run(self, stmts: list[Any], nxt: str | None) -> str | None:
        sl = StmtLowerer(self.prog, self.env, "action")
        sl.stmts(stmts)
        if not sl.ops:
            return nxt
        first = stmts[0]
        base = f"{os.path.splitext(os.path.basename(first.loc.file))[0]}{first.loc.line}"
        aname = self.prog.fresh_action_name(base)
        aid = self.prog.add_action_json(aname, [], sl.ops, first)
        return self.hidden_table(f"tbl_{aname}", aname, aid, [], nxt, first)

    def hidden_table(self, name: str, aname: str, aid: int, data: list[str],
                     nxt: str | None, node: ast.Node) -> str:
        tname = self.prog.fresh_table_name(name)
        self.tables.append({
            "name": tname,
            "id": 0,
            "source_info": source_info(node, show_expr(getattr(node, "call", None))
                                       if isinstance(node, ast.CallStmt) else aname),
            "key": [],
            "match_type": "exact",
            "type": "simple",
            "max_size": 1024,
            "with_counters": False,
            "support_timeout": False,
            "direct_meters": None,
            "action_ids": [aid],
            "actions": [aname],
            "base_default_next": nxt,
            "next_tables": {aname: nxt},
            "default_entry": {"action_id": aid, "action_const": True, "action_data": data,
                              "action_entry_const": True},
        })
        return tname

    def complex(self, s: Any, nxt: str | None) -> str | None:
        if isinstance(s, InlinedApply):
            # ``return`` in an inlined control ends that control only: continue after it
            self.return_targets.append(nxt)
            try:
                return self.seq(s.stmts, nxt)
            finally:
                self.return_targets.pop()
        if isinstance(s, ast.BlockStmt):
            return self.seq(s.stmts, nxt)
        if isinstance(s, ast.CallStmt):
            info = self.chk.calls[id(s.call)]
            if info.kind == "action":
                return self.direct_action(s, info, nxt)
            return self.apply_table(s.call, {}, nxt, nxt)
        if isinstance(s, ast.IfStmt):
            return self.if_stmt(s, nxt)
        if isinstance(s, ast.SwitchStmt):
            return self.switch(s, nxt)
        raise error(s, f"{type(s).__name__}: unsupported statement in apply")

    def direct_action(self, s: ast.CallStmt, info: Any, nxt: str | None) -> str:
        # every parameter is directionless here: InlineActions (RemoveActionParameters) has
        # replaced a direct call of an action with directional parameters by its body
        d: ast.ActionDecl = info.decl
        aid = ensure_action(self.prog, info.sym, self.env)
        data = []
        for p, a in zip(d.params, info.args, strict=False):
            v = self.x.const(a) if a is not None else None
            if v is None:
                raise error(a or s, f"{show_expr(a)}: action data in a direct call must be a "
                            "compile-time constant on this target")
            data.append(hexstr(int(v), bit_width(self.chk.decl_syms[id(p)].type))["value"])
        return self.hidden_table(f"tbl_{info.sym.name}", info.sym.qualified, aid, data, nxt, s)

    # ------------------------------------------------------------------ if / switch

    def if_stmt(self, s: ast.IfStmt, nxt: str | None) -> str | None:
        t_next = self.seq([s.then], nxt)
        f_next = self.seq([s.other], nxt) if s.other is not None else nxt
        hit = self.hit_miss(s.cond)
        if hit is not None:
            call, is_hit = hit
            on_hit, on_miss = (t_next, f_next) if is_hit else (f_next, t_next)
            return self.apply_table(call, {"__HIT__": on_hit, "__MISS__": on_miss}, None, nxt)
        cond = self.x.boolean(s.cond)
        name = self.prog.fresh_cond_name()
        self.conditionals.append({
            "name": name,
            "id": 0,
            "source_info": source_info(s.cond, show_expr(s.cond)),
            "expression": cond,
            "true_next": t_next,
            "false_next": f_next,
        })
        return name

    def hit_miss(self, c: ast.Expr) -> tuple[ast.Call, bool] | None:
        neg = False
        while isinstance(c, ast.Unary) and c.op == "!":
            neg = not neg
            c = c.expr
        if isinstance(c, ast.Member) and c.name in ("hit", "miss") and isinstance(
            self.chk.types.get(id(c.expr)), ApplyResultT
        ):
            assert isinstance(c.expr, ast.Call)
            return c.expr, (c.name == "hit") != neg
        return None  # SideEffectOrdering left table applies only in these two forms

    def switch(self, s: ast.SwitchStmt, nxt: str | None) -> str | None:
        e = s.expr
        if not isinstance(self.chk.types.get(id(e)), ActionEnumT):
            return self.value_switch(s, nxt)
        assert isinstance(e, ast.Member) and isinstance(e.expr, ast.Call)
        call = e.expr
        tsym = self.chk.calls[id(call)].sym
        assert tsym is not None
        tdecl: ast.TableDecl = tsym.decl
        scope = self.chk.scopes[id(tdecl)]
        by_action: dict[str, str | None] = {}  # qualified action name -> its case's target
        default_target: str | None = nxt
        pending: list[str] = []
        for c in s.cases:
            label = "default" if isinstance(c.label, ast.Default) else c.label.name  # type: ignore
            pending.append(label)
            if c.body is None:
                continue
            target = self.seq(c.body.stmts, nxt)
            for lab in pending:
                if lab == "default":
                    default_target = target
                else:
                    sym = scope.lookup(lab)
                    assert sym is not None
                    by_action[sym.qualified] = target
            pending = []
        # the actions without a case go where ``default:`` goes (after the switch without one)
        return self.apply_table(call, by_action, default_target, nxt, per_action=True)

    def value_switch(self, s: ast.SwitchStmt, nxt: str | None) -> str | None:
        """``switch`` on a value, as p4c's EliminateSwitch does it: the value goes into
        ``switch_N_key``, a hidden exact table with one const entry per label runs an empty
        ``switch_N_case`` action, and the table's next nodes select the case body."""
        t = self.x.type(s.expr)
        width = bit_width(t)
        prefix = self.prog.fresh_name("switch_0")
        key = self.prog.layout.add_scalar(f"{prefix}_key", t)
        owner = self.d.name
        cases: list[tuple[str, int, list[Any], ast.SwitchCase]] = []
        pending: list[Any] = []
        has_default = any(isinstance(c.label, ast.Default) for c in s.cases)
        all_cases = list(s.cases)
        if not has_default:
            all_cases.append(ast.SwitchCase(ast.Default(loc=s.loc), ast.BlockStmt([], loc=s.loc),
                                            loc=s.loc))
        default_action = ""
        for c in all_cases:
            pending.append(c.label)
            if c.body is None:
                continue
            aname = self.prog.fresh_action_name(f"{owner}.{prefix}_case")
            aid = self.prog.add_action_json(aname, [], [], c)
            cases.append((aname, aid, pending, c))
            if any(isinstance(lab, ast.Default) for lab in pending):
                default_action = aname
            pending = []
        entries = []
        prio = 1
        next_tables: dict[str, str | None] = {}
        for aname, aid, labels, c in cases:
            assert c.body is not None
            next_tables[aname] = self.seq(c.body.stmts, nxt)
            for lab in labels:
                if isinstance(lab, ast.Default):
                    continue
                v = int(self.chk.consts[id(lab)])
                entries.append({
                    "source_info": source_info(lab, show_expr(lab)),
                    "match_key": [{"match_type": "exact", "key": hexstr(v, width)["value"]}],
                    "action_entry": {"action_id": aid, "action_data": []},
                    "priority": prio,
                })
                prio += 1
        tname = self.prog.fresh_table_name(f"{owner}.{prefix}_table")
        dflt_id = self.prog.action_ids[default_action]
        self.tables.append({
            "name": tname,
            "id": 0,
            "source_info": source_info(s, "switch"),
            "key": [{"match_type": "exact", "name": key.field, "target": [key.header, key.field],
                     "mask": None}],
            "match_type": "exact",
            "type": "simple",
            "max_size": 1024,
            "with_counters": False,
            "support_timeout": False,
            "direct_meters": None,
            "action_ids": [aid for _, aid, _, _ in cases],
            "actions": [a for a, _, _, _ in cases],
            "base_default_next": nxt,
            "next_tables": next_tables,
            "default_entry": {"action_id": dflt_id, "action_const": True, "action_data": [],
                              "action_entry_const": True},
            "entries": entries,
        })
        sl = StmtLowerer(self.prog, self.env, "action")
        sl.emit_assign(field_ref(key.header, key.field), self.x.data(s.expr), s,
                       f"{prefix}_key = {show_expr(s.expr)}")
        return self.simple_key_run(sl.ops, tname, s)

    # ------------------------------------------------------------------ tables

    def apply_table(self, call: ast.Call, next_map: dict[str, str | None],
                    base_next: str | None, nxt: str | None,
                    per_action: bool = False) -> str:
        info = self.chk.calls[id(call)]
        sym = info.sym
        assert sym is not None
        if sym.qualified in self.applied:
            raise error(call, f"{show_expr(call)}: a table can only be applied once on this "
                        "target")
        self.applied.add(sym.qualified)
        tj, pre = self.table_json(sym, call)
        if per_action:
            # p4c's ControlConverter::convertTable: the cases' actions in case order, then every
            # other action of the table (an implicit NoAction too) to the ``default:`` target.
            # BMv2 ends the control after an action missing here, so none may be left out.
            tj["next_tables"] = {**next_map, **{a: base_next for a in tj["actions"]
                                                if a not in next_map}}
            tj["base_default_next"] = nxt
        elif next_map:
            tj["next_tables"] = next_map  # __HIT__ and __MISS__
            tj["base_default_next"] = None  # as p4c writes it for a hit/miss table
        else:
            tj["next_tables"] = {a: base_next for a in tj["actions"]}
            tj["base_default_next"] = base_next
        self.tables.append(tj)
        entry = tj["name"]
        if pre:
            entry = self.simple_key_run(pre, entry, call)
        return entry

    def simple_key_run(self, ops: list[dict[str, Any]], nxt: str, node: ast.Node) -> str:
        base = f"{os.path.splitext(os.path.basename(node.loc.file))[0]}{node.loc.line}"
        aname = self.prog.fresh_action_name(base)
        aid = self.prog.add_action_json(aname, [], ops, node)
        return self.hidden_table(f"tbl_{aname}", aname, aid, [], nxt, node)

    def table_json(self, sym: Any, call: ast.Call) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        d: ast.TableDecl = sym.decl
        props = {p.name: p for p in d.properties}
        keys: list[dict[str, Any]] = []
        widths: list[int] = []
        pre = StmtLowerer(self.prog, self.env, "action")
        kinds: list[str] = []
        for k in props["key"].keys if "key" in props else []:
            mt = MATCH_TYPES.get(k.match_kind)
            if mt is None:
                raise error(k, f"{k.match_kind}: match kind unsupported on this target")
            kinds.append(mt)
            kname = table_key_name(k)  # TableKeyNames: fixed before inlining
            target, kmask, width = self.key_target(k.expr, pre)
            keys.append({"match_type": mt, "name": kname, "target": target, "mask": kmask})
            widths.append(width)
        if "range" in kinds:
            tmt = "range"
        elif "ternary" in kinds or "optional" in kinds:
            tmt = "ternary"
        elif "lpm" in kinds:
            tmt = "lpm"
        else:
            tmt = "exact"
        if kinds.count("lpm") > 1:
            raise error(d, f"{d.name}: more than one lpm key is not allowed")
        refs = list(props["actions"].actions)
        scope = self.chk.scopes[id(d)]
        action_syms = []
        for r in refs:
            asym = scope.lookup(r.name)
            # (a listed action with directional parameters is bound in the list: InlineActions
            # has made it an action of its own, or the checker refused the missing arguments)
            assert asym is not None
            action_syms.append(asym)
        dflt = props.get("default_action")
        if dflt is None:
            na = self.chk.top.lookup("NoAction")
            if na is None or na.kind != "action":
                raise error(d, f"{d.name}: no default_action and NoAction is not declared")
            if "NoAction" not in [s.name for s in action_syms]:
                action_syms.append(na)
        ids = [ensure_action(self.prog, s, self.env) for s in action_syms]
        names = [s.qualified for s in action_syms]
        tname = sym.qualified
        size = self.chk.consts.get(id(props["size"]), 1024) if "size" in props else 1024
        tj: dict[str, Any] = {
            "name": tname,
            "id": 0,
            "source_info": source_info(d, d.name),
            "key": keys,
            "match_type": tmt,
            "type": "simple",
            "max_size": size,
            "with_counters": False,
            "support_timeout": False,
            "direct_meters": None,
            "action_ids": ids,
            "actions": names,
            "base_default_next": None,
            "next_tables": {},
        }
        if "support_timeout" in props:
            tj["support_timeout"] = bool(self.x.const(props["support_timeout"].value))
        if "counters" in props:
            cname = self.instance_of(props["counters"].value)
            tj["with_counters"] = True
            self.prog.bind_direct("counter", cname, tname)
        if "meters" in props:
            mname = self.instance_of(props["meters"].value)
            tj["direct_meters"] = mname
            self.prog.bind_direct("meter", mname, tname)
        if dflt is not None:
            dcall = dflt.value
            assert isinstance(dcall, ast.Call)
            dinfo = self.chk.calls[id(dcall)]
            aid = ensure_action(self.prog, dinfo.sym, self.env)
            data = self.action_data(dinfo)
            tj["default_entry"] = {"action_id": aid, "action_const": dflt.is_const,
                                   "action_data": data, "action_entry_const": dflt.is_const}
        else:
            tj["default_entry"] = {"action_id": ids[names.index("NoAction")],
                                   "action_const": False, "action_data": [],
                                   "action_entry_const": False}
        if "entries" in props:
            ep = props["entries"]
            tj["entries"] = self.entries(ep, kinds, tmt, keys_w=widths, table=d)
        return tj, pre.ops

    def instance_of(self, e: ast.Expr | None) -> str:
        assert isinstance(e, ast.PathExpr)
        sym = self.chk.syms[id(e)]
        return sym.qualified

    def action_data(self, info: Any) -> list[str]:
        out = []
        for p, a in zip(info.decl.params, info.args, strict=False):
            if p.direction is not None:
                continue
            v = self.chk.consts.get(id(a))
            if v is None:
                v = self.x.const(a)
            out.append(hexstr(int(v), bit_width(self.chk.decl_syms[id(p)].type))["value"])
        return out

    def key_target(self, e: ast.Expr, pre: StmtLowerer) -> tuple[Any, Any, int]:
        t = self.x.type(e)
        width = bit_width(t)
        info = self.chk.calls.get(id(e)) if isinstance(e, ast.Call) else None
        if info is not None and info.kind == "builtin" and info.name == "isValid":
            loc = self.x.loc(info.base)  # type: ignore[arg-type]
            if isinstance(loc, HeaderLoc):
                return [loc.name, "$valid$"], None, 1
        if isinstance(e, ast.Binary) and e.op == "&":
            m = self.x.const(e.right)
            loc = self.x.loc(e.left)
            if m is not None and isinstance(loc, FieldLoc):
                return [loc.header, loc.field], hexstr(int(m), width)["value"], width
        loc = self.x.loc(e)
        if isinstance(loc, FieldLoc) and not isinstance(t, BoolT):
            return [loc.header, loc.field], None, width
        tmp = self.prog.layout.add_scalar("key", t)
        pre.emit_assign(field_ref(tmp.header, tmp.field), self.x.data(e), e, show_expr(e))
        return [tmp.header, tmp.field], None, width

    def entries(self, ep: ast.TableProperty, kinds: list[str], tmt: str,
                keys_w: list[int], table: ast.TableDecl) -> list[dict[str, Any]]:
        out = []
        prios = self.bmv2_priorities(ep, table)
        for ent, prio in zip(ep.entries, prios, strict=True):
            ks = ent.keyset
            elems = ks.elems if isinstance(ks, ast.ListExpr) and len(kinds) != 1 else [ks]
            if isinstance(ks, ast.ListExpr) and len(kinds) == 1 and len(ks.elems) == 1:
                elems = ks.elems
            mk = []
            for el, kind, w in zip(elems, kinds, keys_w, strict=False):
                mk.append(self.entry_key(el, kind, w))
            ainfo = self.chk.calls[id(ent.action)]
            aid = ensure_action(self.prog, ainfo.sym, self.env)
            out.append({
                "source_info": source_info(ent, show_expr(ks)),
                "match_key": mk,
                "action_entry": {"action_id": aid, "action_data": self.action_data(ainfo)},
                "priority": prio,
            })
        return out

    def bmv2_priorities(self, ep: ast.TableProperty, table: ast.TableDecl) -> list[int]:
        """The BMv2 JSON ``priority`` of each entry, where a *lower* number wins.

        Without any ``priority = N`` the first entry wins, and the JSON numbers are 1, 2, ...
        in source order, exactly what p4c-bm2-ss writes. ``const entries`` cannot carry
        priorities (p4c refuses them too). With explicit priorities the P4_16
        rules apply (p4c's EntryPriorities pass): an entry without one gets the previous
        entry's priority minus ``priority_delta`` (plus, when ``largest_priority_wins`` is
        false); the first entry must have one. Those P4 priorities are then mapped onto BMv2's
        order so that the entry the P4 program says wins also wins on BMv2.
        """
        entries = ep.entries
        if all(e.priority is None for e in entries):
            return list(range(1, len(entries) + 1))
        if ep.is_const:
            # p4c's EntryPriorities pass: the order of const entries is their priority
            first = next(e for e in entries if e.priority is not None)
            raise error(first, "Table with 'const' entries cannot have priorities")
        props = {p.name: p for p in table.properties}
        largest_wins = self.bool_property(props.get("largest_priority_wins"), True)
        delta = self.int_property(props.get("priority_delta"), 1)
        p4_prios: list[int] = []
        current = 0
        for i, e in enumerate(entries):
            if e.priority is not None:
                current = int(self.chk.consts[id(e.priority)])
            elif i == 0:
                raise error(e, "entry must have a priority: a later entry of this table sets "
                            "one")
            if current < 0:
                raise error(e, f"entry priority {current} is negative")
            p4_prios.append(current)
            current = current - delta if largest_wins else current + delta
        if largest_wins:
            top = max(p4_prios)
            return [top - p + 1 for p in p4_prios]
        low = min(p4_prios)
        return [p - low + 1 for p in p4_prios]

    def bool_property(self, p: ast.TableProperty | None, default: bool) -> bool:
        if p is None or p.value is None:
            return default
        v = self.x.const(p.value)
        if not isinstance(v, bool):
            raise error(p, f"{p.name} must be a boolean constant")
        return v

    def int_property(self, p: ast.TableProperty | None, default: int) -> int:
        if p is None or p.value is None:
            return default
        v = self.x.const(p.value)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise error(p, f"{p.name} must be a positive integer constant")
        return v

    def entry_key(self, el: ast.Expr, kind: str, w: int) -> dict[str, Any]:
        full = (1 << w) - 1
        if kind == "exact":
            return {"match_type": "exact", "key": hexstr(int(self.x.const(el)), w)["value"]}
        if kind in ("ternary", "optional"):
            if isinstance(el, (ast.DontCare, ast.Default)):
                v, m = 0, 0
            elif isinstance(el, ast.Binary) and el.op == "&&&":
                v, m = int(self.x.const(el.left)), int(self.x.const(el.right))
            else:
                v, m = int(self.x.const(el)), full
            return {"match_type": "ternary", "key": hexstr(v & m, w)["value"],
                    "mask": hexstr(m, w)["value"]}
        if kind == "lpm":
            if isinstance(el, (ast.DontCare, ast.Default)):
                return {"match_type": "lpm", "key": hexstr(0, w)["value"], "prefix_length": 0}
            if isinstance(el, ast.Binary) and el.op == "&&&":
                v, m = int(self.x.const(el.left)), int(self.x.const(el.right))
                plen = bin(m).count("1")
            else:
                v, plen = int(self.x.const(el)), w
            return {"match_type": "lpm", "key": hexstr(v, w)["value"], "prefix_length": plen}
        if kind == "range":
            if isinstance(el, (ast.DontCare, ast.Default)):
                lo, hi = 0, full
            elif isinstance(el, ast.Binary) and el.op == "..":
                lo, hi = int(self.x.const(el.left)), int(self.x.const(el.right))
            else:
                lo = hi = int(self.x.const(el))
            return {"match_type": "range", "start": hexstr(lo, w)["value"],
                    "end": hexstr(hi, w)["value"]}
        raise error(el, f"{kind}: unsupported match kind in entries")


# ---------------------------------------------------------------------- deparser, checksums


def lower_deparser(prog: LowerContext, d: ast.ControlDecl, env: dict[int, Loc]) -> dict[str, Any]:
    x = ExprLowerer(prog.chk, env)
    order: list[str] = []

    def add(loc: Loc, node: ast.Node) -> None:
        if isinstance(loc, HeaderLoc):
            order.append(loc.name)
        elif isinstance(loc, StackLoc):
            for el in loc.elems:
                add(el, node)
        elif isinstance(loc, UnionLoc):
            for m in loc.members.values():
                add(m, node)
        elif isinstance(loc, StructLoc):
            for fn, _ in loc.type.fields:
                add(loc.fields[fn], node)
        elif isinstance(loc, (FieldLoc, JsonLoc)):
            raise error(node, f"{show_expr(node)}: only headers can be emitted")  # type: ignore

    def walk(stmts: list[Any]) -> None:
        for s in stmts:
            if isinstance(s, ast.BlockStmt):
                walk(s.stmts)
                continue
            if isinstance(s, ast.EmptyStmt):
                continue
            if isinstance(s, ast.CallStmt):
                info = prog.chk.calls[id(s.call)]
                if info.kind == "method" and info.name == "emit":
                    arg = info.args[0]
                    assert arg is not None
                    loc = x.loc(arg)
                    if loc is None:
                        raise error(arg, f"{show_expr(arg)}: cannot emit this expression")
                    add(loc, arg)
                    continue
            raise error(s, "only packet.emit calls are supported in the deparser on this target")

    walk(d.apply.stmts)
    if d.locals:
        raise error(d.locals[0], "declarations in the deparser are unsupported on this target")
    return {"name": "deparser", "id": 0, "source_info": source_info(d, d.name), "order": order,
            "primitives": []}


def lower_checksums(prog: LowerContext, d: ast.ControlDecl, env: dict[int, Loc],
                    verify: bool) -> None:
    sl = StmtLowerer(prog, env, "action")
    for s in flatten(d.apply.stmts):
        if isinstance(s, ast.EmptyStmt):
            continue
        ok = False
        if isinstance(s, ast.CallStmt):
            info = prog.chk.calls[id(s.call)]
            want = "verify_checksum" if verify else "update_checksum"
            if info.kind == "extern_func" and info.name in (want, want + "_with_payload"):
                ok = True
                cond, data, target, algo = info.args
                assert cond is not None and data is not None and target is not None
                inputs = sl.field_inputs(data, s)
                if info.name.endswith("_with_payload"):
                    inputs.append({"type": "payload", "value": None})
                calc = prog.add_calculation(sl.algo(algo), inputs, s)  # type: ignore[arg-type]
                tloc = sl.x.loc(target)
                if not isinstance(tloc, FieldLoc):
                    raise error(target, f"{show_expr(target)}: checksum target must be a field")
                c = sl.x.const(cond)
                if_cond = None if c is True else sl.x.boolean(cond)
                prog.checksums.append({
                    "name": prog.fresh_name("cksum"),
                    "id": len(prog.checksums),
                    "source_info": source_info(s, show_expr(s.call)),
                    "target": [tloc.header, tloc.field],
                    "type": "generic",
                    "calculation": calc,
                    "verify": verify,
                    "update": not verify,
                    "if_cond": if_cond,
                })
        if not ok:
            raise error(s, f"only {'verify' if verify else 'update'}_checksum calls are"
                        " supported in this control on this target")
    if sl.ops:
        raise error(d, "checksum inputs must be fields or constants on this target")
    if d.locals:
        raise error(d.locals[0], "declarations in checksum controls are unsupported on this target")


def flatten(stmts: list[Any]) -> list[Any]:
    out: list[Any] = []
    for s in stmts:
        if isinstance(s, ast.BlockStmt):
            out.extend(flatten(s.stmts))
        else:
            out.append(s)
    return out
