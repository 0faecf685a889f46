"""Parsers: states, reserved state names, transitions and select keysets.

Keyset elements are also used by table ``entries``, so their check lives here and is shared.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    VALUE_SET_KIND,
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    PType,
    StructT,
    TupleT,
    ValueSetT,
    value_set_fields,
)


class ParsersMixin(CheckerState):
    """Checks parser declarations and their state machines."""

    def check_parser(self, d: ast.ParserDecl) -> None:
        scope = self.enter_block(d, "parsers")
        names = {s.name for s in d.states}
        if "start" not in names:
            raise error(d, f"{d.name}: parser has no start state")
        for st in d.states:
            if st.name in ("accept", "reject"):
                raise error(st, f"{st.name}: state name is reserved")
            scope.declare(Sym("state", st.name, None, st))
        for nm in ("accept", "reject"):
            prev = scope.syms.get(nm)
            if prev is not None:
                raise error(prev.decl if isinstance(prev.decl, ast.Node) else d,
                            f"{nm}: Duplicates declaration {nm} (the parser state {nm})")
            scope.declare(Sym("state", nm, None, None))
        for st in d.states:
            sscope = scope.child()
            self.scopes[id(st)] = sscope
            for s in st.stmts:
                if isinstance(s, ast.SwitchStmt):
                    raise error(s, "switch in parser states is not allowed")
                if isinstance(s, ast.IfStmt):
                    raise error(s, "if statements in parser states are unsupported on this target")
                self.check_stmt(s, sscope, "parser")
            self.check_transition(st, sscope)

    def check_transition(self, st: ast.ParserState, scope: Scope) -> None:
        tr = st.transition
        if tr is None:
            raise error(st, f"{st.name}: state has no transition")
        if not tr.select_exprs:
            self.check_state_name(tr.next_state or "", tr, scope)
            return
        key_types = [self.type_of(k, scope) for k in tr.select_exprs]
        for kt, k in zip(key_types, tr.select_exprs, strict=False):
            if not isinstance(kt, (BitT, BoolT, EnumT, ErrorT)):
                raise error(k, f"{show_expr(k)}: cannot select on a value of type {kt.show()}")
        for c in tr.cases:
            self.check_state_name(c.state, c, scope)
            ks = c.keyset
            if isinstance(ks, (ast.Default, ast.DontCare)):
                continue
            if self.check_value_set_case(ks, key_types, tr.select_exprs, scope):
                continue
            elems = ks.elems if isinstance(ks, ast.ListExpr) and len(key_types) > 1 else [ks]
            if len(elems) != len(key_types):
                raise error(ks, f"{show_expr(ks)}: keyset has {len(elems)} elements, select has "
                            f"{len(key_types)}")
            for el, kt in zip(elems, key_types, strict=False):
                self.check_keyset_elem(el, kt, scope)

    def check_keyset_elem(self, el: ast.Expr, kt: PType, scope: Scope) -> None:
        if isinstance(el, (ast.Default, ast.DontCare)):
            return
        parts = [el.left, el.right] if isinstance(el, ast.Binary) and el.op in ("&&&", "..") else [
            el
        ]
        for p in parts:
            pt = self.type_of(p, scope, kt)
            self.assignable(pt, kt, p)
            v = self.const_eval(p, scope)
            if v is None and id(p) not in self.consts:
                raise error(p, f"{show_expr(p)}: keyset must be a compile-time constant")
            if v is not None:
                self.consts[id(p)] = int(v)
        self.types[id(el)] = kt

    def declare_value_set(self, d: ast.InstantiationDecl, scope: Scope, owner: str) -> None:
        """``value_set<T>(size) name;``: T one of the element types p4c's TypeInference allows
        (bit<W>/int<W>, bool, enums, structs, tuples), size a compile-time constant."""
        assert isinstance(d.type, ast.TypeName)
        tnode = d.type.args[0]
        elem = self.resolve_type(tnode, scope)
        if not isinstance(elem, (BitT, BoolT, EnumT, StructT, TupleT)):
            raise error(tnode, f"{elem.show()}: Illegal type for value_set element type")
        if len(d.args) != 1 or d.args[0].name is not None:
            raise error(d, f"{d.name}: value_set takes one argument, its size")
        size_e = d.args[0].value
        size = self.const_eval(size_e, scope)
        if isinstance(size, bool) or not isinstance(size, int):
            raise error(size_e, f"{show_expr(size_e)}: value_set size must be a compile-time "
                        "constant integer")
        sym = Sym(VALUE_SET_KIND, d.name, ValueSetT(elem, int(size)), d, owner=owner,
                  qualified=self.qualify(d, owner))
        scope.declare(sym)
        self.decl_syms[id(d)] = sym

    def check_value_set_case(self, ks: ast.Expr, key_types: list[PType],
                             keys: list[ast.Expr], scope: Scope) -> bool:
        """A keyset naming a value set: its element fields must have the select key's types
        (a single key may also be matched by a one-field struct). False if ``ks`` is not one."""
        elems = ks.elems if isinstance(ks, ast.ListExpr) else [ks]
        named = [e for e in elems if isinstance(e, ast.PathExpr)
                 and (s := scope.lookup(e.name)) is not None and s.kind == VALUE_SET_KIND]
        if not named:
            return False
        if not (isinstance(ks, ast.PathExpr) and len(elems) == 1):
            raise error(named[0], f"{named[0].name}: a value_set must be the whole keyset of a "
                        "select case")
        sym = scope.lookup(ks.name)
        assert sym is not None and isinstance(sym.type, ValueSetT)
        fields = value_set_fields(sym.type.elem)
        if fields is None:
            raise error(ks, f"{ks.name}: the fields of value_set<{sym.type.elem.show()}> cannot "
                        "be matched in 'select': a struct element may hold only bit<W>, int<W>, "
                        "bool and structs of those (p4c: Type not supported for struct field in "
                        "'select')")
        ftypes = [ft for _, ft in fields]
        if ftypes != key_types:
            want = ", ".join(t.show() for t in key_types)
            raise error(ks, f"{ks.name}: value_set<{sym.type.elem.show()}> does not match the "
                        f"select key ({want}): its element fields must have the key's types, "
                        "in order")
        self.syms[id(ks)] = sym
        return True

    def check_state_name(self, name: str, node: ast.Node, scope: Scope) -> None:
        sym = scope.lookup(name)
        if sym is None or sym.kind != "state":
            raise error(node, f"{name}: declaration not found")
