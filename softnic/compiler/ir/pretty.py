"""Print AST expressions back as P4 source text.

Used for error messages (p4c quotes the offending expression) and for the names BMv2 JSON and
P4Info carry for table keys (``hdr.ipv4.dstAddr``) and ``source_fragment`` strings.
"""

from __future__ import annotations

from softnic.compiler.ir import ast


def show_type(t: ast.Type) -> str:
    if isinstance(t, ast.BitType):
        return f"{'int' if t.signed else 'bit'}<{show_expr(t.width)}>"
    if isinstance(t, ast.VarbitType):
        return f"varbit<{show_expr(t.max_width)}>"
    if isinstance(t, ast.TypeName):
        if t.args:
            return f"{t.name}<{', '.join(show_type(a) for a in t.args)}>"
        return t.name
    if isinstance(t, ast.StackType):
        return f"{show_type(t.elem)}[{show_expr(t.size)}]"
    if isinstance(t, ast.TupleType):
        return f"tuple<{', '.join(show_type(e) for e in t.elems)}>"
    simple = {
        ast.BoolType: "bool",
        ast.StringType: "string",
        ast.ErrorType: "error",
        ast.VoidType: "void",
        ast.InfIntType: "int",
        ast.MatchKindType: "match_kind",
        ast.DontCareType: "_",
    }
    return simple.get(type(t), type(t).__name__)


def show_expr(e: ast.Expr | None) -> str:
    if e is None:
        return ""
    if isinstance(e, ast.IntLiteral):
        if e.text:
            return e.text
        if e.width is not None:
            return f"{e.width}{'s' if e.signed else 'w'}{e.value}"
        return str(e.value)
    if isinstance(e, ast.BoolLiteral):
        return "true" if e.value else "false"
    if isinstance(e, ast.StringLiteral):
        return f'"{e.value}"'
    if isinstance(e, ast.PathExpr):
        return e.name
    if isinstance(e, ast.Member):
        return f"{_postfix_base(e.expr)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{_postfix_base(e.expr)}[{show_expr(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{_postfix_base(e.expr)}[{show_expr(e.hi)}:{show_expr(e.lo)}]"
    if isinstance(e, ast.Unary):
        return f"{e.op}{_prefix_operand(e.expr)}"
    if isinstance(e, ast.Binary):
        return f"{_operand(e.left, e.op, False)} {e.op} {_operand(e.right, e.op, True)}"
    if isinstance(e, ast.Ternary):
        cond = show_expr(e.cond)
        if isinstance(e.cond, ast.Ternary):
            cond = f"({cond})"
        return f"{cond} ? {show_expr(e.then)} : {show_expr(e.other)}"
    if isinstance(e, ast.Cast):
        return f"({show_type(e.type)}){_prefix_operand(e.expr)}"
    if isinstance(e, ast.Call):
        targs = ""
        if e.type_args:
            targs = "<" + ", ".join(show_type(t) for t in e.type_args) + ">"
        args = ", ".join(
            (f"{a.name} = " if a.name else "") + show_expr(a.value) for a in e.args
        )
        return f"{show_expr(e.target)}{targs}({args})"
    if isinstance(e, ast.ListExpr):
        return "{" + ", ".join(show_expr(x) for x in e.elems) + "}"
    if isinstance(e, ast.StructInit):
        return "{" + ", ".join(f"{n} = {show_expr(x)}" for n, x in e.fields) + "}"
    if isinstance(e, ast.DontCare):
        return "_"
    if isinstance(e, ast.Default):
        return "default"
    if isinstance(e, ast.TypeExpr):
        return show_type(e.type)
    return type(e).__name__


def show_stmt(s: ast.Stmt) -> str:
    """One-line rendering of a simple statement (for ``source_fragment``)."""
    if isinstance(s, ast.AssignStmt):
        return f"{show_expr(s.lhs)} = {show_expr(s.rhs)}"
    if isinstance(s, ast.CallStmt):
        return show_expr(s.call)
    if isinstance(s, ast.ExitStmt):
        return "exit"
    if isinstance(s, ast.ReturnStmt):
        return "return"
    if isinstance(s, ast.VarDecl):
        init = f" = {show_expr(s.init)}" if s.init is not None else ""
        return f"{show_type(s.type)} {s.name}{init}"
    return type(s).__name__


def _prefix_operand(e: ast.Expr) -> str:
    """The operand of a prefix operator or cast: ``!(a >= 3)`` must not read as ``!a >= 3``."""
    text = show_expr(e)
    return f"({text})" if isinstance(e, (ast.Binary, ast.Ternary)) else text


def _postfix_base(e: ast.Expr) -> str:
    """What ``.f``, ``[i]`` or ``[h:l]`` applies to: ``(a ++ b)[7:0]``, ``((bit<8>)x)[3:0]``."""
    text = show_expr(e)
    return f"({text})" if isinstance(e, (ast.Binary, ast.Ternary, ast.Unary, ast.Cast)) else text


def _operand(e: ast.Expr, parent_op: str, right: bool) -> str:
    """An operand of ``parent_op``, in parentheses when printing it bare would regroup it
    (``a % (b - 1)`` must not read as ``a % b - 1`` in an error message)."""
    text = show_expr(e)
    if isinstance(e, ast.Ternary):
        return f"({text})"
    if isinstance(e, ast.Binary) and e.op in ast.BINARY_PREC and parent_op in ast.BINARY_PREC:
        mine, theirs = ast.BINARY_PREC[e.op], ast.BINARY_PREC[parent_op]
        if mine < theirs or (right and mine == theirs):
            return f"({text})"
    return text
