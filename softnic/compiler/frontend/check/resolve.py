"""Name and type resolution: turning a syntactic type (``bit<W>``, ``H[4]``, a type name or a
generic extern instantiation) into a :mod:`softnic.compiler.ir.types` type, and a path expression
into the symbol it names.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.helpers import check_width
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    BitT,
    BlockT,
    BoolT,
    DontCareT,
    ErrorT,
    ExternT,
    HeaderT,
    InfIntT,
    MatchKindT,
    PType,
    StackT,
    StringT,
    TupleT,
    UnionT,
    VarbitT,
    VoidT,
)


class ResolveMixin(CheckerState):
    """Resolves ``ast.Type`` nodes and names through scope chains."""

    def resolve_type(self, t: ast.Type, scope: Scope) -> PType:
        if isinstance(t, ast.BitType):
            w = self.const_eval(t.width, scope)
            if not isinstance(w, int) or w <= 0 or (t.signed and w < 2 and False):
                raise error(t, f"{show_expr(t.width)}: width must be a positive constant")
            check_width(t, w, "int" if t.signed else "bit")
            return BitT(w, t.signed)
        if isinstance(t, ast.VarbitType):
            w = self.const_eval(t.max_width, scope)
            if not isinstance(w, int) or w <= 0:
                raise error(t, "varbit width must be a positive constant")
            check_width(t, w, "varbit")
            return VarbitT(w)
        if isinstance(t, ast.BoolType):
            return BoolT()
        if isinstance(t, ast.StringType):
            return StringT()
        if isinstance(t, ast.ErrorType):
            return ErrorT()
        if isinstance(t, ast.MatchKindType):
            return MatchKindT()
        if isinstance(t, ast.VoidType):
            return VoidT()
        if isinstance(t, ast.InfIntType):
            return InfIntT()
        if isinstance(t, ast.DontCareType):
            return DontCareT()
        if isinstance(t, ast.StackType):
            elem = self.resolve_type(t.elem, scope)
            if not isinstance(elem, (HeaderT, UnionT)):
                raise error(t, f"header stack element must be a header, not {elem.show()}")
            n = self.const_eval(t.size, scope)
            if not isinstance(n, int) or n <= 0:
                raise error(t, "header stack size must be a positive constant")
            return StackT(elem, n)
        if isinstance(t, ast.TupleType):
            tt = TupleT(tuple(self.resolve_type(e, scope) for e in t.elems))
            self.canonical_tuple_spelling(t, tt)
            return tt
        if isinstance(t, ast.TypeName):
            if t.name == "error":
                return ErrorT()
            sym = scope.lookup(t.name)
            if sym is None:
                raise error(t, f"{t.name}: declaration not found")
            if sym.kind == "generic":
                decl = sym.decl
                if len(t.args) != len(decl.type_params):
                    raise error(
                        t,
                        f"{t.name}: expected {len(decl.type_params)} type arguments, "
                        f"got {len(t.args)}",
                    )
                args = tuple(self.resolve_type(a, scope) for a in t.args)
                return ExternT(t.name, args, decl)
            if sym.kind in ("type", "block") and sym.type is not None:
                if t.args:
                    # ``V1Switch<H, M>(...) main;``: a package (or parser/control type) with
                    # explicit type arguments; the blocks passed to it fix the same types, and
                    # BMv2 lowering reads them from those blocks.
                    tps = getattr(sym.decl, "type_params", None) if isinstance(
                        sym.type, BlockT) else None
                    if not tps:
                        raise error(t, f"{t.name}: is not a generic type")
                    if len(t.args) != len(tps):
                        raise error(t, f"{t.name}: expected {len(tps)} type arguments, "
                                    f"got {len(t.args)}")
                    for a in t.args:
                        self.resolve_type(a, scope)
                return sym.type
            raise error(t, f"{t.name}: is not a type")
        raise error(t, f"{type(t).__name__}: unsupported type")

    @staticmethod
    def canonical_tuple_spelling(t: ast.TupleType, tt: TupleT) -> None:
        """Spell the elements of tuple type ``t`` as their resolved types (``bit<8>`` for a
        ``bit<W>`` or a typedef of it), as the type argument inferred for ``digest(r, {..})``
        is spelled: p4c's EliminateTuples makes one struct per canonical tuple type, and
        softnic's makes one per spelling, so equal tuple types must be spelled alike."""
        from softnic.compiler.frontend.check.calls import ast_type

        elems = [ast_type(x, e.loc) for x, e in zip(tt.elems, t.elems, strict=True)]
        if all(x is not None for x in elems):
            t.elems = [x for x in elems if x is not None]

    def lookup(self, e: ast.PathExpr, scope: Scope) -> Sym:
        sym = scope.lookup(e.name)
        if sym is None:
            raise error(e, f"{e.name}: declaration not found")
        self.syms[id(e)] = sym
        return sym
