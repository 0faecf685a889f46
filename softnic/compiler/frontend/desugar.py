"""Source-to-source rewrites that p4c's front and mid end do before the BMv2 back end runs.

BMv2 JSON has no functions, no sub-controls, no constructor parameters, no ``if`` inside a parser
state and no initialised control-level variables. p4c removes these constructs by rewriting the
program (InlineFunctions, InlineControls, RemoveParserControlFlow, MoveInitializers), and so do
we, on the AST, before the checker sees it. Doing it at the source level means the checker and
the lowering only ever meet the core subset, and every rewritten node keeps the location of the
code it came from, so later errors still point at the user's source.

Names are resolved first (:class:`Resolve`, p4c's UniqueNames/ResolveReferences): a reference
to a shadowable top-level declaration becomes ``.name`` and a block-local that hides an outer
local is renamed, so code copied into another scope keeps its meaning.

The rewrites (run per top-level declaration, in source order, so a callee is always finished
before its caller is):

- control instances (``TtlGuard(8w2) guard;`` + ``guard.apply(a, b)``): the callee's locals are
  copied into the caller under fresh internal names and ``@name("guard.x")`` (so their
  control-plane names are ``Caller.guard.x``, as with p4c); constructor parameters become the
  constant arguments; each ``apply`` call becomes an :class:`InlinedApply` block in which the
  apply parameters are bound to the arguments with the spec's copy-in/copy-out
  (:func:`bind_params`: fresh variables where a copy can change the result, the argument in
  place where it provably cannot); a callee action parameter named like a caller name in the
  arguments is renamed (keeping its control-plane name) so it cannot capture it;
- functions: every call is expanded in front of the statement that contains it; parameters are
  bound like above, ``return`` is removed by moving the code that follows it into the other
  branch of the enclosing ``if`` and the result lands in a fresh ``retval`` variable;
- (control- and parser-level variable initialisers were already moved to the start of
  ``apply`` or of the ``start`` state by the MoveInitializers pass, which runs first);
- an ``if`` inside a parser state splits the state into ``s``, ``s_true``, ``s_false`` and
  ``s_join`` joined by ``select(cond)``, exactly like p4c's RemoveParserControlFlow.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from softnic.compiler.diagnostics import error
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import (
    ArgTypes,
    Names,
    children,
    header_resets,
    is_scalar_type,
    map_children,
    transform,
    type_decl,
    type_decls,
    unsized_literal,
    walk,
)
from softnic.compiler.ir.pretty import show_expr


@dataclass
class InlinedApply(ast.BlockStmt):
    """The body of an inlined ``control.apply(...)``: a ``return`` inside it ends only this
    block, not the calling control. ``copy_outs`` are the call's copy-out assignments (copies
    of those that end the block): an ``exit`` inside still performs them first, as the spec
    says, also when it comes from an action inlined there later."""

    instance: str = ""
    copy_outs: list[Any] = field(default_factory=list)


# ---------------------------------------------------------------------- name resolution
# (tree walking, fresh names and declared types live in softnic.compiler.ir.ast_util, shared
# with the passes; the names are imported here and stay importable from this module)


BODIES = (ast.FunctionDecl, ast.ActionDecl, ast.ControlDecl, ast.ParserDecl)


class Resolve:
    """Make every name mean the same thing wherever inlining moves it (p4c runs UniqueNames
    and resolves all references before InlineFunctions/InlineControls).

    - A reference to a top-level declaration whose name is also declared somewhere below the
      top level (a local, a parameter) becomes ``.name``, P4's explicit top-level path, so an
      inlined function or control body still means the global when the call site declares its
      own ``K``. Names no local declares stay as written (nothing can capture them).
    - A variable or constant declared in a block (apply, action, function or state body) that
      shadows an enclosing local name is renamed to a fresh name, with its uses. After this no
      block-level name hides another, so renaming and substituting by name (below) cannot hit
      the wrong declaration.
    """

    def __init__(self, prog: ast.Program, names: Names) -> None:
        self.names = names
        top = {d.name for d in prog.decls if isinstance(d, ast.Decl)}
        local: set[str] = set()
        for d in prog.decls:
            if not isinstance(d, BODIES):
                continue
            local.update(getattr(d, "type_params", []))
            for n in walk(d):
                if n is not d and isinstance(n, (ast.Decl, ast.Param)) and not isinstance(
                        n, ast.ParserState):
                    local.add(n.name)
        self.shadowed = top & local

    def run(self, prog: ast.Program) -> None:
        for d in prog.decls:
            if isinstance(d, BODIES):
                self.node(d, {})

    def top_level(self, e: Any) -> Any:
        """Qualify an expression that is evaluated at the top level (main's arguments)."""
        self.node(e, {})
        return e

    def global_name(self, name: str) -> str | None:
        """The top-level declaration a reference names after :meth:`run`, None for a local."""
        if name.startswith("."):
            return name[1:]
        return None if name in self.shadowed else name

    def ref(self, node: Any, scope: dict[str, str]) -> None:
        n = node.name
        if n in scope:
            node.name = scope[n]
        elif n in self.shadowed:
            node.name = "." + n

    def node(self, n: Any, scope: dict[str, str]) -> None:
        if isinstance(n, ast.Annotation):
            return  # annotation bodies are not P4 expressions in scope
        if isinstance(n, (ast.PathExpr, ast.ActionRef, ast.TypeName)):
            self.ref(n, scope)
            if not isinstance(n, ast.PathExpr):
                for c in children(n):
                    self.node(c, scope)
        elif isinstance(n, (ast.FunctionDecl, ast.ActionDecl)):
            inner = {**scope, **{t: t for t in getattr(n, "type_params", [])}}
            for p in n.params:
                self.node(p.type, inner)
                if p.default is not None:
                    self.node(p.default, scope)
            inner.update({p.name: p.name for p in n.params})
            self.block(n.body.stmts, inner)
        elif isinstance(n, (ast.ControlDecl, ast.ParserDecl)):
            inner = {**scope, **{t: t for t in n.type_params}}
            for p in n.params + n.ctor_params:
                self.node(p.type, inner)
                if p.default is not None:
                    self.node(p.default, inner)
            inner.update({p.name: p.name for p in n.params + n.ctor_params})
            for x in n.locals:
                self.node(x, inner)
                inner[x.name] = x.name
            if isinstance(n, ast.ControlDecl):
                self.block(n.apply.stmts, inner)
            else:
                for st in n.states:
                    after = self.block(st.stmts, inner)
                    if st.transition is not None:
                        self.node(st.transition, after)
        elif isinstance(n, ast.BlockStmt):
            self.block(n.stmts, scope)
        else:
            for c in children(n):
                self.node(c, scope)

    def block(self, stmts: list[Any], scope: dict[str, str]) -> dict[str, str]:
        scope = dict(scope)
        declared = [s.name for s in stmts if isinstance(s, ast.Decl)]
        for s in stmts:
            self.node(s, scope)
            if not isinstance(s, ast.Decl):
                continue
            # a name declared twice in one block keeps its spelling: the checker refuses it
            if isinstance(s, (ast.VarDecl, ast.ConstDecl)) and s.name in scope and (
                    declared.count(s.name) == 1):
                new = self.names.fresh(s.name)
                scope[s.name] = new
                s.name = new
            else:
                scope[s.name] = s.name
        return scope


# ---------------------------------------------------------------------- substitution


DECLS_RENAMED = (ast.VarDecl, ast.ConstDecl, ast.ActionDecl, ast.TableDecl,
                 ast.InstantiationDecl, ast.FunctionDecl)


def substitute(node: Any, mapping: dict[str, ast.Expr | str]) -> Any:
    """Replace names in ``node`` (in place): a ``str`` value renames the declaration and every
    use; an expression value replaces each use by a copy of it. Action and function parameters
    shadow the mapping inside their bodies (their names are part of the control-plane API and
    stay as written)."""
    if not mapping:
        return node
    if isinstance(node, ast.PathExpr):
        m = mapping.get(node.name)
        if isinstance(m, str):
            node.name = m
        elif m is not None:
            new = copy.deepcopy(m)
            return new
        return node
    if isinstance(node, (ast.ActionDecl, ast.FunctionDecl)):
        inner = {k: v for k, v in mapping.items() if k not in {p.name for p in node.params}}
        for p in node.params:
            if p.default is not None:
                p.default = substitute(p.default, mapping)
            p.type = substitute(p.type, mapping)
        node.body = substitute(node.body, inner)
        m = mapping.get(node.name)
        if isinstance(m, str):
            node.name = m
        return node
    if isinstance(node, DECLS_RENAMED):
        m = mapping.get(node.name)
        if isinstance(m, str):
            node.name = m
    if isinstance(node, ast.ActionRef):
        m = mapping.get(node.name)
        if isinstance(m, str):
            node.name = m
    if not is_dataclass(node):
        return node
    for f in fields(node):
        if f.name in ("loc", "annotations"):
            continue
        v = getattr(node, f.name)
        if isinstance(v, ast.Node):
            setattr(node, f.name, substitute(v, mapping))
        elif isinstance(v, list):
            setattr(node, f.name, [
                substitute(x, mapping) if isinstance(x, ast.Node)
                else tuple(substitute(y, mapping) if isinstance(y, ast.Node) else y for y in x)
                if isinstance(x, tuple) else x
                for x in v
            ])
    return node


def declared_names(node: Any) -> list[str]:
    """Names of the variables and constants declared anywhere inside ``node``."""
    out = []
    for n in walk(node):
        if isinstance(n, (ast.VarDecl, ast.ConstDecl)) and n.name not in out:
            out.append(n.name)
    return out


# ---------------------------------------------------------------------- locations

Chain = tuple[str, ...]
WILD = "*"  # a stack element whose index is only known at run time (also ``.next``/``.last``)


def lvalue_chain(e: ast.Expr) -> Chain | None:
    """The access path of a location (``hdr.s[2].f`` -> ``('hdr', 's', '2', 'f')``), slices
    stripped; a run-time index is :data:`WILD`. None when ``e`` is not a location."""
    while isinstance(e, ast.Slice):
        e = e.expr
    if isinstance(e, ast.PathExpr):
        return (e.name,)
    if isinstance(e, ast.Member):
        base = lvalue_chain(e.expr)
        if base is None:
            return None
        return base + ((WILD,) if e.name in ("next", "last") else (e.name,))
    if isinstance(e, ast.Index):
        base = lvalue_chain(e.expr)
        if base is None:
            return None
        i = e.index
        return base + ((str(i.value),) if isinstance(i, ast.IntLiteral) else (WILD,))
    return None


def overlap(a: Chain, b: Chain) -> bool:
    """Two locations share storage: one contains the other (a run-time index may be any)."""
    return all(x == y or WILD in (x, y) for x, y in zip(a, b, strict=False))


def body_accesses(body: Any, own: set[str]) -> tuple[list[Chain], list[Chain]]:
    """(read, written) locations of code that are not rooted at a name in ``own`` (the
    callee's parameters and locals): what the callee touches directly in the caller's scope.
    Conservative: every argument of a call and the object of every method call but
    ``isValid`` counts as written."""
    reads: list[Chain] = []
    writes: list[Chain] = []

    def write(e: Any) -> None:
        c = lvalue_chain(e) if isinstance(e, ast.Expr) else None
        if c is not None and c[0] not in own:
            writes.append(c)

    def visit(n: Any) -> None:
        if isinstance(n, ast.AssignStmt):
            write(n.lhs)
        elif isinstance(n, ast.Call):
            t = n.target
            if isinstance(t, ast.Member) and t.name != "isValid":
                write(t.expr)
            for a in n.args:
                write(a.value)
        if isinstance(n, (ast.PathExpr, ast.Member, ast.Index)):
            c = lvalue_chain(n)
            if c is not None:
                if c[0] not in own:
                    reads.append(c)
                # the run-time indices inside it are reads of their own
                for x in walk(n):
                    if isinstance(x, ast.Index) and not isinstance(x.index, ast.IntLiteral):
                        visit(x.index)
                return
        for c in children(n):
            visit(c)

    visit(body)
    return reads, writes


def is_literal(e: ast.Expr) -> bool:
    if isinstance(e, (ast.IntLiteral, ast.BoolLiteral)):
        return True
    if isinstance(e, ast.Cast):
        return is_literal(e.expr)
    if isinstance(e, ast.Unary) and e.op == "-":
        return is_literal(e.expr)
    return False



def bind_args(call_node: ast.Node, params: list[ast.Param], args: list[ast.Argument],
              what: str) -> list[ast.Expr | None]:
    """The argument bound to each parameter (by position or name); None when omitted."""
    out: list[ast.Expr | None] = [None] * len(params)
    names = [p.name for p in params]
    if len(args) > len(params):
        raise error(call_node, f"{what}: Expected {len(params)} arguments, got {len(args)}")
    for i, a in enumerate(args):
        if a.name is not None:
            if a.name not in names:
                raise error(a, f"{what}: no parameter named {a.name}")
            out[names.index(a.name)] = a.value
        else:
            out[i] = a.value
    for i, p in enumerate(params):
        if out[i] is None:
            if p.default is not None:
                out[i] = p.default
            elif p.direction != "out":
                raise error(call_node, f"{what}: Expected {len(params)} arguments, got "
                            f"{len(args)}")
    return out


def copies(dst: ast.Expr, src: ast.Expr, t: ast.Type, types: dict[str, ast.Decl]
           ) -> list[Any]:
    """``dst = src`` element by element when ``t`` is a header stack of known size (BMv2
    copies headers, not whole stacks); [] for any other type (one plain assignment does)."""
    d = type_decl(t, types)
    if not (isinstance(d, ast.StackType) and isinstance(d.size, ast.IntLiteral)):
        return []
    return [ast.AssignStmt(
        ast.Index(copy.deepcopy(dst), ast.IntLiteral(i, loc=dst.loc), loc=dst.loc),
        ast.Index(copy.deepcopy(src), ast.IntLiteral(i, loc=src.loc), loc=src.loc),
        loc=src.loc) for i in range(d.size.value)]


def hoist_indices(names: Names, e: ast.Expr, before: list[Any]) -> ast.Expr:
    """``e`` with each run-time stack index on its location path evaluated once, into a
    fresh ``bit<32>`` variable declared in ``before`` (so a copy-out writes the element the
    call read, whatever the callee does to the index's operands)."""
    if isinstance(e, (ast.Member, ast.Slice)):
        e.expr = hoist_indices(names, e.expr, before)
    elif isinstance(e, ast.Index):
        e.expr = hoist_indices(names, e.expr, before)
        if not isinstance(e.index, ast.IntLiteral):
            tmp = names.fresh("index")
            t = ast.BitType(ast.IntLiteral(32, loc=e.loc), loc=e.loc)
            before.append(ast.VarDecl(tmp, t, ast.Cast(copy.deepcopy(t), e.index, loc=e.loc),
                                      loc=e.loc))
            e.index = ast.PathExpr(tmp, loc=e.loc)
    return e


def bind_params(names: Names, call_node: ast.Node, params: list[ast.Param],
                args: list[ast.Expr | None], what: str, pinned: Iterable[str] = (),
                body: Any = None, types: dict[str, ast.Decl] | None = None,
                unproven: Iterable[str] = (), written: list[ast.Argument] | None = None
                ) -> tuple[dict[str, ast.Expr | str], list[Any], list[Any]]:
    """Parameter bindings for an inlined body: (mapping, statements before, copy-outs after),
    following the P4_16 spec's copy-in/copy-out: arguments are evaluated once, left to right,
    ``in``/``inout`` ones copied into fresh variables, the body runs on those, and ``out``/
    ``inout`` ones are copied back at the end, left to right; an ``out`` one starts
    uninitialised (its headers invalid).

    The copies are left out where that provably changes nothing, so the JSON stays small: a
    literal is substituted (cast to the parameter's type when it has no width), and a location
    argument is used in place unless it shares storage with an ``out``/``inout`` argument,
    with something ``body`` (the callee's code, when it can see the caller's variables, as a
    control's action can) writes or, for ``out``/``inout``, touches directly, or names one of
    ``pinned`` (variables the bound code cannot see). Slices and run-time stack indices are
    always copied; an ``out`` argument holding headers too, and the arguments of the
    parameters named in ``unproven`` (whose type the caller could not prove equal to the
    parameter's: the copy's declaration and assignments let the checker judge it). ``types``
    maps the top-level type names to their declarations; ``written`` are the call's arguments
    as written, whose order (named ones may differ from the parameters') is the evaluation
    and copy-out order."""
    types = types or {}
    chains = [lvalue_chain(a) if a is not None and not isinstance(a, ast.DontCare) else None
              for a in args]
    pinned = set(pinned)
    unproven = set(unproven)
    own = {p.name for p in params} | set(declared_names(body)) if body is not None else set()
    reads, writes = body_accesses(body, own) if body is not None else ([], [])
    mapping: dict[str, ast.Expr | str] = {}
    before: list[Any] = []
    after: list[Any] = []

    def results_overlap(i: int) -> bool:
        """Argument ``i`` shares storage with another ``out``/``inout`` argument."""
        c = chains[i]
        return c is not None and any(
            j != i and d is not None and params[j].direction in ("out", "inout")
            and overlap(c, d) for j, d in enumerate(chains))

    def temp(p: ast.Param, init: ast.Expr | None, loc: ast.Loc) -> str:
        tmp = names.fresh(p.name)
        elems = copies(ast.PathExpr(tmp, loc=loc), init, p.type, types) if init else None
        before.append(ast.VarDecl(tmp, copy.deepcopy(p.type), None if elems else init,
                                  loc=loc))
        before.extend(elems or [])
        if init is None and p.direction == "out":
            before.extend(header_resets(ast.PathExpr(tmp, loc=loc), p.type, types))
        mapping[p.name] = tmp
        return tmp

    for i in written_order(params, written):
        p, a = params[i], args[i]
        if isinstance(a, ast.DontCare) and p.direction != "out":
            raise error(a, "_: don't care argument only allowed for out parameters")
        if a is None or isinstance(a, ast.DontCare):
            temp(p, None, call_node.loc)
            continue
        ch = chains[i]
        in_place = ch is not None and WILD not in ch and not isinstance(a, ast.Slice) and not any(
            isinstance(n, ast.PathExpr) and n.name in pinned for n in walk(a)) and not (
            results_overlap(i)) and p.name not in unproven
        if p.direction in ("out", "inout"):
            if ch is None:
                raise error(a, f"{show_expr(a)}: Read-only value used for out/inout parameter "
                            f"{p.name}")
            touched = any(overlap(ch, c) for c in reads + writes)
            if p.direction == "out" and not is_scalar_type(p.type, types):
                in_place = False
            if in_place and not touched:
                mapping[p.name] = a
                continue
            a = hoist_indices(names, copy.deepcopy(a), before)
            tmp = temp(p, copy.deepcopy(a) if p.direction == "inout" else None, a.loc)
            tmp_ref = ast.PathExpr(tmp, loc=a.loc)
            after.extend(copies(a, tmp_ref, p.type, types) or [
                ast.AssignStmt(a, tmp_ref, loc=a.loc)])
            continue
        pt = type_decl(p.type, types)
        if isinstance(pt, ast.InfIntType) and unsized_literal(a):
            mapping[p.name] = a
            continue
        if unsized_literal(a) and isinstance(pt, (ast.BitType, type(None))):
            mapping[p.name] = ast.Cast(copy.deepcopy(p.type), a, loc=a.loc)
            continue
        if p.name in unproven:
            temp(p, copy.deepcopy(a), a.loc)
            continue
        if is_literal(a) or (in_place and not any(overlap(ch, c) for c in writes)):
            mapping[p.name] = a
            continue
        temp(p, copy.deepcopy(a), a.loc)
    return mapping, before, after


def written_order(params: list[ast.Param], written: list[ast.Argument] | None) -> list[int]:
    """The parameter indices in the order their arguments are written in the call, then the
    parameters it leaves to their defaults."""
    names = [p.name for p in params]
    out: list[int] = []
    for i, a in enumerate(written or []):
        j = names.index(a.name) if a.name in names else i
        if j < len(params) and j not in out:
            out.append(j)
    return out + [i for i in range(len(params)) if i not in out]


def copy_out_before_exits(stmts: list[Any], copy_outs: list[Any]) -> list[Any]:
    """``stmts`` with (fresh copies of) the copy-outs also run right before each ``exit`` in
    them, nested blocks and inlined controls included: "any copy-out behavior due to ``out``
    or ``inout`` parameters of the enclosing action or control, and all of its callers, is
    still performed" when ``exit`` runs (P4_16 spec, exit statement; p4c's InsertBeforeExits
    does it for actions)."""
    out: list[Any] = []
    for s in stmts:
        if isinstance(s, ast.ExitStmt):
            out.extend(copy.deepcopy(copy_outs))
        elif isinstance(s, ast.BlockStmt):
            s.stmts = copy_out_before_exits(s.stmts, copy_outs)
        elif isinstance(s, ast.IfStmt):
            s.then = exit_branch(copy_out_before_exits(as_list(s.then), copy_outs), s.then)
            if s.other is not None:
                s.other = exit_branch(copy_out_before_exits(as_list(s.other), copy_outs),
                                      s.other)
        elif isinstance(s, ast.SwitchStmt):
            for c in s.cases:
                if c.body is not None:
                    c.body.stmts = copy_out_before_exits(c.body.stmts, copy_outs)
        out.append(s)
    return out


def exit_branch(ss: list[Any], orig: Any) -> Any:
    if isinstance(orig, ast.BlockStmt) or len(ss) != 1:
        return ast.BlockStmt(ss, loc=orig.loc)
    return ss[0]


# ---------------------------------------------------------------------- return elimination


def as_list(s: Any) -> list[Any]:
    if s is None:
        return []
    if isinstance(s, ast.BlockStmt) and not isinstance(s, InlinedApply):
        return list(s.stmts)
    return [s]


def may_return(s: Any) -> bool:
    if isinstance(s, ast.ReturnStmt):
        return True
    if isinstance(s, InlinedApply):
        return False
    if isinstance(s, ast.BlockStmt):
        return any(may_return(x) for x in s.stmts)
    if isinstance(s, ast.IfStmt):
        return may_return(s.then) or (s.other is not None and may_return(s.other))
    if isinstance(s, ast.SwitchStmt):
        return any(c.body is not None and may_return(c.body) for c in s.cases)
    return False


def always_returns(s: Any) -> bool:
    if s is None:
        return False
    if isinstance(s, ast.ReturnStmt):
        return True
    if isinstance(s, ast.BlockStmt) and not isinstance(s, InlinedApply):
        return any(always_returns(x) for x in s.stmts)
    if isinstance(s, ast.IfStmt):
        return always_returns(s.then) and always_returns(s.other)
    return False


def remove_returns(stmts: list[Any], retval: str | None) -> list[Any]:
    """Rewrite a function body without ``return``: the value goes to ``retval`` and whatever
    follows a conditional return moves into the branches that do not return."""
    out: list[Any] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.ReturnStmt):
            if s.value is not None and retval is not None:
                out.append(ast.AssignStmt(ast.PathExpr(retval, loc=s.loc), s.value, loc=s.loc))
            return out
        if not may_return(s):
            out.append(s)
            continue
        rest = stmts[i + 1:]
        if isinstance(s, ast.BlockStmt):
            return out + remove_returns(list(s.stmts) + rest, retval)
        if isinstance(s, ast.IfStmt):
            # ``rest`` can land in both branches: the second gets its own copy, so no AST node
            # is shared (the checker and the lowering key their tables by node identity).
            then = remove_returns(as_list(s.then) + ([] if always_returns(s.then) else rest),
                                  retval)
            other_rest = [] if always_returns(s.other) else copy.deepcopy(rest)
            other = remove_returns(as_list(s.other) + other_rest, retval)
            out.append(ast.IfStmt(s.cond, ast.BlockStmt(then, loc=s.then.loc),
                                  ast.BlockStmt(other, loc=s.loc) if other else None,
                                  loc=s.loc))
            return out
        raise error(s, "return inside this statement is unsupported on this target")
    return out


