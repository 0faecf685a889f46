"""Abstract syntax tree of the P4_16 subset softnic compiles.

The front end's parser (``frontend/parser.py``) builds these nodes and its passes rewrite them;
the checker (``frontend/check``) resolves names and types on them; the P4Info collector and the
BMv2 lowering read them. Every node carries a ``loc`` (a :class:`~softnic.compiler.diagnostics.Loc`)
so that any later stage can report ``file:line:col: error: ...``.

Conventions:
- Names are plain strings; a leading dot (``.foo``, top-level scope) is kept in the string.
- Integer literals keep the width/signedness the source gave (``8w5`` -> width 8, ``5`` -> None).
- Annotations keep their raw argument text and, when the arguments parse as expressions, the
  parsed expressions (``@name("x")`` -> exprs [StringLiteral("x")]).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from softnic.compiler.diagnostics import Loc as Loc  # re-exported: ast.Loc is the node position

NOLOC = Loc("<builtin>", 0, 0)

# Binary operators by precedence level, lowest first (p4c p4parser.ypp %left lines): the parser
# builds by it and ``pretty`` prints by it, so messages show an expression as it parses.
BINARY_LEVELS: list[tuple[str, ...]] = [
    ("||",),
    ("&&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("|",),
    ("^",),
    ("&",),
    ("<<", ">>"),
    ("++", "+", "-", "|+|", "|-|"),
    ("*", "/", "%"),
]
BINARY_PREC = {op: level for level, ops in enumerate(BINARY_LEVELS) for op in ops}


@dataclass
class Node:
    loc: Loc = field(default=NOLOC, kw_only=True, compare=False, repr=False)


@dataclass
class Annotation(Node):
    name: str
    raw: str = ""  # argument text between the parentheses, as written ("" when none)
    exprs: list[Expr] = field(default_factory=list)  # parsed arguments, [] if unparsable
    kv: dict[str, Expr] = field(default_factory=dict)  # @anno[key=value, ...] form


# --------------------------------------------------------------------------- types


@dataclass
class Type(Node):
    pass


@dataclass
class BitType(Type):
    """``bit<W>`` (signed=False) or ``int<W>`` (signed=True); ``width`` is a constant Expr."""

    width: Expr
    signed: bool = False


@dataclass
class VarbitType(Type):
    max_width: Expr


@dataclass
class BoolType(Type):
    pass


@dataclass
class StringType(Type):
    pass


@dataclass
class ErrorType(Type):
    pass


@dataclass
class MatchKindType(Type):
    pass


@dataclass
class VoidType(Type):
    pass


@dataclass
class InfIntType(Type):
    """``int`` without a width (arbitrary-precision compile-time integer)."""


@dataclass
class DontCareType(Type):
    """``_`` used as a type argument."""


@dataclass
class TypeName(Type):
    """A reference to a named type, optionally specialised: ``register<bit<32>>``, ``H``."""

    name: str
    args: list[Type] = field(default_factory=list)


@dataclass
class StackType(Type):
    """``T[size]`` header stack."""

    elem: Type
    size: Expr


@dataclass
class TupleType(Type):
    elems: list[Type]


# --------------------------------------------------------------------------- expressions


@dataclass
class Expr(Node):
    pass


@dataclass
class IntLiteral(Expr):
    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass
class BoolLiteral(Expr):
    value: bool


@dataclass
class StringLiteral(Expr):
    value: str


@dataclass
class PathExpr(Expr):
    name: str


@dataclass
class Member(Expr):
    expr: Expr
    name: str


@dataclass
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass
class Unary(Expr):
    op: str  # '!', '~', '-', '+'
    expr: Expr


@dataclass
class Binary(Expr):
    """Binary operators, including '++', '|+|', '|-|', '&&&' (mask) and '..' (range)."""

    op: str
    left: Expr
    right: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Cast(Expr):
    type: Type
    expr: Expr


@dataclass
class Argument(Node):
    value: Expr  # DontCare for '_'
    name: str | None = None  # named argument 'name = value'


@dataclass
class Call(Expr):
    """Method/function/action call or constructor call: ``target<type_args>(args)``."""

    target: Expr
    args: list[Argument] = field(default_factory=list)
    type_args: list[Type] = field(default_factory=list)


@dataclass
class ListExpr(Expr):
    """``{a, b, c}``: tuple / list / struct initializer by position."""

    elems: list[Expr]


@dataclass
class StructInit(Expr):
    """``{f1 = a, f2 = b}``: struct initializer by name."""

    fields: list[tuple[str, Expr]]


@dataclass
class DontCare(Expr):
    """``_`` as an expression or keyset."""


@dataclass
class Default(Expr):
    """``default`` keyset."""


@dataclass
class TypeExpr(Expr):
    """A type used in expression position, e.g. ``bit<8>`` in ``(bit<8>) x`` never gets here,
    but ``error.X``/``MyEnum.A`` are Member(PathExpr); this covers ``sizeof``-like uses."""

    type: Type


# --------------------------------------------------------------------------- statements


@dataclass
class Stmt(Node):
    pass


@dataclass
class BlockStmt(Stmt):
    stmts: list[Stmt | Decl] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class AssignStmt(Stmt):
    lhs: Expr
    rhs: Expr


@dataclass
class CallStmt(Stmt):
    call: Call


@dataclass
class IfStmt(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None = None


@dataclass
class SwitchCase(Node):
    label: Expr  # PathExpr(action name) / Default() / constant expression
    body: BlockStmt | None  # None = fall through to the next case


@dataclass
class SwitchStmt(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass
class ExitStmt(Stmt):
    pass


@dataclass
class ReturnStmt(Stmt):
    value: Expr | None = None


@dataclass
class EmptyStmt(Stmt):
    pass


# --------------------------------------------------------------------------- declarations


@dataclass
class Decl(Node):
    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass
class Param(Node):
    direction: str | None  # 'in' | 'out' | 'inout' | None (directionless)
    type: Type
    name: str
    default: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ConstDecl(Decl, Stmt):
    type: Type
    value: Expr


@dataclass
class VarDecl(Decl, Stmt):
    type: Type
    init: Expr | None = None


@dataclass
class TypedefDecl(Decl):
    type: Type
    is_newtype: bool = False  # 'type' instead of 'typedef'


@dataclass
class EnumDecl(Decl):
    members: list[str]
    underlying: Type | None = None  # serializable enum: enum bit<8> E { A = 1, ... }
    values: list[Expr] = field(default_factory=list)


@dataclass
class ErrorDecl(Decl):
    """``error { A, B }`` (name is always 'error'; several declarations merge)."""

    members: list[str] = field(default_factory=list)


@dataclass
class MatchKindDecl(Decl):
    members: list[str] = field(default_factory=list)


@dataclass
class StructField(Node):
    type: Type
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class HeaderDecl(Decl):
    fields: list[StructField]
    type_params: list[str] = field(default_factory=list)


@dataclass
class StructDecl(Decl):
    fields: list[StructField]
    type_params: list[str] = field(default_factory=list)


@dataclass
class HeaderUnionDecl(Decl):
    fields: list[StructField]


@dataclass
class MethodProto(Node):
    """A method or constructor inside an extern declaration (constructor: ret is None)."""

    name: str
    ret: Type | None
    params: list[Param]
    type_params: list[str] = field(default_factory=list)
    is_abstract: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ExternDecl(Decl):
    """``extern Name<T> { ... }`` (object) — methods include constructors (ret None)."""

    type_params: list[str] = field(default_factory=list)
    methods: list[MethodProto] = field(default_factory=list)


@dataclass
class ExternFunctionDecl(Decl):
    """``extern void f<T>(in T x);``"""

    ret: Type
    params: list[Param]
    type_params: list[str] = field(default_factory=list)


@dataclass
class FunctionDecl(Decl):
    ret: Type
    params: list[Param]
    body: BlockStmt
    type_params: list[str] = field(default_factory=list)


@dataclass
class ParserTypeDecl(Decl):
    """``parser Parser<H, M>(packet_in b, out H parsedHdr, ...);`` (a type, no body)."""

    type_params: list[str]
    params: list[Param]


@dataclass
class ControlTypeDecl(Decl):
    type_params: list[str]
    params: list[Param]


@dataclass
class PackageDecl(Decl):
    type_params: list[str]
    params: list[Param]


@dataclass
class SelectCase(Node):
    keyset: Expr  # Default(), DontCare(), expr, Binary('&&&'), Binary('..'), ListExpr (tuple)
    state: str
    state_loc: Loc = field(default=NOLOC, kw_only=True, compare=False, repr=False)


@dataclass
class Transition(Node):
    """``transition state;`` (select_exprs empty, next_state set) or ``transition select(...)``."""

    next_state: str | None = None
    select_exprs: list[Expr] = field(default_factory=list)
    cases: list[SelectCase] = field(default_factory=list)
    state_loc: Loc = field(default=NOLOC, kw_only=True, compare=False, repr=False)  # next_state's


@dataclass
class ParserState(Decl):
    stmts: list[Stmt | Decl]
    transition: Transition | None  # None only for the built-in accept/reject


@dataclass
class ParserDecl(Decl):
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]
    type_params: list[str] = field(default_factory=list)


@dataclass
class ActionDecl(Decl, Stmt):
    params: list[Param]
    body: BlockStmt


@dataclass
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ActionRef(Node):
    """An entry of ``actions = { ... }``: ``a;`` or ``a(args);`` with optional annotations
    (``@tableonly``, ``@defaultonly``)."""

    name: str
    args: list[Argument] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class TableEntry(Node):
    keyset: Expr  # single keyset expr or ListExpr for several keys
    action: Call  # action call with arguments
    priority: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)
    is_const: bool = False


@dataclass
class TableProperty(Node):
    """One table property. Exactly one of the payload fields is set, by ``name``:
    'key' -> keys; 'actions' -> actions; 'entries' -> entries; anything else
    ('default_action', 'size', 'counters', 'meters', 'implementation', 'support_timeout', ...)
    -> value (an Expr; for default_action a Call or PathExpr)."""

    name: str
    is_const: bool = False
    keys: list[KeyElement] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    entries: list[TableEntry] = field(default_factory=list)
    value: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class TableDecl(Decl):
    properties: list[TableProperty]


@dataclass
class InstantiationDecl(Decl, Stmt):
    """``register<bit<32>>(1024) r;`` / ``V1Switch(P(), ...) main;``"""

    type: Type
    args: list[Argument]


@dataclass
class ControlDecl(Decl):
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]  # actions, tables, instantiations, constants, variables
    apply: BlockStmt
    type_params: list[str] = field(default_factory=list)


@dataclass
class Program(Node):
    decls: list[Decl]
