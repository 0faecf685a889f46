"""Tables: key fields and match kinds, the actions list, default_action, const entries and the
other table properties (size, direct counters/meters, support_timeout, ...).
"""

from __future__ import annotations

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.callinfo import ParamT
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    PType,
)


class TablesMixin(CheckerState):
    """Checks table declarations and the action calls they contain."""

    def table_action_refs(self, d: ast.TableDecl) -> list[ast.ActionRef]:
        for p in d.properties:
            if p.name == "actions":
                return p.actions
        return []

    def declare_table(self, d: ast.TableDecl, scope: Scope, owner: str) -> None:
        sym = Sym("table", d.name, None, d, owner=owner, qualified=self.qualify(d, owner))
        self.scopes[id(d)] = scope
        names = [p.name for p in d.properties]
        for n in set(names):
            if names.count(n) > 1:
                raise error(d, f"{d.name}: duplicate table property {n}")
        if "actions" not in names:
            raise error(d, f"{d.name}: table has no actions property")
        key_types: list[PType] = []
        action_names: list[str] = []
        for p in d.properties:
            if p.name == "key":
                for k in p.keys:
                    kt = self.type_of(k.expr, scope)
                    if not isinstance(kt, (BitT, BoolT, EnumT, ErrorT)):
                        raise error(k.expr, f"Key {show_expr(k.expr)} field type must be a "
                                    f"scalar type; it cannot be {kt.show()}")
                    mk = scope.lookup(k.match_kind)
                    if mk is None or mk.kind != "match_kind":
                        raise error(k, f"{k.match_kind}: declaration not found")
                    key_types.append(kt)
            elif p.name == "actions":
                for a in p.actions:
                    asym = scope.lookup(a.name)
                    if asym is None:
                        raise error(a, f"{a.name}: declaration not found")
                    if asym.kind != "action":
                        raise error(a, f"{a.name}: is not an action")
                    if a.name in action_names:
                        raise error(a, f"{a.name}: duplicate action in table {d.name}")
                    action_names.append(a.name)
                    self.check_action_ref_args(a, asym, scope)
        for p in d.properties:
            if p.name == "default_action":
                self.check_default_action(p, action_names, scope, d)
            elif p.name == "entries":
                for ent in p.entries:
                    self.check_entry(ent, key_types, action_names, scope, d)
            elif p.name == "size":
                v = self.const_eval(p.value, scope) if p.value is not None else None
                if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                    raise error(p, f"{d.name}: size must be a positive integer constant")
                self.consts[id(p)] = v
            elif p.name in ("counters", "meters"):
                want = "direct_counter" if p.name == "counters" else "direct_meter"
                if p.value is None or not isinstance(p.value, ast.PathExpr):
                    raise error(p, f"{d.name}: {p.name} must name a {want} instance")
                vs = self.lookup(p.value, scope)
                if vs.kind != "instance" or not isinstance(vs.type, ExternT) or (
                    vs.type.name != want
                ):
                    raise error(p, f"{show_expr(p.value)}: expected a {want} instance")
                owners: dict[int, str] = self.__dict__.setdefault("direct_owners", {})
                prev = owners.setdefault(id(vs), d.name)
                if prev != d.name:
                    raise error(p, f"{show_expr(p.value)}: {want} is already attached to table "
                                f"{prev}; a {want} can be attached to only one table")
            elif p.name == "support_timeout":
                if p.value is None or not isinstance(self.const_eval(p.value, scope), bool):
                    raise error(p, "support_timeout must be a boolean constant")
            elif p.name == "implementation":
                raise error(p, f"{d.name}: table implementation (action profiles/selectors) is "
                            "unsupported on this target")
            elif p.name in ("key", "actions", "largest_priority_wins", "priority_delta"):
                pass
            elif p.name.startswith("psa_") or p.name.startswith("@"):
                pass
            else:
                raise error(p, f"{p.name}: unknown table property")
        scope.declare(sym)
        self.decl_syms[id(d)] = sym
        self.table_syms[sym.qualified] = sym

    def check_action_ref_args(self, a: ast.ActionRef, asym: Sym, scope: Scope) -> None:
        d: ast.ActionDecl = asym.decl
        directional = [p for p in d.params if p.direction is not None]
        if len(a.args) != len(directional):
            raise error(a, f"{a.name}: Expected {len(directional)} arguments, got {len(a.args)}")
        for arg, p in zip(a.args, directional, strict=False):
            pt = self.param_type(p, asym)
            at = self.type_of(arg.value, scope, pt)
            if p.direction in ("out", "inout"):
                self.check_lvalue(arg.value, scope)
            self.assignable(at, pt, arg.value)

    def check_default_action(
        self, p: ast.TableProperty, action_names: list[str], scope: Scope, d: ast.TableDecl
    ) -> None:
        v = p.value
        call = v if isinstance(v, ast.Call) else ast.Call(v, [], loc=v.loc) if v else None
        if call is None or not isinstance(call.target, ast.PathExpr):
            raise error(p, f"{d.name}: default_action must be an action call")
        name = call.target.name
        if name not in action_names:
            raise error(call, f"{name}: default action is not in the actions list of {d.name}")
        asym = self.lookup(call.target, scope)
        self.check_table_action_call(call, asym, scope)
        p.value = call

    def check_table_action_call(self, call: ast.Call, asym: Sym, scope: Scope) -> None:
        """Action call in a table property: every parameter (directional and directionless)
        gets a value; directionless ones must be constants."""
        d: ast.ActionDecl = asym.decl
        params = [ParamT(p.name, p.direction, self.param_type(p, asym)) for p in d.params]
        info = self.bind_args(call, params, call.args, scope, {}, asym.name)
        for p, a in zip(params, info.args, strict=False):
            if a is None:
                raise error(call, f"{asym.name}: Expected {len(params)} arguments, got "
                            f"{len(call.args)}")
            if p.direction is None:
                v = self.const_eval(a, scope)
                if v is None:
                    raise error(a, f"{show_expr(a)}: action argument must be a compile-time "
                                "constant")
                self.consts[id(a)] = int(v)
        info.kind, info.name, info.decl, info.sym = "action", asym.qualified, d, asym
        self.calls[id(call)] = info

    # The keyset forms p4c-bm2-ss turns into BMv2 entries, by match kind (its
    # ControlConverter::convertTableEntries); anything else it refuses as unsupported.
    ENTRY_KEY_FORMS = {
        "exact": ("value",),
        "ternary": ("value", "mask", "default"),
        "lpm": ("value", "mask", "default"),
        "range": ("value", "range", "default"),
        "optional": ("value", "default"),
    }

    def check_entry_key_form(self, el: ast.Expr, match_kind: str) -> None:
        forms = self.ENTRY_KEY_FORMS.get(match_kind)
        if forms is None:
            return
        if isinstance(el, (ast.Default, ast.DontCare)):
            form = "default"
        elif isinstance(el, ast.Binary) and el.op == "&&&":
            form = "mask"
        elif isinstance(el, ast.Binary) and el.op == "..":
            form = "range"
        else:
            form = "value"
        if form not in forms:
            raise error(el, f"{show_expr(el)}: unsupported {match_kind} key expression in a "
                        f"table entry (allowed: {', '.join(forms)})")

    def check_entry(
        self,
        ent: ast.TableEntry,
        key_types: list[PType],
        action_names: list[str],
        scope: Scope,
        d: ast.TableDecl,
    ) -> None:
        ks = ent.keyset
        elems = ks.elems if isinstance(ks, ast.ListExpr) and len(key_types) != 1 else [ks]
        if isinstance(ks, ast.ListExpr) and len(key_types) == 1 and len(ks.elems) == 1:
            elems = ks.elems
        if len(elems) != len(key_types):
            raise error(ks, f"{show_expr(ks)}: entry has {len(elems)} keys, table {d.name} has "
                        f"{len(key_types)}")
        kinds = [k.match_kind for p in d.properties if p.name == "key" for k in p.keys]
        for el, kt, mk in zip(elems, key_types, kinds, strict=False):
            self.check_keyset_elem(el, kt, scope)
            self.check_entry_key_form(el, mk)
        call = ent.action
        if not isinstance(call.target, ast.PathExpr) or call.target.name not in action_names:
            raise error(call, f"{show_expr(call.target)}: entry action is not in the actions"
                        f" list of {d.name}")
        asym = self.lookup(call.target, scope)
        self.check_table_action_call(call, asym, scope)
        if ent.priority is not None:
            v = self.const_eval(ent.priority, scope)
            if not isinstance(v, int):
                raise error(ent.priority, "entry priority must be a constant")
            self.consts[id(ent.priority)] = v