# ---------------------------------------------------------------------- the rewriter


class Desugar:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.resolve = Resolve(prog, self.names)
        self.functions: dict[str, ast.FunctionDecl] = {}
        self.blocks: dict[str, ast.Decl] = {}
        self.types = type_decls(prog)
        self.argtypes = ArgTypes(prog)
        # the declared types of the names in scope where the walk is
        self.env: dict[str, ast.Type] = dict(self.argtypes.top_env)

    def run(self) -> ast.Program:
        self.resolve.run(self.prog)
        self.bind_main_ctor_args()
        for d in self.prog.decls:
            if isinstance(d, ast.FunctionDecl):
                if not d.type_params:
                    self.env = {**self.argtypes.top_env, **param_types(d.params)}
                    d.body = ast.BlockStmt(self.stmts(d.body.stmts, {}), loc=d.body.loc)
                self.functions[d.name] = d
            elif isinstance(d, ast.ActionDecl):
                self.env = dict(self.argtypes.top_env)
                self.action(d, {})
            elif isinstance(d, ast.ControlDecl):
                self.control(d)
                self.blocks[d.name] = d
            elif isinstance(d, ast.ParserDecl):
                self.parser(d)
                self.blocks[d.name] = d
        return self.prog

    # ------------------------------------------------------------------ main's arguments

    def bind_main_ctor_args(self) -> None:
        """``V1Switch(P(), VC(), MyIngress(8w3), ...)``: fix the constructor parameters of a
        top-level block instantiated once with arguments."""
        decls = {d.name: d for d in self.prog.decls if isinstance(d, (ast.ControlDecl,
                                                                      ast.ParserDecl))}
        seen: set[str] = set()
        for d in self.prog.decls:
            if not isinstance(d, ast.InstantiationDecl):
                continue
            for a in d.args:
                c = a.value
                if not (isinstance(c, ast.Call) and isinstance(c.target, ast.PathExpr)):
                    continue
                blk = decls.get(c.target.name)
                if blk is None or not (c.args or blk.ctor_params):
                    continue
                if blk.name in seen:
                    raise error(c, f"{blk.name}: instantiating a block with constructor arguments "
                                "more than once is unsupported on this target")
                seen.add(blk.name)
                vals = bind_args(c, blk.ctor_params, c.args, blk.name)
                mapping: dict[str, ast.Expr | str] = {
                    p.name: self.resolve.top_level(v)
                    for p, v in zip(blk.ctor_params, vals, strict=True) if v is not None}
                blk.ctor_params = []
                c.args = []
                for f in ("locals", "apply", "states"):
                    if hasattr(blk, f):
                        setattr(blk, f, substitute(getattr(blk, f), mapping)
                                if not isinstance(getattr(blk, f), list)
                                else [substitute(x, mapping) for x in getattr(blk, f)])

    # ------------------------------------------------------------------ controls

    def control(self, d: ast.ControlDecl) -> None:
        instances: dict[str, tuple[ast.ControlDecl, dict[str, ast.Expr | str], list[Any],
                                   ast.InstantiationDecl]] = {}
        local_names = [x.name for x in d.locals]
        for loc in d.locals:
            callee = self.callee_control(loc)
            if callee is not None:
                assert isinstance(loc, ast.InstantiationDecl)
                if local_names.count(loc.name) > 1:
                    raise error(loc, f"{loc.name}: Duplicates declaration {loc.name}")
                callee = self.unshadow_action_params(callee, self.caller_names(d, loc))
                mapping, copied = self.instance_locals(loc, callee)
                instances[loc.name] = (callee, mapping, copied, loc)
        sites = {n: 0 for n in instances}
        for s in walk(d.apply):
            n = self.apply_target(s, instances)
            if n is not None:
                sites[n] += 1
        # an instance passed as a constructor argument (``Inc() inc; Twice(inc) tw;``) is the
        # same instance: each ``c.apply`` inlined with ``tw`` applies ``inc`` once more
        for lname in reversed(list(instances)):
            callee, mapping, _, _ = instances[lname]
            for s in walk(callee.apply):
                m = self.apply_target(s, {k: None for k, v in mapping.items()
                                          if isinstance(v, ast.PathExpr) and v.name in instances})
                if m is not None:
                    target = mapping[m]
                    assert isinstance(target, ast.PathExpr)
                    sites[target.name] += sites[lname]
        bound: dict[str, list[Any]] = {}  # instance -> locals once its parameters are bound
        lifted: dict[str, list[Any]] = {}  # instance -> its argument temporaries
        fixed: dict[str, dict[str, ast.Expr | str]] = {}  # instance -> its parameter variables
        for lname, (callee, _, copied, _inst) in instances.items():
            pnames = {p.name for p in callee.params}
            uses_params = any(isinstance(n, ast.PathExpr) and n.name in pnames
                              for x in copied for n in walk(x))
            if uses_params and sites[lname] > 1:
                fixed[lname] = self.parameter_variables(d, lname, callee, instances, lifted)
                bound[lname] = [substitute(x, fixed[lname]) for x in copied]
            if sites[lname] and not uses_params:
                bound[lname] = copied
        # the names an apply argument can use (block locals flattened: a name declared in
        # two sibling blocks may get the wrong type here, which can only cost a copy)
        self.env = {**self.argtypes.top_env, **param_types(d.params + d.ctor_params),
                    **local_types(d.locals), **local_types(
                        [n for n in walk(d.apply) if isinstance(n, ast.VarDecl)])}
        d.apply = self.replace_applies(d.apply, instances, bound, lifted,
                                       set(declared_names(d.apply)), fixed)
        for n in walk(d.apply):
            if isinstance(n, ast.PathExpr) and n.name in instances:
                raise error(n, f"{n.name}: a control instance can only be applied, as a "
                            f"statement: {n.name}.apply(...);")
        new_locals: list[Any] = []
        for loc in d.locals:
            if isinstance(loc, ast.InstantiationDecl) and loc.name in instances:
                # the temporaries first: the bound actions read them
                new_locals.extend(lifted.get(loc.name, []) + bound.get(loc.name, []))
            else:
                new_locals.append(loc)
        d.locals = new_locals
        local_funcs = {x.name: x for x in d.locals if isinstance(x, ast.FunctionDecl)}
        funcs = {**self.functions, **local_funcs}
        control_env = {**self.argtypes.top_env, **param_types(d.params + d.ctor_params),
                       **local_types(d.locals)}
        for x in d.locals:
            self.env = control_env
            if isinstance(x, ast.ActionDecl):
                self.action(x, funcs)
            elif isinstance(x, ast.FunctionDecl):
                self.env = {**control_env, **param_types(x.params)}
                x.body = ast.BlockStmt(self.stmts(x.body.stmts, funcs), loc=x.body.loc)
        self.env = control_env
        d.apply = ast.BlockStmt(self.stmts(d.apply.stmts, funcs), loc=d.apply.loc)

    def callee_control(self, loc: Any) -> ast.ControlDecl | None:
        if not isinstance(loc, ast.InstantiationDecl) or not isinstance(loc.type, ast.TypeName):
            return None
        name = self.resolve.global_name(loc.type.name)
        blk = self.blocks.get(name) if name is not None else None
        if isinstance(blk, ast.ParserDecl):
            raise error(loc, f"{loc.name}: parser instantiation (sub-parsers) is unsupported on "
                        "this target")
        return blk if isinstance(blk, ast.ControlDecl) else None

    def caller_names(self, d: ast.ControlDecl, inst: ast.InstantiationDecl) -> set[str]:
        """The local names (of the caller) in the expressions that the instance's constructor
        and apply calls bind to the callee's parameters."""
        exprs: list[Any] = list(inst.args)
        for s in walk(d.apply):
            if self.apply_target(s, {inst.name: None}) is not None:
                exprs.extend(s.call.args)
        return {n.name for e in exprs for n in walk(e)
                if isinstance(n, ast.PathExpr) and not n.name.startswith(".")}

    def unshadow_action_params(self, callee: ast.ControlDecl, avoid: set[str]
                               ) -> ast.ControlDecl:
        """The callee, with every action parameter named like one of ``avoid`` renamed.

        The callee's parameters are replaced by the caller's argument expressions, also inside
        its actions, whose parameters would otherwise capture a caller variable of the same
        name. The parameter keeps its control-plane name (``@name``, as p4c's
        UniqueParameters does), and named arguments in calls of the action follow it."""
        renames: dict[str, dict[str, str]] = {}
        for x in callee.locals:
            if isinstance(x, ast.ActionDecl):
                r = {p.name: self.names.fresh(p.name) for p in x.params if p.name in avoid}
                if r:
                    renames[x.name] = r
        if not renames:
            return callee
        callee = copy.deepcopy(callee)
        for x in callee.locals:
            r = renames.get(x.name) if isinstance(x, ast.ActionDecl) else None
            if not r:
                continue
            for p in x.params:
                if p.name in r:
                    if not any(a.name == "name" for a in p.annotations):
                        p.annotations.append(ast.Annotation(
                            "name", f'"{p.name}"', [ast.StringLiteral(p.name, loc=p.loc)],
                            loc=p.loc))
                    p.name = r[p.name]
            x.body = substitute(x.body, dict(r))
        for n in walk(callee):
            if isinstance(n, ast.Call) and isinstance(n.target, ast.PathExpr):
                r, args = renames.get(n.target.name), n.args
            elif isinstance(n, ast.ActionRef):
                r, args = renames.get(n.name), n.args
            else:
                continue
            for a in args if r else []:
                if a.name is not None:
                    a.name = r.get(a.name, a.name)
        return callee

    def instance_locals(self, inst: ast.InstantiationDecl, callee: ast.ControlDecl
                        ) -> tuple[dict[str, ast.Expr | str], list[Any]]:
        """The callee's locals renamed for this instance, plus the mapping that renames them
        (and the names declared in its apply block and actions) and fixes the constructor
        parameters."""
        inner = declared_names(callee.apply) + [
            n for x in callee.locals if isinstance(x, ast.ActionDecl)
            for n in declared_names(x.body)]
        return instance_locals(self.names, inst, callee, inner)

    def apply_target(self, s: Any, instances: dict[str, Any]) -> str | None:
        if isinstance(s, ast.CallStmt):
            t = s.call.target
            if isinstance(t, ast.Member) and t.name == "apply" and isinstance(
                    t.expr, ast.PathExpr) and t.expr.name in instances:
                return t.expr.name
        return None

    def parameter_variables(self, d: ast.ControlDecl, n: str, callee: ast.ControlDecl,
                            instances: dict[str, Any], lifted: dict[str, list[Any]]
                            ) -> dict[str, ast.Expr | str]:
        """For an instance applied more than once whose tables or actions read its apply
        parameters: one control-level variable per directional parameter, which every call
        copies its arguments into and back out of (p4c's GeneralInliner when the call sites
        differ). A directionless parameter must get the same argument at every call."""
        calls = [s.call for s in walk(d.apply) if self.apply_target(s, {n: None}) is not None]
        argss = [bind_args(c, callee.params, c.args, f"{n}.apply") for c in calls]
        out: dict[str, ast.Expr | str] = {}
        for i, p in enumerate(callee.params):
            if p.direction is None:
                if not argss:  # applied only through a constructor argument
                    continue
                first = argss[0][i]
                for c, args in zip(calls, argss, strict=True):
                    if args[i] != first:
                        raise error(c, f"{p.name}: non-directional parameters must be "
                                    "substituted with the same value in all invocations; two "
                                    f"different substitutions are {show_expr(first)} and "
                                    f"{show_expr(args[i])}")
                if first is not None:
                    out[p.name] = first
                continue
            tmp = self.names.fresh(p.name)
            lifted.setdefault(n, []).append(ast.VarDecl(tmp, copy.deepcopy(p.type), None,
                                                        loc=p.loc))
            out[p.name] = tmp
        return out

    def fixed_copies(self, s: ast.CallStmt, callee: ast.ControlDecl, args: list[Any],
                     variables: dict[str, ast.Expr | str]) -> tuple[list[Any], list[Any]]:
        """(copy-in, copy-out) of one call of an instance bound to parameter variables."""
        before: list[Any] = []
        after: list[Any] = []
        for i in written_order(callee.params, s.call.args):
            p, a = callee.params[i], args[i]
            v = variables.get(p.name)
            if p.direction is None or not isinstance(v, str):
                continue
            ref = ast.PathExpr(v, loc=s.loc)
            if p.direction == "out":
                before.extend(header_resets(ref, p.type, self.types))
            if isinstance(a, ast.DontCare) and p.direction != "out":
                raise error(a, "_: don't care argument only allowed for out parameters")
            if a is None or isinstance(a, ast.DontCare):
                continue
            if lvalue_chain(a) is None and p.direction != "in":
                raise error(a, f"{show_expr(a)}: Read-only value used for out/inout parameter "
                            f"{p.name}")
            a = hoist_indices(self.names, copy.deepcopy(a), before)
            if p.direction in ("in", "inout"):
                before.extend(copies(ref, a, p.type, self.types) or [
                    ast.AssignStmt(copy.deepcopy(ref), copy.deepcopy(a), loc=a.loc)])
            if p.direction in ("out", "inout"):
                after.extend(copies(a, ref, p.type, self.types) or [
                    ast.AssignStmt(a, copy.deepcopy(ref), loc=a.loc)])
        return before, after

    def replace_applies(self, node: Any, instances: dict[str, Any], bound: dict[str, list[Any]],
                        lifted: dict[str, list[Any]], block_locals: set[str],
                        fixed: dict[str, dict[str, ast.Expr | str]]) -> Any:
        """Each ``inst.apply(args)`` becomes the callee's body with its parameters bound. When
        the callee's locals use the parameters too and there is one call site, they are bound
        with the same arguments, and argument temporaries become control-level variables; an
        argument that names a variable of the apply block (which control-level actions cannot
        see) then goes through such a temporary too. With several call sites, the parameters
        are the control-level variables of ``fixed``, copied in and out at each call."""

        def fn(s: Any) -> Any:
            n = self.apply_target(s, instances)
            if n is None:
                return s
            callee, mapping, copied, _ = instances[n]
            args = bind_args(s.call, callee.params, s.call.args, f"{n}.apply")
            if n in fixed:
                pmap = fixed[n]
                before, after = self.fixed_copies(s, callee, args, pmap)
            else:
                pmap, before, after = bind_params(self.names, s, callee.params, args,
                                                  f"{n}.apply",
                                                  block_locals if n not in bound else (),
                                                  types=self.types, written=s.call.args,
                                                  unproven=self.argtypes.unproven(
                                                      callee.params, args, self.env))
            if n not in bound:
                bound[n] = [substitute(x, pmap) for x in copied]
                stmts = []
                for v in before:
                    if not isinstance(v, ast.VarDecl):  # header resets, element copies
                        stmts.append(v)
                        continue
                    lifted.setdefault(n, []).append(ast.VarDecl(v.name, v.type, None,
                                                                loc=v.loc))
                    if v.init is not None:
                        stmts.append(ast.AssignStmt(ast.PathExpr(v.name, loc=v.loc), v.init,
                                                    loc=v.loc))
                before = stmts
            body = substitute(copy.deepcopy(callee.apply), {**mapping, **pmap})
            if any(isinstance(v, ast.PathExpr) and v.name in instances
                   for v in mapping.values()):
                body = transform(body, fn)  # the shared instances' applies (see control())
            if after:
                body.stmts = copy_out_before_exits(body.stmts, after)
            # a ``return`` in the callee ends the InlinedApply and lands on the copy-outs
            inlined = InlinedApply([body], loc=s.loc, instance=n, copy_outs=copy.deepcopy(after))
            return ast.BlockStmt(before + [inlined] + after, loc=s.loc)

        return transform(node, fn)

    # ------------------------------------------------------------------ actions, functions

    def action(self, d: ast.ActionDecl, funcs: dict[str, ast.FunctionDecl]) -> None:
        """Inline the calls in an action body and remove its ``return`` statements.

        BMv2 actions are straight-line primitive lists with no way to stop early, so, like
        p4c, the code after a conditional ``return`` moves into the branch that does not
        return; the lowering then predicates it (or the checker refuses it when that branch
        calls externs, as p4c-bm2-ss does)."""
        outer = self.env
        self.env = {**outer, **param_types(d.params)}
        try:
            body = self.stmts(d.body.stmts, funcs)
        finally:
            self.env = outer
        d.body = ast.BlockStmt(remove_returns(body, None), loc=d.body.loc)

    def stmts(self, ss: list[Any], funcs: dict[str, ast.FunctionDecl]) -> list[Any]:
        funcs = funcs or self.functions
        out: list[Any] = []
        outer = self.env
        self.env = dict(outer)
        try:
            for s in ss:
                out.extend(self.stmt(s, funcs))
                if isinstance(s, (ast.VarDecl, ast.ConstDecl)):
                    self.env[s.name] = s.type
        finally:
            self.env = outer
        return out

    def stmt(self, s: Any, funcs: dict[str, ast.FunctionDecl]) -> list[Any]:
        pre: list[Any] = []

        def expr(e: Any) -> Any:
            return self.hoist(e, funcs, pre, False)

        if isinstance(s, InlinedApply):
            s.stmts = self.stmts(s.stmts, funcs)
            return [s]
        if isinstance(s, ast.BlockStmt):
            return [ast.BlockStmt(self.stmts(s.stmts, funcs), s.annotations, loc=s.loc)]
        if isinstance(s, ast.AssignStmt):
            s.rhs = expr(s.rhs)
            s.lhs = expr(s.lhs)
        elif isinstance(s, ast.CallStmt):
            t = s.call.target
            f = self.function(t, funcs)
            if f is not None:
                for a in s.call.args:
                    a.value = expr(a.value)
                pre.extend(self.inline_call(s.call, f, None))
                return pre
            s.call = expr(s.call)
        elif isinstance(s, ast.IfStmt):
            s.cond = expr(s.cond)
            s.then = self.one(self.stmt(s.then, funcs), s.then)
            if s.other is not None:
                s.other = self.one(self.stmt(s.other, funcs), s.other)
        elif isinstance(s, ast.SwitchStmt):
            s.expr = expr(s.expr)
            for c in s.cases:
                if c.body is not None:
                    c.body = ast.BlockStmt(self.stmts(c.body.stmts, funcs), loc=c.body.loc)
        elif isinstance(s, ast.VarDecl) and s.init is not None:
            s.init = expr(s.init)
        elif isinstance(s, ast.ReturnStmt) and s.value is not None:
            s.value = expr(s.value)
        return pre + [s]

    @staticmethod
    def one(ss: list[Any], orig: Any) -> Any:
        return ss[0] if len(ss) == 1 else ast.BlockStmt(ss, loc=orig.loc)

    def hoist(self, e: Any, funcs: dict[str, ast.FunctionDecl], pre: list[Any],
              conditional: bool) -> Any:
        """Expand the function calls in ``e`` (left to right, innermost first) into ``pre``
        and return ``e`` with each call replaced by its result variable."""
        if isinstance(e, ast.Binary) and e.op in ("&&", "||"):
            e.left = self.hoist(e.left, funcs, pre, conditional)
            e.right = self.hoist(e.right, funcs, pre, True)
            return e
        if isinstance(e, ast.Ternary):
            e.cond = self.hoist(e.cond, funcs, pre, conditional)
            e.then = self.hoist(e.then, funcs, pre, True)
            e.other = self.hoist(e.other, funcs, pre, True)
            return e
        if isinstance(e, ast.Call):
            e.target = self.hoist(e.target, funcs, pre, conditional)
            for a in e.args:
                a.value = self.hoist(a.value, funcs, pre, conditional)
            f = self.function(e.target, funcs)
            if f is not None:
                # a call with side effects under && / || / ?: was made an ``if`` by
                # SideEffectOrdering; what is left here is pure and may run unconditionally
                if isinstance(f.ret, ast.VoidType):
                    raise error(e, f"{f.name}: a void function cannot be used as a value")
                retval = self.names.fresh("retval")
                pre.extend(self.inline_call(e, f, retval))
                return ast.PathExpr(retval, loc=e.loc)
            return e
        if not is_dataclass(e) or not isinstance(e, ast.Expr):
            return e
        map_children(e, lambda x: self.hoist(x, funcs, pre, conditional), ast.Expr)
        return e

    def function(self, target: Any, funcs: dict[str, ast.FunctionDecl]
                 ) -> ast.FunctionDecl | None:
        """The function a call target names, or None (a local of that name hides a top-level
        function: :class:`Resolve` left only such references unqualified)."""
        if not isinstance(target, ast.PathExpr):
            return None
        name = target.name
        if name.startswith("."):
            return self.functions.get(name[1:])
        f = funcs.get(name)
        if f is not None and f is self.functions.get(name) and name in self.resolve.shadowed:
            return None
        return f

    def inline_call(self, call: ast.Call, f: ast.FunctionDecl, retval: str | None) -> list[Any]:
        if f.type_params:
            raise error(call, f"{f.name}: generic functions are unsupported on this target")
        args = bind_args(call, f.params, call.args, f.name)
        pmap, before, after = bind_params(self.names, call, f.params, args, f.name,
                                          body=f.body, types=self.types, written=call.args,
                                          unproven=self.argtypes.unproven(f.params, args,
                                                                          self.env))
        body = copy.deepcopy(f.body)
        mapping: dict[str, ast.Expr | str] = dict(pmap)
        for n in declared_names(body):
            mapping[n] = self.names.fresh(n)
        body = substitute(body, mapping)
        stmts = remove_returns(list(body.stmts), retval)
        out: list[Any] = []
        if retval is not None:
            out.append(ast.VarDecl(retval, copy.deepcopy(f.ret), None, loc=call.loc))
            self.env[retval] = f.ret  # a later argument of the same statement may be it
        return out + before + [ast.BlockStmt(stmts, loc=call.loc)] + after

    # ------------------------------------------------------------------ parsers

    def parser(self, d: ast.ParserDecl) -> None:
        self.env = {**self.argtypes.top_env, **param_types(d.params + d.ctor_params),
                    **local_types(d.locals)}
        self.no_action_calls(d)
        for st in d.states:
            st.stmts = self.stmts(st.stmts, self.functions)
            tr = st.transition
            if tr is not None and tr.select_exprs:
                pre: list[Any] = []
                tr.select_exprs = [self.hoist(e, self.functions, pre, False)
                                   for e in tr.select_exprs]
                st.stmts.extend(pre)
        states: list[ast.ParserState] = []
        for st in d.states:
            states.extend(self.split_state(d, st))
        d.states = states

    def no_action_calls(self, d: ast.ParserDecl) -> None:
        """Actions run only in controls (p4c's type checker refuses the call)."""
        actions = {x.name for x in self.prog.decls if isinstance(x, ast.ActionDecl)}
        for n in walk(ast.BlockStmt([s for st in d.states for s in st.stmts])):
            if isinstance(n, ast.Call) and isinstance(n.target, ast.PathExpr) and (
                    self.resolve.global_name(n.target.name) in actions):
                raise error(n, f"{show_expr(n)}: Action calls are not allowed within parsers")

    def split_state(self, d: ast.ParserDecl, st: ast.ParserState) -> list[ast.ParserState]:
        if not any(isinstance(n, ast.IfStmt) for s in st.stmts for n in walk(s)):
            return [st]
        # variables declared in the state must outlive the split: make them parser locals
        mapping: dict[str, ast.Expr | str] = {n: self.names.fresh(n)
                                              for n in declared_names(ast.BlockStmt(st.stmts))}
        st.stmts = [substitute(s, mapping) for s in st.stmts]
        if st.transition is not None:
            st.transition = substitute(st.transition, mapping)
        st.stmts = lift_decls(d, st.stmts)
        out: list[ast.ParserState] = []
        work = [st]
        while work:
            cur = work.pop(0)
            flat = flatten_blocks(cur.stmts)
            idx = next((i for i, s in enumerate(flat) if isinstance(s, ast.IfStmt)), None)
            if idx is None:
                cur.stmts = flat
                out.append(cur)
                continue
            ifs: ast.IfStmt = flat[idx]
            join = self.names.fresh(f"{st.name}_join")
            t_name = self.names.fresh(f"{st.name}_true")
            t_state = ast.ParserState(t_name, as_list(ifs.then),
                                      ast.Transition(join, loc=ifs.loc), loc=ifs.loc)
            f_name = join
            f_state = None
            if ifs.other is not None:
                f_name = self.names.fresh(f"{st.name}_false")
                f_state = ast.ParserState(f_name, as_list(ifs.other),
                                          ast.Transition(join, loc=ifs.loc), loc=ifs.loc)
            j_state = ast.ParserState(join, flat[idx + 1:], cur.transition, loc=ifs.loc)
            cur.stmts = flat[:idx]
            cur.transition = ast.Transition(None, [ifs.cond], [
                ast.SelectCase(ast.BoolLiteral(True, loc=ifs.loc), t_name, loc=ifs.loc),
                ast.SelectCase(ast.BoolLiteral(False, loc=ifs.loc), f_name, loc=ifs.loc),
            ], loc=ifs.loc)
            out.append(cur)
            work[:0] = [t_state] + ([f_state] if f_state is not None else []) + [j_state]
        return out



