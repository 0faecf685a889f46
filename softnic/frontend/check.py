"""Name resolution and type checking (the semantic half of the P4_16 front end).

The checker walks every declaration once, resolves names through :class:`Scope` chains, computes
the type of every expression with P4_16's rules and records its findings keyed by ``id(node)``:

- ``types[id(expr)]``: the expression's :mod:`types` type;
- ``syms[id(path_or_member)]``: the symbol a name resolved to;
- ``calls[id(call)]``: which action/function/extern/method a call invokes, with the argument
  bound to each parameter and the type variables inferred.

The lowering reads these tables instead of re-deriving them, so "what does this name mean" is
decided in exactly one place. User errors raise :class:`CompileError` at the offending node, with
p4c's wording where we know it. Restrictions of p4c-bm2-ss (e.g. no conditional extern calls in
actions) are enforced here too, so an unsupported program never reaches the lowering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.frontend import ast
from softnic.frontend.desugar import always_returns, walk
from softnic.frontend.diagnostics import CompileWarning
from softnic.frontend.errors import CompileError
from softnic.frontend.pretty import show_expr
from softnic.frontend.scope import Scope, Sym
from softnic.frontend.types import (
    ActionEnumT,
    ApplyResultT,
    BitT,
    BlockT,
    BoolT,
    DontCareT,
    EnumT,
    ErrorT,
    ExternT,
    HeaderT,
    InfIntT,
    MatchKindT,
    PType,
    StackT,
    StringT,
    StructT,
    TableT,
    TupleT,
    TypeVarT,
    UnionT,
    VarbitT,
    VoidT,
)

CONDITIONAL_IN_ACTION = "Conditional execution in actions unsupported on this target"
BUILTIN_METHODS = {
    "isValid",
    "setValid",
    "setInvalid",
    "push_front",
    "pop_front",
    "apply",
    "minSizeInBits",
    "minSizeInBytes",
}
SIDE_EFFECT_BUILTINS = {"setValid", "setInvalid", "push_front", "pop_front"}


@dataclass
class ParamT:
    name: str
    direction: str | None
    type: PType
    has_default: bool = False


@dataclass
class CallInfo:
    """What a call expression invokes.

    kind: 'action' | 'function' | 'extern_func' | 'method' (extern object method) | 'builtin'
    (isValid, setValid, apply, push_front, ...) | 'ctor' (constructor of a parser/control).
    ``args`` holds, for each parameter in order, the argument expression (None when omitted).
    """

    kind: str
    name: str
    decl: Any = None
    sym: Sym | None = None
    base: ast.Expr | None = None
    params: list[ParamT] = field(default_factory=list)
    args: list[ast.Expr | None] = field(default_factory=list)
    bindings: dict[str, PType] = field(default_factory=dict)
    ret: PType = field(default_factory=VoidT)


def err(node: ast.Node | None, msg: str) -> CompileError:
    return CompileError(node.loc if node is not None else None, msg)


def annotation(node: Any, name: str) -> ast.Annotation | None:
    for a in getattr(node, "annotations", []) or []:
        if a.name == name:
            return a
    return None


def annotation_string(node: Any, name: str) -> str | None:
    """The string argument of ``@name("x")``-style annotations."""
    a = annotation(node, name)
    if a is None:
        return None
    if a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
        return a.exprs[0].value
    raw = a.raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1]
    return raw


def mask(width: int) -> int:
    return (1 << width) - 1


# p4c's DefaultP4CConfiguration::maximumWidthSupported(): widths of bit<>, int<> and varbit<>
# above this are refused (ir/configuration.h). It also keeps our big-int arithmetic cheap.
MAX_WIDTH = 2048


def check_width(node: ast.Node, width: int, kind: str) -> None:
    """Refuse absurd widths up front, with p4c's message, before anything allocates by them."""
    if width > MAX_WIDTH:
        raise err(node, f"{kind}<{width}>: Compiler only supports widths up to {MAX_WIDTH}")