def instance_locals(names: Names, inst: ast.InstantiationDecl,
                    callee: ast.ControlDecl | ast.ParserDecl, inner: Iterable[str] = ()
                    ) -> tuple[dict[str, ast.Expr | str], list[Any]]:
    """The locals of a control or parser copied for the instance ``inst`` under fresh names
    (an action, table or instance among them keeps its control-plane name under the
    instance's prefix), and the mapping that renames them, binds the constructor parameters
    to the instance's arguments and gives each of the names ``inner`` a fresh name."""
    vals = bind_args(inst, callee.ctor_params, inst.args, callee.name)
    mapping: dict[str, ast.Expr | str] = {
        p.name: v for p, v in zip(callee.ctor_params, vals, strict=True) if v is not None}
    copied = copy.deepcopy(callee.locals)
    for x in copied:
        mapping[x.name] = names.fresh(f"{inst.name}_{x.name}")
        if isinstance(x, (ast.ActionDecl, ast.TableDecl, ast.InstantiationDecl)):
            x.annotations = prefixed_name(x, instance_prefix(inst))
    for n in inner:
        if n not in mapping:
            mapping[n] = names.fresh(n)
    return mapping, [substitute(x, mapping) for x in copied]


def lift_decls(d: ast.ParserDecl, ss: list[Any], keep_annotations: bool = False) -> list[Any]:
    """The statements ``ss`` of a state of ``d`` with their variables and constants moved to
    the parser's locals (also inside blocks and ``if`` branches), an initializer left where
    it was as an assignment: a state about to be split must keep them across the split. A
    variable's annotations move with it when ``keep_annotations``."""
    out = []
    for s in ss:
        if isinstance(s, ast.VarDecl):
            annotations = s.annotations if keep_annotations else []
            d.locals.append(ast.VarDecl(s.name, s.type, None, loc=s.loc,
                                        annotations=annotations))
            if s.init is not None:
                out.append(ast.AssignStmt(ast.PathExpr(s.name, loc=s.loc), s.init, loc=s.loc))
        elif isinstance(s, ast.ConstDecl):
            d.locals.append(s)
        elif isinstance(s, ast.BlockStmt):
            out.append(ast.BlockStmt(lift_decls(d, s.stmts, keep_annotations), loc=s.loc))
        elif isinstance(s, ast.IfStmt):
            s.then = ast.BlockStmt(lift_decls(d, as_list(s.then), keep_annotations),
                                   loc=s.then.loc)
            if s.other is not None:
                s.other = ast.BlockStmt(lift_decls(d, as_list(s.other), keep_annotations),
                                        loc=s.other.loc)
            out.append(s)
        else:
            out.append(s)
    return out


def param_types(params: list[ast.Param]) -> dict[str, ast.Type]:
    return {p.name: p.type for p in params}


def local_types(decls: list[Any]) -> dict[str, ast.Type]:
    return {x.name: x.type for x in decls if isinstance(x, (ast.VarDecl, ast.ConstDecl))}


def flatten_blocks(ss: list[Any]) -> list[Any]:
    out: list[Any] = []
    for s in ss:
        if isinstance(s, ast.BlockStmt):
            out.extend(flatten_blocks(s.stmts))
        else:
            out.append(s)
    return out


def instance_prefix(inst: ast.InstantiationDecl) -> str:
    """The control-plane prefix of an inlined instance's locals: the instance's external name
    (its ``@name`` if it has one, as p4c's inliner uses ``externalName()``), so
    ``@name("fwd") Sub() s;`` names its table ``C.fwd.t``, and ``@name(".top")`` ``top.t``."""
    for a in inst.annotations:
        if a.name == "name" and a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
            return a.exprs[0].value
    return inst.name


def prefixed_name(x: Any, prefix: str) -> list[ast.Annotation]:
    """Annotations of an inlined local with its ``@name`` made relative to the instance."""
    annos = [a for a in x.annotations if a.name != "name"]
    old = next((a for a in x.annotations if a.name == "name"), None)
    if old is not None:
        raw = old.raw.strip()
        n = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
        if n.startswith("."):
            return list(x.annotations)
    else:
        n = x.name
    full = f"{prefix}.{n}"
    return annos + [ast.Annotation("name", f'"{full}"', [ast.StringLiteral(full, loc=x.loc)],
                                   loc=x.loc)]


def desugar(prog: ast.Program) -> ast.Program:
    return Desugar(prog).run()