class Checker:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.top = Scope()
        self.types: dict[int, PType] = {}
        self.syms: dict[int, Sym] = {}
        self.calls: dict[int, CallInfo] = {}
        self.consts: dict[int, Any] = {}  # id(expr) -> folded constant value
        self.scopes: dict[int, Scope] = {}  # id(decl) -> scope its body was checked in
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.main: ast.InstantiationDecl | None = None
        self.enums: list[EnumT] = []
        self.actions: list[Sym] = []
        self._cur_action: list[str] = []
        self.table_syms: dict[str, Sym] = {}
        self.decl_syms: dict[int, Sym] = {}  # id(Param/VarDecl/instance/action/table) -> Sym
        self.warnings: list[CompileWarning] = []

    # ------------------------------------------------------------------ entry

    def run(self) -> None:
        for d in self.prog.decls:
            self.declare_top(d)
        if self.main is None:
            # No position, as p4c: the program's first declaration is in core.p4, not a place
            # the user can fix anything.
            raise CompileError(None, "No main package instantiation found; declare one, e.g. "
                               "'V1Switch(MyParser(), ..., MyDeparser()) main;'")

    def error_value(self, name: str) -> int:
        return self.errors.index(name)

    # ------------------------------------------------------------------ declarations

    def declare_top(self, d: ast.Decl) -> None:
        scope = self.top
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                if m not in self.errors:
                    self.errors.append(m)
        elif isinstance(d, ast.MatchKindDecl):
            for m in d.members:
                if m not in self.match_kinds:
                    self.match_kinds.append(m)
                scope.declare(Sym("match_kind", m, MatchKindT(), d))
        elif isinstance(d, (ast.TypedefDecl, ast.EnumDecl, ast.HeaderDecl, ast.StructDecl,
                            ast.HeaderUnionDecl)):
            self.declare_type(d, scope)
        elif isinstance(d, ast.ExternDecl):
            if d.type_params:
                scope.declare(Sym("generic", d.name, None, d))
            else:
                scope.declare(Sym("type", d.name, ExternT(d.name, (), d), d))
        elif isinstance(d, ast.ExternFunctionDecl):
            existing = scope.syms.get(d.name)
            if existing is not None and existing.kind == "extern_func":
                existing.overloads.append(d)
            else:
                scope.declare(Sym("extern_func", d.name, None, d, overloads=[d]))
        elif isinstance(d, (ast.ParserTypeDecl, ast.ControlTypeDecl, ast.PackageDecl)):
            scope.declare(Sym("type", d.name, BlockT(d.name, d), d))
        elif isinstance(d, ast.ConstDecl):
            self.declare_const(d, scope)
        elif isinstance(d, ast.ActionDecl):
            self.declare_action(d, scope, "")
        elif isinstance(d, ast.FunctionDecl):
            scope.declare(Sym("function", d.name, None, d))
            self.check_function(d, scope)
        elif isinstance(d, ast.ParserDecl):
            scope.declare(Sym("block", d.name, BlockT(d.name, d), d))
            self.check_parser(d)
        elif isinstance(d, ast.ControlDecl):
            scope.declare(Sym("block", d.name, BlockT(d.name, d), d))
            self.check_control(d)
        elif isinstance(d, ast.InstantiationDecl):
            t = self.resolve_type(d.type, scope)
            if isinstance(t, BlockT) and isinstance(t.decl, ast.PackageDecl):
                if d.name == "main":
                    self.main = d
                for a in d.args:
                    self.check_block_ctor(a.value, scope)
                scope.declare(Sym("instance", d.name, t, d))
            else:
                self.declare_instance(d, scope, "")
        else:
            raise err(d, f"{type(d).__name__}: unsupported top-level declaration")

    def check_block_ctor(self, e: ast.Expr, scope: Scope) -> None:
        if not (isinstance(e, ast.Call) and isinstance(e.target, ast.PathExpr)):
            raise err(e, f"{show_expr(e)}: expected a parser or control instantiation")
        sym = self.lookup(e.target, scope)
        if sym.kind != "block":
            raise err(e, f"{show_expr(e)}: expected a parser or control instantiation")
        if e.args:
            raise err(e, f"{show_expr(e)}: constructor parameters are unsupported on this target")
        self.calls[id(e)] = CallInfo("ctor", sym.name, sym.decl, sym)

    def declare_type(self, d: ast.Decl, scope: Scope) -> None:
        if isinstance(d, ast.TypedefDecl):
            scope.declare(Sym("type", d.name, self.resolve_type(d.type, scope), d))
        elif isinstance(d, ast.EnumDecl):
            if d.underlying is not None:
                under = self.resolve_type(d.underlying, scope)
                if not isinstance(under, BitT):
                    raise err(d, f"{d.name}: enum underlying type must be bit<> or int<>")
                vals = []
                for v in d.values:
                    c = self.const_eval(v, scope)
                    if not isinstance(c, int):
                        raise err(v, f"{show_expr(v)}: enum value must be a compile-time constant")
                    vals.append(c & mask(under.width))
                t = EnumT(d.name, tuple(d.members), under, tuple(vals))
            else:
                t = EnumT(d.name, tuple(d.members))
            self.enums.append(t)
            scope.declare(Sym("type", d.name, t, d))
        elif isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
            if getattr(d, "type_params", None):
                raise err(d, f"{d.name}: generic structures are unsupported on this target")
            fields = []
            fannos = []
            seen = set()
            for f in d.fields:
                if f.name in seen:
                    raise err(f, f"{f.name}: duplicate field name")
                seen.add(f.name)
                ft = self.resolve_type(f.type, scope)
                if isinstance(d, ast.HeaderDecl) and not isinstance(
                    ft, (BitT, VarbitT, BoolT, EnumT)
                ):
                    raise err(f, f"{f.name}: field of header {d.name} cannot have type {ft.show()}")
                if isinstance(d, ast.HeaderUnionDecl) and not isinstance(ft, HeaderT):
                    raise err(f, f"{f.name}: field of header_union must be a header")
                fields.append((f.name, ft))
                fannos.append((f.name, tuple((a.name, a.raw) for a in f.annotations)))
            if isinstance(d, ast.HeaderDecl):
                annos = tuple((a.name, a.raw) for a in d.annotations)
                t: PType = HeaderT(d.name, tuple(fields), annos)
            elif isinstance(d, ast.StructDecl):
                t = StructT(d.name, tuple(fields), tuple(fannos))
            else:
                t = UnionT(d.name, tuple(fields))
            scope.declare(Sym("type", d.name, t, d))

    def declare_const(self, d: ast.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type, scope)
        vt = self.type_of(d.value, scope, t)
        self.assignable(vt, t, d.value)
        self.fit_literal(d.value, t)
        v = self.const_eval(d.value, scope)
        if v is None:
            raise err(d.value, f"{show_expr(d.value)}: Cannot evaluate initializer for constant")
        if isinstance(t, BitT) and isinstance(v, int):
            v = v & mask(t.width) if not t.signed else v
        scope.declare(Sym("const", d.name, t, d, value=v))

    def qualify(self, d: ast.Decl, owner: str) -> str:
        n = annotation_string(d, "name")
        if n is not None:
            if n.startswith("."):
                return n[1:]
            return f"{owner}.{n}" if owner else n
        return f"{owner}.{d.name}" if owner else d.name

    def declare_action(self, d: ast.ActionDecl, scope: Scope, owner: str) -> None:
        sym = Sym("action", d.name, None, d, owner=owner, qualified=self.qualify(d, owner))
        scope.declare(sym)
        self.actions.append(sym)
        body_scope = scope.child()
        for p in d.params:
            pt = self.resolve_type(p.type, scope)
            psym = Sym("var", p.name, pt, p, direction=p.direction)
            body_scope.declare(psym)
            self.decl_syms[id(p)] = psym
        self.scopes[id(d)] = body_scope
        self.decl_syms[id(d)] = sym
        self._cur_action.append(sym.qualified)
        try:
            self.check_block(d.body, body_scope, "action")
        finally:
            self._cur_action.pop()

    def declare_instance(self, d: ast.InstantiationDecl, scope: Scope, owner: str) -> None:
        t = self.resolve_type(d.type, scope)
        if isinstance(t, BlockT):
            raise err(d, f"{d.name}: instantiating {t.name} here is unsupported on this target")
        if not isinstance(t, ExternT):
            raise err(d, f"{d.name}: cannot instantiate type {t.show()}")
        ctors = [m for m in t.decl.methods if m.ret is None and m.name == t.decl.name]
        self.check_call_args(d, ctors, d.args, scope, self.extern_bindings(t), f"{t.name}")
        isym = Sym("instance", d.name, t, d, owner=owner, qualified=self.qualify(d, owner))
        scope.declare(isym)
        self.decl_syms[id(d)] = isym

    def extern_bindings(self, t: ExternT) -> dict[str, PType]:
        tps = t.decl.type_params if t.decl is not None else []
        return dict(zip(tps, t.args, strict=False))

    # ------------------------------------------------------------------ types

    def resolve_type(self, t: ast.Type, scope: Scope) -> PType:
        if isinstance(t, ast.BitType):
            w = self.const_eval(t.width, scope)
            if not isinstance(w, int) or w <= 0 or (t.signed and w < 2 and False):
                raise err(t, f"{show_expr(t.width)}: width must be a positive constant")
            check_width(t, w, "int" if t.signed else "bit")
            return BitT(w, t.signed)
        if isinstance(t, ast.VarbitType):
            w = self.const_eval(t.max_width, scope)
            if not isinstance(w, int) or w <= 0:
                raise err(t, "varbit width must be a positive constant")
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
                raise err(t, f"header stack element must be a header, not {elem.show()}")
            n = self.const_eval(t.size, scope)
            if not isinstance(n, int) or n <= 0:
                raise err(t, "header stack size must be a positive constant")
            return StackT(elem, n)
        if isinstance(t, ast.TupleType):
            return TupleT(tuple(self.resolve_type(e, scope) for e in t.elems))
        if isinstance(t, ast.TypeName):
            if t.name == "error":
                return ErrorT()
            sym = scope.lookup(t.name)
            if sym is None:
                raise err(t, f"{t.name}: declaration not found")
            if sym.kind == "generic":
                decl = sym.decl
                if len(t.args) != len(decl.type_params):
                    raise err(
                        t,
                        f"{t.name}: expected {len(decl.type_params)} type arguments, "
                        f"got {len(t.args)}",
                    )
                args = tuple(self.resolve_type(a, scope) for a in t.args)
                return ExternT(t.name, args, decl)
            if sym.kind in ("type", "block") and sym.type is not None:
                if t.args:
                    raise err(t, f"{t.name}: is not a generic type")
                return sym.type
            raise err(t, f"{t.name}: is not a type")
        raise err(t, f"{type(t).__name__}: unsupported type")

    # ------------------------------------------------------------------ constants

    def const_eval(self, e: ast.Expr, scope: Scope) -> Any:
        """Fold a compile-time constant (int or bool); None when not constant."""
        if isinstance(e, ast.IntLiteral):
            return self.consts.get(id(e), e.value)
        if isinstance(e, ast.BoolLiteral):
            return e.value
        if isinstance(e, ast.PathExpr):
            sym = scope.lookup(e.name)
            if sym is not None and sym.kind == "const":
                return sym.value
            return None
        if isinstance(e, ast.Member) and isinstance(e.expr, ast.PathExpr):
            sym = scope.lookup(e.expr.name)
            if sym is not None and sym.kind == "type" and isinstance(sym.type, EnumT):
                if sym.type.underlying is not None and e.name in sym.type.members:
                    return sym.type.value_of(e.name)
            return None
        if isinstance(e, ast.Unary):
            v = self.const_eval(e.expr, scope)
            if v is None:
                return None
            if e.op == "!":
                return not v
            if e.op == "-":
                return -v
            if e.op == "+":
                return v
            if e.op == "~":
                t = self.types.get(id(e))
                if isinstance(t, BitT):
                    return ~v & mask(t.width)
                return ~v
            return None
        if isinstance(e, ast.Binary):
            a = self.const_eval(e.left, scope)
            b = self.const_eval(e.right, scope)
            if a is None or b is None:
                return None
            v = fold_binary(e.op, a, b)
            t = self.types.get(id(e))
            if isinstance(v, int) and not isinstance(v, bool) and isinstance(t, BitT):
                if e.op not in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
                    v = v & mask(t.width) if not t.signed else wrap_signed(v, t.width)
            return v
        if isinstance(e, ast.Cast):
            v = self.const_eval(e.expr, scope)
            return None if v is None else fold_cast(v, self.types.get(id(e)))
        if isinstance(e, ast.Ternary):
            c = self.const_eval(e.cond, scope)
            if c is None:
                return None
            return self.const_eval(e.then if c else e.other, scope)
        if isinstance(e, ast.Slice):
            v = self.const_eval(e.expr, scope)
            hi = self.const_eval(e.hi, scope)
            lo = self.const_eval(e.lo, scope)
            if v is None or hi is None or lo is None:
                return None
            return (v >> lo) & mask(hi - lo + 1)
        if isinstance(e, ast.Call) and id(e) in self.consts:
            return self.consts[id(e)]
        return None

    # ------------------------------------------------------------------ lookups

    def lookup(self, e: ast.PathExpr, scope: Scope) -> Sym:
        sym = scope.lookup(e.name)
        if sym is None:
            raise err(e, f"{e.name}: declaration not found")
        self.syms[id(e)] = sym
        return sym

    # ------------------------------------------------------------------ expressions

    def type_of(self, e: ast.Expr, scope: Scope, expected: PType | None = None) -> PType:
        t = self._type_of(e, scope, expected)
        self.types[id(e)] = t
        return t

    def _type_of(self, e: ast.Expr, scope: Scope, expected: PType | None) -> PType:
        if isinstance(e, ast.IntLiteral):
            if e.width is not None:
                if e.width <= 0:
                    raise err(e, "literal width must be positive")
                check_width(e, e.width, "int" if e.signed else "bit")
                self.fit_literal(e, BitT(e.width, e.signed))
                return BitT(e.width, e.signed)
            return InfIntT()
        if isinstance(e, ast.BoolLiteral):
            return BoolT()
        if isinstance(e, ast.StringLiteral):
            return StringT()
        if isinstance(e, ast.PathExpr):
            sym = self.lookup(e, scope)
            if sym.kind in ("var", "const", "instance"):
                return sym.type or VoidT()
            if sym.kind == "table":
                return TableT(sym.qualified)
            if sym.kind == "match_kind":
                return MatchKindT()
            if sym.kind == "type" and isinstance(sym.type, (EnumT, ErrorT)):
                return sym.type
            raise err(e, f"{e.name}: is not a value")
        if isinstance(e, ast.Member):
            return self.type_of_member(e, scope)
        if isinstance(e, ast.Index):
            bt = self.type_of(e.expr, scope)
            if not isinstance(bt, StackT):
                raise err(e, f"{show_expr(e)}: indexing a value of type {bt.show()}")
            it = self.type_of(e.index, scope)
            if not isinstance(it, (BitT, InfIntT)):
                raise err(e.index, f"{show_expr(e.index)}: array index must be an integer")
            iv = self.const_eval(e.index, scope)
            if isinstance(iv, int) and not 0 <= iv < bt.size:
                raise err(e.index, f"{show_expr(e)}: Index {iv} out of bounds for stack of size "
                          f"{bt.size}")
            if isinstance(iv, int):
                self.consts[id(e.index)] = iv
            return bt.elem
        if isinstance(e, ast.Slice):
            bt = self.type_of(e.expr, scope)
            if isinstance(bt, InfIntT):
                raise err(e, f"{show_expr(e)}: cannot slice an integer without a width")
            if not isinstance(bt, BitT):
                raise err(e, f"{show_expr(e)}: bit slice of a value of type {bt.show()}")
            self.type_of(e.hi, scope)
            self.type_of(e.lo, scope)
            hi = self.const_eval(e.hi, scope)
            lo = self.const_eval(e.lo, scope)
            if not isinstance(hi, int) or not isinstance(lo, int):
                raise err(e, f"{show_expr(e)}: slice indices must be compile-time constants")
            if hi < lo or lo < 0 or hi >= bt.width:
                raise err(e, f"{show_expr(e)}: bit slice [{hi}:{lo}] out of range for "
                          f"{bt.show()}")
            self.consts[id(e.hi)] = hi
            self.consts[id(e.lo)] = lo
            return BitT(hi - lo + 1)
        if isinstance(e, ast.Unary):
            return self.type_of_unary(e, scope, expected)
        if isinstance(e, ast.Binary):
            return self.type_of_binary(e, scope, expected)
        if isinstance(e, ast.Ternary):
            ct = self.type_of(e.cond, scope)
            if not isinstance(ct, BoolT):
                raise err(e.cond, f"{show_expr(e.cond)}: condition must be bool, not {ct.show()}")
            a = self.type_of(e.then, scope, expected)
            b = self.type_of(e.other, scope, expected)
            if isinstance(a, InfIntT) and isinstance(b, InfIntT):
                if expected is not None and isinstance(expected, BitT):
                    return expected
                if self.const_eval(e.cond, scope) is None:
                    raise err(e, f"{show_expr(e)}: width of ?: operands cannot be inferred")
                return InfIntT()
            return self.unify_operands(a, b, e)
        if isinstance(e, ast.Cast):
            return self.type_of_cast(e, scope)
        if isinstance(e, ast.Call):
            return self.type_of_call(e, scope)
        if isinstance(e, ast.ListExpr):
            exp_elems: list[PType | None] = [None] * len(e.elems)
            if isinstance(expected, (StructT, HeaderT)) and len(expected.fields) == len(e.elems):
                exp_elems = [ft for _, ft in expected.fields]
            elif isinstance(expected, TupleT) and len(expected.elems) == len(e.elems):
                exp_elems = list(expected.elems)
            pairs = zip(e.elems, exp_elems, strict=False)
            return TupleT(tuple(self.type_of(x, scope, et) for x, et in pairs))
        if isinstance(e, ast.StructInit):
            if not isinstance(expected, (StructT, HeaderT)):
                raise err(e, f"{show_expr(e)}: cannot infer the type of a structure initializer")
            names = [n for n, _ in e.fields]
            if sorted(names) != sorted(n for n, _ in expected.fields):
                raise err(e, f"{show_expr(e)}: fields do not match those of {expected.show()}")
            for n, x in e.fields:
                ft = expected.field_type(n)
                assert ft is not None
                self.assignable(self.type_of(x, scope, ft), ft, x)
            return expected
        if isinstance(e, (ast.DontCare, ast.Default)):
            return DontCareT()
        raise err(e, f"{type(e).__name__}: unsupported expression")

    def type_of_member(self, e: ast.Member, scope: Scope) -> PType:
        base = e.expr
        if isinstance(base, ast.PathExpr):
            if base.name == "error" and scope.lookup("error") is None:
                if e.name not in self.errors:
                    raise err(e, f"{show_expr(e)}: error.{e.name} is not declared")
                self.consts[id(e)] = self.error_value(e.name)
                return ErrorT()
            sym = scope.lookup(base.name)
            if sym is not None and sym.kind == "type" and isinstance(sym.type, EnumT):
                self.syms[id(base)] = sym
                if e.name not in sym.type.members:
                    raise err(e, f"{show_expr(e)}: {sym.type.name} has no member {e.name}")
                self.consts[id(e)] = sym.type.value_of(e.name)
                return sym.type
        bt = self.type_of(base, scope)
        if isinstance(bt, (HeaderT, StructT, UnionT)):
            ft = bt.field_type(e.name)
            if ft is None:
                kind = {HeaderT: "header", StructT: "structure", UnionT: "header_union"}[type(bt)]
                raise err(e, f"Field {e.name} is not a member of {kind} {bt.name}")
            return ft
        if isinstance(bt, StackT):
            if e.name in ("next", "last"):
                return bt.elem
            if e.name in ("lastIndex", "size", "nextIndex"):
                if e.name == "size":
                    self.consts[id(e)] = bt.size
                return BitT(32)
            raise err(e, f"{show_expr(e)}: header stack has no member {e.name}")
        if isinstance(bt, ApplyResultT):
            if e.name in ("hit", "miss"):
                return BoolT()
            if e.name == "action_run":
                return ActionEnumT(bt.table)
        raise err(e, f"{show_expr(e)}: no member {e.name} in a value of type {bt.show()}")

    def type_of_unary(self, e: ast.Unary, scope: Scope, expected: PType | None) -> PType:
        t = self.type_of(e.expr, scope, expected)
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise err(e, f"{show_expr(e)}: ! applied to a value of type {t.show()}")
            return t
        if e.op in ("~", "-", "+"):
            if isinstance(t, InfIntT) and e.op == "~":
                if isinstance(expected, BitT):
                    return expected
                raise err(e, f"{show_expr(e)}: ~ needs an operand with a known width")
            if not isinstance(t, (BitT, InfIntT)):
                raise err(e, f"{show_expr(e)}: {e.op} applied to a value of type {t.show()}")
            return t
        raise err(e, f"unknown unary operator {e.op}")

    def unify_operands(self, a: PType, b: PType, e: ast.Expr) -> PType:
        if isinstance(a, InfIntT) and isinstance(b, (BitT, InfIntT)):
            return b
        if isinstance(b, InfIntT) and isinstance(a, BitT):
            return a
        if isinstance(a, EnumT) and isinstance(b, EnumT) and a == b:
            return a
        if a == b:
            return a
        if isinstance(a, EnumT) and a.underlying is not None and isinstance(b, (BitT, InfIntT)):
            return a.underlying if isinstance(b, InfIntT) else self.unify_operands(
                a.underlying, b, e)
        if isinstance(b, EnumT) and b.underlying is not None and isinstance(a, BitT):
            return self.unify_operands(a, b.underlying, e)
        if isinstance(a, BitT) and isinstance(b, BitT):
            raise err(e, f"{show_expr(e)}: Cannot operate on values with different types "
                      f"{a.show()} and {b.show()}")
        raise err(e, f"{show_expr(e)}: Cannot unify {b.show()} to {a.show()}")

    def type_of_binary(self, e: ast.Binary, scope: Scope, expected: PType | None) -> PType:
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                st = self.type_of(side, scope)
                if not isinstance(st, BoolT):
                    raise err(side, f"{show_expr(side)}: {op} needs bool operands, not {st.show()}")
            return BoolT()
        if op in ("&&&", ".."):
            a = self.type_of(e.left, scope, expected)
            b = self.type_of(e.right, scope, expected)
            return self.unify_operands(a, b, e)
        if op == "++":
            a = self.type_of(e.left, scope)
            b = self.type_of(e.right, scope)
            if not isinstance(a, BitT) or not isinstance(b, BitT):
                raise err(e, f"{show_expr(e)}: ++ needs operands with known widths, got "
                          f"{a.show()} and {b.show()}")
            check_width(e, a.width + b.width, f"{show_expr(e)}: bit")
            return BitT(a.width + b.width, a.signed)
        if op in ("<<", ">>"):
            a = self.type_of(e.left, scope, expected)
            b = self.type_of(e.right, scope)
            if isinstance(b, BitT) and b.signed:
                raise err(e.right, f"{show_expr(e)}: shift amount must be unsigned")
            if not isinstance(b, (BitT, InfIntT)):
                raise err(e.right, f"{show_expr(e)}: shift amount must be an integer")
            if isinstance(a, InfIntT):
                if self.const_eval(e.right, scope) is None:
                    if isinstance(expected, BitT):
                        return expected
                    raise err(e, f"{show_expr(e)}: shift of an integer without a width by a "
                              "non-constant amount")
                return a
            if not isinstance(a, BitT):
                raise err(e, f"{show_expr(e)}: cannot shift a value of type {a.show()}")
            return a
        a = self.type_of(e.left, scope, expected)
        b = self.type_of(e.right, scope, a if not isinstance(a, InfIntT) else expected)
        if op in ("==", "!="):
            if isinstance(a, (HeaderT, StructT, UnionT, StackT)) or isinstance(
                b, (HeaderT, StructT, UnionT, StackT)
            ):
                raise err(e, f"{show_expr(e)}: comparing {a.show()} values is unsupported on "
                          "this target")
            if isinstance(a, TupleT) or isinstance(b, TupleT):
                raise err(e, f"{show_expr(e)}: comparing lists is unsupported on this target")
            self.unify_operands(a, b, e)
            return BoolT()
        if op in ("<", "<=", ">", ">="):
            t = self.unify_operands(a, b, e)
            if not isinstance(t, (BitT, InfIntT)):
                raise err(e, f"{show_expr(e)}: {op} needs integer operands, not {t.show()}")
            return BoolT()
        if op in ("+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|"):
            for t in (a, b):
                if not isinstance(t, (BitT, InfIntT)):
                    raise err(e, f"{show_expr(e)}: {op} needs integer operands, not {t.show()}")
            t = self.unify_operands(a, b, e)
            if op in ("/", "%") and self.const_eval(e.right, scope) == 0:
                # p4c's constant folder refuses these; BMv2 would fault at run time.
                what = "Division" if op == "/" else "Modulo"
                raise err(e, f"{show_expr(e)}: {what} by zero")
            if op in ("/", "%") and isinstance(t, BitT) and t.signed:
                raise err(e, f"{show_expr(e)}: division of signed values is unsupported")
            if op in ("|+|", "|-|") and isinstance(t, InfIntT):
                raise err(e, f"{show_expr(e)}: saturating arithmetic needs a width")
            return t
        raise err(e, f"unknown binary operator {op}")

    def type_of_cast(self, e: ast.Cast, scope: Scope) -> PType:
        dst = self.resolve_type(e.type, scope)
        src = self.type_of(e.expr, scope, dst)
        ok = False
        if isinstance(dst, BitT):
            ok = isinstance(src, (BitT, InfIntT)) or (
                isinstance(src, BoolT) and dst.width == 1 and not dst.signed
            ) or (isinstance(src, EnumT) and src.underlying is not None)
            if isinstance(src, BitT) and src.signed != dst.signed and src.width != dst.width:
                ok = False
        elif isinstance(dst, BoolT):
            ok = isinstance(src, BoolT) or (isinstance(src, BitT) and src.width == 1) or (
                isinstance(src, InfIntT)
            )
        elif isinstance(dst, EnumT) and dst.underlying is not None:
            ok = isinstance(src, (BitT, InfIntT)) or src == dst
        elif isinstance(dst, InfIntT):
            ok = isinstance(src, InfIntT)
        else:
            ok = src == dst
        if not ok:
            raise err(e, f"{show_expr(e)}: Illegal cast from {src.show()} to {dst.show()}")
        return dst

    # ------------------------------------------------------------------ assignment rules

    def fit_literal(self, e: ast.Expr, t: PType) -> None:
        """An integer literal stored into ``t`` keeps only ``t``'s bits. Like p4c we warn and
        record the truncated value, so the JSON never carries a constant wider than its field."""
        if not (isinstance(e, ast.IntLiteral) and isinstance(t, BitT)):
            return
        v = fit(e.value, t)
        if v != e.value:
            text = e.text or str(e.value)
            w = CompileWarning(e.loc, f"{text}: value does not fit in {t.width} bits")
            if w not in self.warnings:
                self.warnings.append(w)
            self.consts[id(e)] = v

    def assignable(self, src: PType, dst: PType, node: ast.Node) -> None:
        if src == dst or isinstance(src, DontCareT):
            return
        if isinstance(src, InfIntT) and isinstance(dst, (BitT, InfIntT)):
            return
        if isinstance(src, EnumT) and src.underlying is not None and dst == src.underlying:
            return
        if isinstance(src, TupleT) and isinstance(dst, (StructT, HeaderT)):
            if len(src.elems) == len(dst.fields):
                for st, (_, ft) in zip(src.elems, dst.fields, strict=False):
                    self.assignable(st, ft, node)
                return
        if isinstance(src, TupleT) and isinstance(dst, TupleT) and len(src.elems) == len(
            dst.elems
        ):
            for a, b in zip(src.elems, dst.elems, strict=False):
                self.assignable(a, b, node)
            return
        if isinstance(dst, TypeVarT):
            return
        raise err(node, f"Cannot unify {src.show()} to {dst.show()}")

    def check_lvalue(self, e: ast.Expr, scope: Scope) -> None:
        base: ast.Expr = e
        while isinstance(base, (ast.Member, ast.Index, ast.Slice)):
            if isinstance(base, ast.Member) and isinstance(
                self.types.get(id(base.expr)), StackT
            ) and base.name in ("lastIndex", "size"):
                raise err(e, f"{show_expr(e)}: is not a left-value")
            base = base.expr
        if isinstance(base, ast.PathExpr):
            sym = self.syms.get(id(base))
            if sym is None or sym.kind != "var":
                raise err(e, f"{show_expr(e)}: cannot be the target of an assignment")
            if sym.direction == "in" or (sym.direction is None and isinstance(
                sym.decl, ast.Param
            ) and self._cur_action):
                raise err(e, f"{show_expr(e)}: cannot be the target of an assignment")
            return
        raise err(e, f"{show_expr(e)}: is not a left-value")

    # ------------------------------------------------------------------ calls

    def type_of_call(self, e: ast.Call, scope: Scope) -> PType:
        tgt = e.target
        if isinstance(tgt, ast.Member):
            bt = self.method_base_type(tgt, scope)
            name = tgt.name
            if isinstance(bt, ExternT):
                methods = [m for m in bt.decl.methods if m.name == name and m.ret is not None]
                if not methods:
                    raise err(tgt, f"{show_expr(tgt)}: extern {bt.name} has no method {name}")
                info = self.check_call_args(
                    e, methods, e.args, scope, self.extern_bindings(bt), show_expr(tgt), e.type_args
                )
                info.kind, info.name, info.base = "method", name, tgt.expr
                info.sym = self.root_sym(tgt.expr)
                self.calls[id(e)] = info
                return info.ret
            return self.builtin_call(e, tgt, bt, scope)
        if isinstance(tgt, ast.PathExpr):
            sym = self.lookup(tgt, scope)
            if sym.kind == "action":
                d: ast.ActionDecl = sym.decl
                params = [ParamT(p.name, p.direction, self.param_type(p, sym)) for p in d.params]
                info = self.bind_args(e, params, e.args, scope, {}, tgt.name)
                info.kind, info.name, info.decl, info.sym = "action", sym.qualified, d, sym
                self.calls[id(e)] = info
                return VoidT()
            if sym.kind in ("function", "extern_func"):
                decls = sym.overloads if sym.kind == "extern_func" else [sym.decl]
                info = self.check_call_args(e, decls, e.args, scope, {}, tgt.name, e.type_args)
                info.kind, info.name, info.sym = sym.kind, sym.name, sym
                self.calls[id(e)] = info
                return info.ret
            if sym.kind == "block":
                raise err(e, f"{show_expr(e)}: instantiating {sym.name} here is unsupported on "
                          "this target")
            raise err(e, f"{tgt.name}: is not a function, action or method")
        raise err(e, f"{show_expr(e)}: is not callable")

    def method_base_type(self, tgt: ast.Member, scope: Scope) -> PType:
        base = tgt.expr
        if isinstance(base, ast.PathExpr):
            sym = self.lookup(base, scope)
            if sym.kind == "table":
                self.types[id(base)] = TableT(sym.qualified)
                return TableT(sym.qualified)
        return self.type_of(base, scope)

    def root_sym(self, e: ast.Expr) -> Sym | None:
        while isinstance(e, (ast.Member, ast.Index)):
            e = e.expr
        return self.syms.get(id(e)) if isinstance(e, ast.PathExpr) else None

    def param_type(self, p: ast.Param, owner_sym: Sym) -> PType:
        body_scope = self.scopes.get(id(owner_sym.decl))
        if body_scope is not None:
            s = body_scope.syms.get(p.name)
            if s is not None and s.type is not None:
                return s.type
        return self.resolve_type(p.type, self.top)

    def builtin_call(self, e: ast.Call, tgt: ast.Member, bt: PType, scope: Scope) -> PType:
        name = tgt.name
        info = CallInfo("builtin", name, base=tgt.expr)
        self.calls[id(e)] = info

        def no_args() -> None:
            if e.args:
                raise err(e, f"{show_expr(e)}: Expected 0 arguments, got {len(e.args)}")

        if isinstance(bt, TableT) and name == "apply":
            no_args()
            info.sym = self.syms.get(id(tgt.expr))
            return ApplyResultT(bt.name)
        if isinstance(bt, (HeaderT, UnionT)) and name == "isValid":
            no_args()
            return BoolT()
        if isinstance(bt, HeaderT) and name in ("setValid", "setInvalid"):
            no_args()
            return VoidT()
        if isinstance(bt, StackT) and name in ("push_front", "pop_front"):
            if len(e.args) != 1:
                raise err(e, f"{show_expr(e)}: Expected 1 arguments, got {len(e.args)}")
            self.type_of(e.args[0].value, scope)
            n = self.const_eval(e.args[0].value, scope)
            if not isinstance(n, int) or n < 0:
                raise err(e, f"{show_expr(e)}: argument must be a non-negative constant")
            info.args = [e.args[0].value]
            self.consts[id(e.args[0].value)] = n
            return VoidT()
        if isinstance(bt, (HeaderT, StructT)) and name in ("minSizeInBits", "minSizeInBytes"):
            no_args()
            from softnic.frontend.types import bit_width

            bits = bit_width(bt)
            if isinstance(bt, HeaderT):
                bits = sum(0 if isinstance(ft, VarbitT) else bit_width(ft) for _, ft in bt.fields)
            self.consts[id(e)] = bits if name == "minSizeInBits" else (bits + 7) // 8
            return InfIntT()
        raise err(tgt, f"{show_expr(tgt)}: no method {name} for a value of type {bt.show()}")

    def check_call_args(
        self,
        node: ast.Node,
        candidates: list[Any],
        args: list[ast.Argument],
        scope: Scope,
        outer: dict[str, PType],
        what: str,
        type_args: list[ast.Type] | None = None,
    ) -> CallInfo:
        """Pick the overload whose parameter count fits, then check the arguments against it."""
        fitting = []
        for c in candidates:
            params = c.params
            required = sum(1 for p in params if p.default is None)
            if required <= len(args) <= len(params) or (
                any(a.name for a in args) and len(args) <= len(params)
            ):
                fitting.append(c)
        if not fitting:
            counts = sorted({len(c.params) for c in candidates})
            exp = " or ".join(str(n) for n in counts) if counts else "0"
            raise err(node, f"{what}: Expected {exp} arguments, got {len(args)}")
        c = fitting[0]
        tscope = scope.child()
        for n, t in outer.items():
            tscope.bind(Sym("type", n, t))
        tparams = list(getattr(c, "type_params", []) or [])
        for tp in tparams:
            tscope.bind(Sym("type", tp, TypeVarT(tp)))
        if type_args:
            if len(type_args) != len(tparams):
                raise err(node, f"{what}: expected {len(tparams)} type arguments")
            for tp, ta in zip(tparams, type_args, strict=False):
                tscope.bind(Sym("type", tp, self.resolve_type(ta, scope)))
        params = [
            ParamT(p.name, p.direction, self.resolve_type(p.type, tscope), p.default is not None)
            for p in c.params
        ]
        explicit: dict[str, PType] = {}
        if type_args:
            for tp in tparams:
                tsym = tscope.syms[tp]
                assert tsym.type is not None
                explicit[tp] = tsym.type
        info = self.bind_args(node, params, args, scope, dict(explicit), what)
        info.decl = c
        ret = getattr(c, "ret", None)
        info.ret = subst(self.resolve_type(ret, tscope), info.bindings) if ret else VoidT()
        if isinstance(info.ret, TypeVarT):
            raise err(node, f"{what}: cannot infer the return type; give it explicitly")
        return info

    def bind_args(
        self,
        node: ast.Node,
        params: list[ParamT],
        args: list[ast.Argument],
        scope: Scope,
        bindings: dict[str, PType],
        what: str,
    ) -> CallInfo:
        by_pos: list[ast.Expr | None] = [None] * len(params)
        names = [p.name for p in params]
        if len(args) > len(params):
            raise err(node, f"{what}: Expected {len(params)} arguments, got {len(args)}")
        for i, a in enumerate(args):
            if a.name is not None:
                if a.name not in names:
                    raise err(a, f"{what}: no parameter named {a.name}")
                by_pos[names.index(a.name)] = a.value
            else:
                by_pos[i] = a.value
        for i, p in enumerate(params):
            a = by_pos[i]
            if a is None:
                if p.has_default:
                    continue
                if isinstance(node, ast.Call) or isinstance(node, ast.InstantiationDecl):
                    raise err(node, f"{what}: Expected {len(params)} arguments, got {len(args)}")
                continue
            ptype = subst(p.type, bindings)
            at = self.type_of(a, scope, None if isinstance(ptype, TypeVarT) else ptype)
            if p.direction in ("out", "inout"):
                if isinstance(a, ast.DontCare) and p.direction == "out":
                    continue
                self.check_lvalue(a, scope)
                if not has_typevar(ptype) and at != ptype:
                    raise err(a, f"{show_expr(a)}: Cannot unify {at.show()} to {ptype.show()}")
            self.unify(ptype, at, bindings, a)
        return CallInfo("", what, params=params, args=by_pos, bindings=bindings)

    def unify(self, pt: PType, at: PType, b: dict[str, PType], node: ast.Expr) -> None:
        if isinstance(pt, TypeVarT):
            if pt.name in b:
                self.assignable(at, b[pt.name], node)
            else:
                b[pt.name] = at
            return
        if isinstance(pt, TupleT) and isinstance(at, TupleT):
            for x, y in zip(pt.elems, at.elems, strict=False):
                self.unify(x, y, b, node)
            return
        self.assignable(at, pt, node)

    # ------------------------------------------------------------------ statements

    def check_block(self, blk: ast.BlockStmt, scope: Scope, ctx: str) -> None:
        inner = scope.child()
        for s in blk.stmts:
            self.check_stmt(s, inner, ctx)

    def check_stmt(self, s: Any, scope: Scope, ctx: str) -> None:
        if isinstance(s, ast.BlockStmt):
            self.check_block(s, scope, ctx)
        elif isinstance(s, ast.AssignStmt):
            lt = self.type_of(s.lhs, scope)
            self.check_lvalue(s.lhs, scope)
            if isinstance(lt, StackT):
                raise err(s, f"{show_expr(s.lhs)}: assigning a whole header stack is unsupported"
                          " on this target")
            rt = self.type_of(s.rhs, scope, lt)
            self.assignable(rt, lt, s)
            self.fit_literal(s.rhs, lt)
            if ctx == "action" and contains_side_effect_in_ternary(s.rhs, self):
                raise err(s, CONDITIONAL_IN_ACTION)
        elif isinstance(s, ast.CallStmt):
            self.type_of(s.call, scope)
            info = self.calls.get(id(s.call))
            if info is not None and info.kind == "action" and ctx == "action":
                if info.name in self._cur_action:
                    raise err(s, f"{show_expr(s.call)}: recursive action call")
        elif isinstance(s, ast.IfStmt):
            ct = self.type_of(s.cond, scope)
            if not isinstance(ct, BoolT):
                raise err(s.cond, f"{show_expr(s.cond)}: condition must be bool, not {ct.show()}")
            self.check_stmt(s.then, scope.child(), ctx)
            if s.other is not None:
                self.check_stmt(s.other, scope.child(), ctx)
            if ctx == "action":
                for branch in (s.then, s.other):
                    if branch is not None and self.has_side_effects(branch):
                        raise err(s, CONDITIONAL_IN_ACTION)
        elif isinstance(s, ast.SwitchStmt):
            if ctx in ("action", "function"):
                raise err(s, "switch statements in actions are unsupported on this target")
            self.check_switch(s, scope, ctx)
        elif isinstance(s, ast.VarDecl):
            t = self.resolve_type(s.type, scope)
            if isinstance(t, (ExternT, VoidT)):
                raise err(s, f"{s.name}: variables of type {t.show()} are not allowed")
            if s.init is not None:
                it = self.type_of(s.init, scope, t)
                self.assignable(it, t, s.init)
                self.fit_literal(s.init, t)
            vsym = Sym("var", s.name, t, s, direction="inout")
            scope.declare(vsym)
            self.decl_syms[id(s)] = vsym
        elif isinstance(s, ast.ConstDecl):
            self.declare_const(s, scope)
        elif isinstance(s, ast.ExitStmt):
            if ctx == "function":
                raise err(s, "exit in functions is unsupported on this target")
        elif isinstance(s, ast.ReturnStmt):
            if s.value is not None:
                if ctx != "function":
                    raise err(s, "return with a value outside a function")
                self.type_of(s.value, scope)
        elif isinstance(s, ast.EmptyStmt):
            pass
        elif isinstance(s, ast.InstantiationDecl):
            raise err(s, f"{s.name}: instantiation inside a block is not allowed")
        elif isinstance(s, ast.ActionDecl):
            raise err(s, f"{s.name}: nested action declarations are not allowed")
        else:
            raise err(s, f"{type(s).__name__}: unsupported statement")

    def check_switch(self, s: ast.SwitchStmt, scope: Scope, ctx: str) -> None:
        t = self.type_of(s.expr, scope)
        if not isinstance(t, ActionEnumT):
            self.check_value_switch(s, t, scope, ctx)
            return
        table_sym = self.table_syms.get(t.table)
        allowed = set()
        if table_sym is not None:
            allowed = {r.name for r in self.table_action_refs(table_sym.decl)}
        seen: set[str] = set()
        for c in s.cases:
            if isinstance(c.label, ast.Default):
                pass
            elif isinstance(c.label, ast.PathExpr):
                sym = self.lookup(c.label, scope)
                if sym.kind != "action" or (allowed and c.label.name not in allowed):
                    raise err(c.label, f"{c.label.name}: not an action of table {t.table}")
                if c.label.name in seen:
                    raise err(c.label, f"{c.label.name}: duplicate switch label")
                seen.add(c.label.name)
            else:
                raise err(c.label, f"{show_expr(c.label)}: switch label must be an action name")
            if c.body is not None:
                self.check_block(c.body, scope, ctx)

    def check_value_switch(self, s: ast.SwitchStmt, t: PType, scope: Scope, ctx: str) -> None:
        """``switch (e) { 1: {...} default: {...} }`` on a bit<W>/int<W>/enum/error value;
        the labels must be distinct compile-time constants of e's type."""
        if not isinstance(t, (BitT, EnumT, ErrorT)):
            raise err(s.expr, f"{show_expr(s.expr)}: switch on a value of type {t.show()} is "
                      "not allowed")
        seen: set[Any] = set()
        for i, c in enumerate(s.cases):
            if isinstance(c.label, ast.Default):
                if i != len(s.cases) - 1:
                    raise err(c.label, "default label must be the last switch label")
            else:
                lt = self.type_of(c.label, scope, t)
                self.assignable(lt, t, c.label)
                v = self.const_eval(c.label, scope)
                if v is None:
                    v = self.consts.get(id(c.label))
                if not isinstance(v, int):
                    raise err(c.label, f"{show_expr(c.label)}: switch label must be a "
                              "compile-time constant")
                if isinstance(t, BitT):
                    v &= mask(t.width)
                if v in seen:
                    raise err(c.label, f"{show_expr(c.label)}: duplicate switch label")
                seen.add(v)
                self.consts[id(c.label)] = v
            if c.body is not None:
                self.check_block(c.body, scope, ctx)

    def has_side_effects(self, s: Any) -> bool:
        """True if running ``s`` calls an extern or changes header validity (p4c-bm2-ss can
        predicate plain assignments inside actions, but not those)."""
        if isinstance(s, ast.BlockStmt):
            return any(self.has_side_effects(x) for x in s.stmts)
        if isinstance(s, ast.IfStmt):
            return self.has_side_effects(s.then) or (
                s.other is not None and self.has_side_effects(s.other)
            )
        if isinstance(s, ast.CallStmt):
            info = self.calls.get(id(s.call))
            if info is None:
                return True
            if info.kind == "action":
                return self.has_side_effects(info.decl.body)
            if info.kind == "builtin":
                return info.name in SIDE_EFFECT_BUILTINS
            return True
        if isinstance(s, ast.AssignStmt):
            return expr_has_call(s.rhs, self) or expr_has_call(s.lhs, self)
        if isinstance(s, (ast.VarDecl,)):
            return s.init is not None and expr_has_call(s.init, self)
        if isinstance(s, (ast.ExitStmt, ast.ReturnStmt)):
            return True
        return False

    # ------------------------------------------------------------------ functions, parsers

    def check_function(self, d: ast.FunctionDecl, scope: Scope) -> None:
        if d.type_params:
            raise err(d, f"{d.name}: generic functions are unsupported on this target")
        body_scope = scope.child()
        for p in d.params:
            psym = Sym("var", p.name, self.resolve_type(p.type, scope), p, direction=p.direction)
            body_scope.declare(psym)
            self.decl_syms[id(p)] = psym
        self.scopes[id(d)] = body_scope
        self.check_block(d.body, body_scope, "function")
        ret = self.resolve_type(d.ret, scope)
        if not isinstance(ret, VoidT):
            if not always_returns(d.body):
                raise err(d, f"{d.name}: function does not return a value on every path")
            for n in walk(d.body):
                if isinstance(n, ast.ReturnStmt):
                    if n.value is None:
                        raise err(n, f"{d.name}: return without a value in a function returning "
                                  f"{ret.show()}")
                    self.assignable(self.types[id(n.value)], ret, n.value)
        else:
            for n in walk(d.body):
                if isinstance(n, ast.ReturnStmt) and n.value is not None:
                    raise err(n, f"{d.name}: return with a value in a void function")

    def declare_params(self, params: list[ast.Param], scope: Scope) -> None:
        for p in params:
            t = self.resolve_type(p.type, scope)
            psym = Sym("var", p.name, t, p, direction=p.direction or "in")
            scope.declare(psym)
            self.decl_syms[id(p)] = psym

    def check_parser(self, d: ast.ParserDecl) -> None:
        if d.type_params:
            raise err(d, f"{d.name}: generic parsers are unsupported on this target")
        scope = self.top.child(owner=d.name)
        self.scopes[id(d)] = scope
        self.declare_params(d.params + d.ctor_params, scope)
        for loc in d.locals:
            self.declare_local(loc, scope, d.name)
        names = {s.name for s in d.states}
        if "start" not in names:
            raise err(d, f"{d.name}: parser has no start state")
        for st in d.states:
            if st.name in ("accept", "reject"):
                raise err(st, f"{st.name}: state name is reserved")
            scope.declare(Sym("state", st.name, None, st))
        for nm in ("accept", "reject"):
            scope.declare(Sym("state", nm, None, None))
        for st in d.states:
            sscope = scope.child()
            self.scopes[id(st)] = sscope
            for s in st.stmts:
                if isinstance(s, ast.SwitchStmt):
                    raise err(s, "switch in parser states is not allowed")
                if isinstance(s, ast.IfStmt):
                    raise err(s, "if statements in parser states are unsupported on this target")
                self.check_stmt(s, sscope, "parser")
            self.check_transition(st, sscope)

    def check_transition(self, st: ast.ParserState, scope: Scope) -> None:
        tr = st.transition
        if tr is None:
            raise err(st, f"{st.name}: state has no transition")
        if not tr.select_exprs:
            self.check_state_name(tr.next_state or "", tr, scope)
            return
        key_types = [self.type_of(k, scope) for k in tr.select_exprs]
        for kt, k in zip(key_types, tr.select_exprs, strict=False):
            if not isinstance(kt, (BitT, BoolT, EnumT, ErrorT)):
                raise err(k, f"{show_expr(k)}: cannot select on a value of type {kt.show()}")
        for c in tr.cases:
            self.check_state_name(c.state, c, scope)
            ks = c.keyset
            if isinstance(ks, (ast.Default, ast.DontCare)):
                continue
            elems = ks.elems if isinstance(ks, ast.ListExpr) and len(key_types) > 1 else [ks]
            if len(elems) != len(key_types):
                raise err(ks, f"{show_expr(ks)}: keyset has {len(elems)} elements, select has "
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
                raise err(p, f"{show_expr(p)}: keyset must be a compile-time constant")
            if v is not None:
                self.consts[id(p)] = int(v)
        self.types[id(el)] = kt

    def check_state_name(self, name: str, node: ast.Node, scope: Scope) -> None:
        sym = scope.lookup(name)
        if sym is None or sym.kind != "state":
            raise err(node, f"{name}: declaration not found")

    # ------------------------------------------------------------------ controls

    def check_control(self, d: ast.ControlDecl) -> None:
        if d.type_params:
            raise err(d, f"{d.name}: generic controls are unsupported on this target")
        scope = self.top.child(owner=d.name)
        self.scopes[id(d)] = scope
        self.declare_params(d.params + d.ctor_params, scope)
        for loc in d.locals:
            self.declare_local(loc, scope, d.name)
        self.check_block(d.apply, scope, "apply")

    def declare_local(self, d: ast.Decl, scope: Scope, owner: str) -> None:
        if isinstance(d, ast.ConstDecl):
            self.declare_const(d, scope)
        elif isinstance(d, ast.VarDecl):
            self.check_stmt(d, scope, "local")
        elif isinstance(d, ast.InstantiationDecl):
            self.declare_instance(d, scope, owner)
        elif isinstance(d, ast.ActionDecl):
            self.declare_action(d, scope, owner)
        elif isinstance(d, ast.TableDecl):
            self.declare_table(d, scope, owner)
        elif isinstance(d, ast.FunctionDecl):
            scope.declare(Sym("function", d.name, None, d))
            self.check_function(d, scope)
        else:
            raise err(d, f"{type(d).__name__}: unsupported local declaration")

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
                raise err(d, f"{d.name}: duplicate table property {n}")
        if "actions" not in names:
            raise err(d, f"{d.name}: table has no actions property")
        key_types: list[PType] = []
        action_names: list[str] = []
        for p in d.properties:
            if p.name == "key":
                for k in p.keys:
                    kt = self.type_of(k.expr, scope)
                    if not isinstance(kt, (BitT, BoolT, EnumT, ErrorT)):
                        raise err(k.expr, f"{show_expr(k.expr)}: cannot match on a value of type "
                                  f"{kt.show()}")
                    mk = scope.lookup(k.match_kind)
                    if mk is None or mk.kind != "match_kind":
                        raise err(k, f"{k.match_kind}: declaration not found")
                    key_types.append(kt)
            elif p.name == "actions":
                for a in p.actions:
                    asym = scope.lookup(a.name)
                    if asym is None:
                        raise err(a, f"{a.name}: declaration not found")
                    if asym.kind != "action":
                        raise err(a, f"{a.name}: is not an action")
                    if a.name in action_names:
                        raise err(a, f"{a.name}: duplicate action in table {d.name}")
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
                if not isinstance(v, int) or v <= 0:
                    raise err(p, f"{d.name}: size must be a positive integer constant")
                self.consts[id(p)] = v
            elif p.name in ("counters", "meters"):
                want = "direct_counter" if p.name == "counters" else "direct_meter"
                if p.value is None or not isinstance(p.value, ast.PathExpr):
                    raise err(p, f"{d.name}: {p.name} must name a {want} instance")
                vs = self.lookup(p.value, scope)
                if vs.kind != "instance" or not isinstance(vs.type, ExternT) or (
                    vs.type.name != want
                ):
                    raise err(p, f"{show_expr(p.value)}: expected a {want} instance")
            elif p.name == "support_timeout":
                if p.value is None or self.const_eval(p.value, scope) is None:
                    raise err(p, "support_timeout must be a boolean constant")
            elif p.name == "implementation":
                raise err(p, f"{d.name}: table implementation (action profiles/selectors) is "
                          "unsupported on this target")
            elif p.name in ("key", "actions", "largest_priority_wins", "priority_delta"):
                pass
            elif p.name.startswith("psa_") or p.name.startswith("@"):
                pass
            else:
                raise err(p, f"{p.name}: unknown table property")
        scope.declare(sym)
        self.decl_syms[id(d)] = sym
        self.table_syms[sym.qualified] = sym

    def check_action_ref_args(self, a: ast.ActionRef, asym: Sym, scope: Scope) -> None:
        d: ast.ActionDecl = asym.decl
        directional = [p for p in d.params if p.direction is not None]
        if len(a.args) != len(directional):
            raise err(a, f"{a.name}: Expected {len(directional)} arguments, got {len(a.args)}")
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
            raise err(p, f"{d.name}: default_action must be an action call")
        name = call.target.name
        if name not in action_names:
            raise err(call, f"{name}: default action is not in the actions list of {d.name}")
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
                raise err(call, f"{asym.name}: Expected {len(params)} arguments, got "
                          f"{len(call.args)}")
            if p.direction is None:
                v = self.const_eval(a, scope)
                if v is None:
                    raise err(a, f"{show_expr(a)}: action argument must be a compile-time "
                              "constant")
                self.consts[id(a)] = int(v)
        info.kind, info.name, info.decl, info.sym = "action", asym.qualified, d, asym
        self.calls[id(call)] = info

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
            raise err(ks, f"{show_expr(ks)}: entry has {len(elems)} keys, table {d.name} has "
                      f"{len(key_types)}")
        for el, kt in zip(elems, key_types, strict=False):
            self.check_keyset_elem(el, kt, scope)
        call = ent.action
        if not isinstance(call.target, ast.PathExpr) or call.target.name not in action_names:
            raise err(call, f"{show_expr(call.target)}: entry action is not in the actions list of"
                      f" {d.name}")
        asym = self.lookup(call.target, scope)
        self.check_table_action_call(call, asym, scope)
        if ent.priority is not None:
            v = self.const_eval(ent.priority, scope)
            if not isinstance(v, int):
                raise err(ent.priority, "entry priority must be a constant")
            self.consts[id(ent.priority)] = v


def expr_has_call(e: Any, chk: Checker) -> bool:
    """Does evaluating ``e`` call an extern or function (anything with side effects)?"""
    if isinstance(e, ast.Call):
        info = chk.calls.get(id(e))
        if info is None or info.kind != "builtin" or info.name not in ("isValid",
                                                                      "minSizeInBits",
                                                                      "minSizeInBytes"):
            return True
    if isinstance(e, ast.Expr):
        for v in vars(e).values():
            if isinstance(v, ast.Expr) and expr_has_call(v, chk):
                return True
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, ast.Expr) and expr_has_call(x, chk):
                        return True
                    if isinstance(x, ast.Argument) and expr_has_call(x.value, chk):
                        return True
    return False


def contains_side_effect_in_ternary(e: Any, chk: Checker) -> bool:
    if isinstance(e, ast.Ternary):
        return expr_has_call(e.then, chk) or expr_has_call(e.other, chk)
    if isinstance(e, ast.Expr):
        return any(
            isinstance(v, ast.Expr) and contains_side_effect_in_ternary(v, chk)
            for v in vars(e).values()
        )
    return False


def has_typevar(t: PType) -> bool:
    if isinstance(t, TypeVarT):
        return True
    if isinstance(t, TupleT):
        return any(has_typevar(x) for x in t.elems)
    return False


def subst(t: PType, b: dict[str, PType]) -> PType:
    if isinstance(t, TypeVarT) and t.name in b:
        return b[t.name]
    if isinstance(t, TupleT):
        return TupleT(tuple(subst(x, b) for x in t.elems))
    return t


def wrap_signed(v: int, width: int) -> int:
    v &= mask(width)
    return v - (1 << width) if v >> (width - 1) else v


def fit(v: int, t: BitT) -> int:
    """``v`` as a value of ``t``: the low bits, read as two's complement when signed."""
    return wrap_signed(v, t.width) if t.signed else v & mask(t.width)


def fold_cast(v: Any, t: PType | None) -> Any:
    """The compile-time value of casting constant ``v`` to ``t``."""
    if isinstance(t, BitT):
        return fit(int(v), t)
    if isinstance(t, BoolT):
        return bool(v)
    return v


def fold_binary(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a // b if b else None
    if op == "%":
        return a % b if b else None
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return a << b
    if op == ">>":
        return a >> b
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "&&":
        return a and b
    if op == "||":
        return a or b
    return None
