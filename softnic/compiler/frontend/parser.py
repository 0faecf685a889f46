"""Recursive-descent parser for the P4_16 subset softnic compiles.

Input is preprocessed text (see ``preprocess.py``); output is ``ast.Program``. The grammar follows
p4c's ``p4parser.ypp`` closely enough that programs p4c accepts parse the same way, including its
operator precedence. P4's grammar is context sensitive (``T x;`` declares, ``f(x);`` calls,
``(T) e`` casts): like p4c we remember which names were declared as types, and where that is not
enough we parse speculatively and backtrack.

Syntax errors are reported at the offending token the way p4c's bison parser words them
(``syntax error, unexpected IDENTIFIER "x"``). Constructs of full P4_16 that softnic does not
support are rejected with an error naming the construct, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.lexer import CONTEXTUAL_KEYWORDS, Token, tokenize
from softnic.compiler.ir import ast

T = TypeVar("T")


_BASE_TYPE_KWS = frozenset(
    {"bit", "int", "varbit", "bool", "string", "error", "match_kind", "tuple"}
)
_DIRECTIONS = frozenset({"in", "out", "inout"})


@dataclass
class _BlockHeader:
    """What ``parser NAME<T>(params)(ctor params) {`` and its control twin declare."""

    name: Token
    type_params: list[str]
    params: list[ast.Param]
    ctor_params: list[ast.Param]


class _Backtrack(Exception):
    """Raised inside speculative parses when the guess turned out wrong."""


class UnsupportedConstruct(CompileError):
    """A construct of full P4_16 outside softnic's subset. Never swallowed by backtracking:
    the program is valid P4 but softnic must refuse it loudly."""


# Nesting levels (parenthesised expressions, unary operators, statements) one program may use.
# Every later pass recurses over the tree too, so the bound is what keeps each of them well inside
# the recursion limit that ``compile_file`` sets; real programs nest a few levels.
MAX_NESTING = 1000


class NestingTooDeep(UnsupportedConstruct):
    """The program nests deeper than :data:`MAX_NESTING`; reported where the limit was hit."""


def _nested(method: Callable[..., T]) -> Callable[..., T]:
    """Count one nesting level around a recursive ``parse_*`` method."""

    def wrapper(self: Parser, *args: object) -> T:
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise NestingTooDeep(
                    self.peek().loc,
                    f"nesting too deep (more than {MAX_NESTING} levels of expressions and "
                    "statements)",
                )
            return method(self, *args)
        finally:
            self.depth -= 1

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


class Parser:
    def __init__(self, tokens: list[Token], text: str, type_names: set[str] | None = None) -> None:
        self.toks = tokens
        self.text = text
        self.i = 0
        self.depth = 0  # current nesting, see MAX_NESTING
        # Names declared as types so far (p4c's TYPE_IDENTIFIER); used to tell casts from
        # parenthesised expressions and for p4c-like error messages.
        self.type_names: set[str] = type_names if type_names is not None else set()

    # ------------------------------------------------------------------ token helpers

    def peek(self, k: int = 0) -> Token:
        j = min(self.i + k, len(self.toks) - 1)
        return self.toks[j]

    def next(self) -> Token:
        tok = self.toks[self.i]
        if self.i < len(self.toks) - 1:
            self.i += 1
        return tok

    def at_op(self, op: str, k: int = 0) -> bool:
        return self.peek(k).is_op(op)

    def at_kw(self, kw: str, k: int = 0) -> bool:
        return self.peek(k).is_kw(kw)

    def accept_op(self, op: str) -> Token | None:
        if self.at_op(op):
            return self.next()
        return None

    def expect_op(self, op: str) -> Token:
        if not self.at_op(op):
            raise self.syntax_error()
        return self.next()

    def expect_kw(self, kw: str) -> Token:
        if not self.at_kw(kw):
            raise self.syntax_error()
        return self.next()

    def describe(self, tok: Token) -> str:
        """How bison (with p4c's token names) words a token in 'unexpected ...'."""
        if tok.kind == "EOF":
            return "end of file"
        if tok.kind == "ID":
            kind = "TYPE_IDENTIFIER" if tok.text in self.type_names else "IDENTIFIER"
            return f'{kind} "{tok.text}"'
        if tok.kind == "INT":
            return f'INTEGER "{tok.text}"'
        if tok.kind == "STR":
            return f"STRING_LITERAL {tok.text}"
        if tok.kind == "KW":
            if tok.text == "_":
                return "_"
            return tok.text.upper()
        return tok.text

    def syntax_error(self, tok: Token | None = None) -> CompileError:
        tok = tok or self.peek()
        return CompileError(tok.loc, f"syntax error, unexpected {self.describe(tok)}")

    def unsupported(self, tok: Token, what: str) -> CompileError:
        return UnsupportedConstruct(tok.loc, f"{what} not supported by softnic")

    def is_name(self, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "ID" or (tok.kind == "KW" and tok.text in CONTEXTUAL_KEYWORDS)

    def expect_name(self) -> Token:
        if not self.is_name():
            raise self.syntax_error()
        return self.next()

    def speculate(self, fn: Callable[[], T]) -> T | None:
        """Run ``fn``; on any parse failure rewind and return None."""
        saved = self.i
        try:
            return fn()
        except UnsupportedConstruct:
            raise
        except (_Backtrack, CompileError):
            self.i = saved
            return None

    # ------------------------------------------------------------------ program

    def parse_program(self) -> ast.Program:
        loc = self.peek().loc
        decls: list[ast.Decl] = []
        while self.peek().kind != "EOF":
            if self.accept_op(";"):
                continue
            decls.append(self.parse_declaration())
        return ast.Program(decls=decls, loc=loc)

    def parse_declaration(self) -> ast.Decl:
        annos = self.parse_annotations()
        tok = self.peek()
        if tok.kind == "KW":
            kw = tok.text
            if kw == "const":
                return self.parse_const(annos)
            if kw == "extern":
                return self.parse_extern(annos)
            if kw == "action":
                return self.parse_action(annos)
            if kw == "parser":
                return self.parse_parser(annos)
            if kw == "control":
                return self.parse_control(annos)
            if kw == "package":
                return self.parse_package(annos)
            if kw in ("header", "struct", "header_union"):
                return self.parse_struct_like(annos)
            if kw == "enum":
                return self.parse_enum(annos)
            if kw in ("typedef", "type"):
                return self.parse_typedef(annos)
            if kw == "error" and self.at_op("{", 1):
                return self.parse_error_decl(annos)
            if kw == "match_kind":
                return self.parse_match_kind(annos)
            if kw == "value_set":
                raise self.syntax_error()  # a value set is a parser-local element only
            if kw == "table":
                raise self.unsupported(tok, "tables outside a control are")
        # Function declaration or instantiation: both start with a type.
        start = self.peek()
        if start.is_kw("void"):
            self.next()
            ret: ast.Type = ast.VoidType(loc=start.loc)
        else:
            ret = self.parse_type()
        if self.at_op("("):
            args = self.parse_arguments()
            name = self.expect_name()
            self.expect_op(";")
            return ast.InstantiationDecl(
                name=name.text, type=ret, args=args, annotations=annos, loc=name.loc
            )
        if self.is_name():
            name = self.expect_name()
            type_params = self.parse_opt_type_params()
            params = self.parse_params()
            if not self.at_op("{"):
                raise self.syntax_error()
            body = self.parse_block()
            return ast.FunctionDecl(
                name=name.text,
                ret=ret,
                params=params,
                body=body,
                type_params=type_params,
                annotations=annos,
                loc=name.loc,
            )
        raise self.syntax_error()

    # ------------------------------------------------------------------ annotations

    def parse_annotations(self) -> list[ast.Annotation]:
        annos: list[ast.Annotation] = []
        while self.at_op("@"):
            annos.append(self.parse_annotation())
        return annos

    def parse_annotation(self) -> ast.Annotation:
        at = self.expect_op("@")
        tok = self.peek()
        if tok.kind not in ("ID", "KW"):
            raise self.syntax_error()
        self.next()
        if tok.text == "pragma":
            raise self.unsupported(at, "@pragma annotations are")
        if self.at_op("("):
            lpar = self.next()
            start = self.i
            depth = 1
            while True:
                t = self.peek()
                if t.kind == "EOF":
                    raise self.syntax_error(t)
                if t.kind == "OP" and t.text in "([{":
                    depth += 1
                elif t.kind == "OP" and t.text in ")]}":
                    depth -= 1
                    if depth == 0:
                        break
                self.next()
            rpar = self.next()
            body = self.toks[start : self.i - 1]
            raw = self.text[lpar.end : rpar.pos]
            exprs = self._parse_annotation_exprs(body, rpar)
            return ast.Annotation(name=tok.text, raw=raw, exprs=exprs, loc=at.loc)
        if self.at_op("["):
            lbr = self.next()
            kv: dict[str, ast.Expr] = {}
            while not self.at_op("]"):
                key = self.expect_name()
                self.expect_op("=")
                kv[key.text] = self.parse_expr()
                if not self.accept_op(","):
                    break
            rbr = self.expect_op("]")
            raw = self.text[lbr.end : rbr.pos]
            return ast.Annotation(name=tok.text, raw=raw, kv=kv, loc=at.loc)
        return ast.Annotation(name=tok.text, loc=at.loc)

    def _parse_annotation_exprs(self, body: list[Token], closer: Token) -> list[ast.Expr]:
        """Annotation bodies are free-form tokens; keep parsed expressions when they are some."""
        if not body:
            return []
        eof = Token("EOF", "", closer.loc, closer.pos, closer.pos)
        sub = Parser([*body, eof], self.text, set(self.type_names))
        try:
            exprs = [sub.parse_expr()]
            while sub.accept_op(","):
                exprs.append(sub.parse_expr())
            if sub.peek().kind != "EOF":
                return []
            return exprs
        except CompileError:
            return []

    # ------------------------------------------------------------------ types

    def parse_width(self) -> ast.Expr:
        """Width in ``bit<W>``: an integer literal or a parenthesised expression."""
        self.expect_op("<")
        tok = self.peek()
        if tok.kind == "INT":
            width: ast.Expr = self.parse_int(self.next())
        elif tok.is_op("("):
            self.next()
            width = self.parse_expr()
            self.expect_op(")")
        else:
            raise self.syntax_error()
        self.expect_op(">")
        return width

    def parse_type(self, allow_dontcare: bool = False) -> ast.Type:
        tok = self.peek()
        loc = tok.loc
        t: ast.Type
        if tok.kind == "KW":
            kw = tok.text
            if kw == "bit":
                self.next()
                width = self.parse_width() if self.at_op("<") else ast.IntLiteral(value=1, loc=loc)
                t = ast.BitType(width=width, signed=False, loc=loc)
            elif kw == "int":
                self.next()
                if self.at_op("<"):
                    t = ast.BitType(width=self.parse_width(), signed=True, loc=loc)
                else:
                    t = ast.InfIntType(loc=loc)
            elif kw == "varbit":
                self.next()
                t = ast.VarbitType(max_width=self.parse_width(), loc=loc)
            elif kw == "bool":
                self.next()
                t = ast.BoolType(loc=loc)
            elif kw == "string":
                self.next()
                t = ast.StringType(loc=loc)
            elif kw == "error":
                self.next()
                t = ast.ErrorType(loc=loc)
            elif kw == "match_kind":
                self.next()
                t = ast.MatchKindType(loc=loc)
            elif kw == "tuple":
                self.next()
                t = ast.TupleType(elems=self.parse_type_args(), loc=loc)
            elif kw == "_" and allow_dontcare:
                self.next()
                return ast.DontCareType(loc=loc)
            elif kw == "void" and allow_dontcare:
                self.next()
                return ast.VoidType(loc=loc)
            elif kw == "list":
                raise self.unsupported(tok, "list types are")
            else:
                raise self.syntax_error()
        elif tok.kind == "ID" or tok.is_op("."):
            name = ""
            if tok.is_op("."):
                self.next()
                name = "."
            name += self.expect_name().text
            args = self.parse_type_args() if self.at_op("<") else []
            t = ast.TypeName(name=name, args=args, loc=loc)
        else:
            raise self.syntax_error()
        while self.at_op("["):
            self.next()
            size = self.parse_expr()
            self.expect_op("]")
            t = ast.StackType(elem=t, size=size, loc=loc)
        return t

    def parse_type_args(self) -> list[ast.Type]:
        self.expect_op("<")
        args = [self.parse_type(allow_dontcare=True)]
        while self.accept_op(","):
            args.append(self.parse_type(allow_dontcare=True))
        self.expect_op(">")
        return args

    def parse_type_or_void(self) -> ast.Type:
        if self.at_kw("void"):
            return ast.VoidType(loc=self.next().loc)
        return self.parse_type()

    def parse_opt_type_params(self) -> list[str]:
        if not self.at_op("<"):
            return []
        self.next()
        names = [self.expect_name().text]
        while self.accept_op(","):
            names.append(self.expect_name().text)
        self.expect_op(">")
        self.type_names.update(names)
        return names

    # ------------------------------------------------------------------ parameters, arguments

    def parse_paren_list(self, item: Callable[[], T]) -> list[T]:
        """``( item, item, ... )``, possibly empty: parameter and argument lists."""
        self.expect_op("(")
        items: list[T] = []
        if self.accept_op(")"):
            return items
        while True:
            items.append(item())
            if self.accept_op(")"):
                return items
            self.expect_op(",")

    def parse_params(self) -> list[ast.Param]:
        return self.parse_paren_list(self.parse_param)

    def parse_param(self) -> ast.Param:
        annos = self.parse_annotations()
        direction = None
        if self.peek().kind == "KW" and self.peek().text in _DIRECTIONS:
            direction = self.next().text
        ptype = self.parse_type()
        name = self.expect_name()
        default = None
        if self.accept_op("="):
            default = self.parse_expr()
        return ast.Param(
            direction=direction,
            type=ptype,
            name=name.text,
            default=default,
            annotations=annos,
            loc=name.loc,
        )

    def parse_arguments(self) -> list[ast.Argument]:
        return self.parse_paren_list(self.parse_argument)

    def parse_argument(self) -> ast.Argument:
        tok = self.peek()
        name = None
        if self.is_name() and self.at_op("=", 1):
            name = self.next().text
            self.next()
        if self.at_kw("_") and (self.at_op(",", 1) or self.at_op(")", 1)):
            value: ast.Expr = ast.DontCare(loc=self.next().loc)
        else:
            value = self.parse_expr()
        return ast.Argument(value=value, name=name, loc=tok.loc)

    # ------------------------------------------------------------------ simple declarations

    def parse_const(self, annos: list[ast.Annotation]) -> ast.ConstDecl:
        self.expect_kw("const")
        ctype = self.parse_type()
        name = self.expect_name()
        self.expect_op("=")
        value = self.parse_expr()
        self.expect_op(";")
        return ast.ConstDecl(
            name=name.text, type=ctype, value=value, annotations=annos, loc=name.loc
        )

    def parse_struct_like(self, annos: list[ast.Annotation]) -> ast.Decl:
        kw = self.next().text
        name = self.expect_name()
        self.type_names.add(name.text)
        type_params = self.parse_opt_type_params()
        self.expect_op("{")
        fields: list[ast.StructField] = []
        while not self.accept_op("}"):
            fannos = self.parse_annotations()
            ftype = self.parse_type()
            fname = self.expect_name()
            self.expect_op(";")
            fields.append(
                ast.StructField(type=ftype, name=fname.text, annotations=fannos, loc=fname.loc)
            )
        if kw == "header":
            return ast.HeaderDecl(
                name=name.text,
                fields=fields,
                type_params=type_params,
                annotations=annos,
                loc=name.loc,
            )
        if kw == "struct":
            return ast.StructDecl(
                name=name.text,
                fields=fields,
                type_params=type_params,
                annotations=annos,
                loc=name.loc,
            )
        if type_params:
            raise self.unsupported(name, "generic header unions are")
        return ast.HeaderUnionDecl(name=name.text, fields=fields, annotations=annos, loc=name.loc)

    def parse_enum(self, annos: list[ast.Annotation]) -> ast.EnumDecl:
        self.expect_kw("enum")
        underlying = None
        if not (self.is_name() and self.at_op("{", 1)):
            underlying = self.parse_type()
        name = self.expect_name()
        self.type_names.add(name.text)
        self.expect_op("{")
        members: list[str] = []
        values: list[ast.Expr] = []
        while not self.at_op("}"):
            members.append(self.expect_name().text)
            if underlying is not None:
                self.expect_op("=")
                values.append(self.parse_expr())
            if not self.accept_op(","):
                break
        self.expect_op("}")
        return ast.EnumDecl(
            name=name.text,
            members=members,
            underlying=underlying,
            values=values,
            annotations=annos,
            loc=name.loc,
        )

    def _identifier_list(self) -> list[str]:
        self.expect_op("{")
        names: list[str] = []
        while not self.at_op("}"):
            names.append(self.expect_name().text)
            if not self.accept_op(","):
                break
        self.expect_op("}")
        return names

    def parse_error_decl(self, annos: list[ast.Annotation]) -> ast.ErrorDecl:
        kw = self.expect_kw("error")
        return ast.ErrorDecl(
            name="error", members=self._identifier_list(), annotations=annos, loc=kw.loc
        )

    def parse_match_kind(self, annos: list[ast.Annotation]) -> ast.MatchKindDecl:
        kw = self.expect_kw("match_kind")
        return ast.MatchKindDecl(
            name="match_kind", members=self._identifier_list(), annotations=annos, loc=kw.loc
        )

    def parse_typedef(self, annos: list[ast.Annotation]) -> ast.TypedefDecl:
        kw = self.next()
        if self.peek().kind == "KW" and self.peek().text in ("header", "struct", "header_union"):
            raise self.unsupported(self.peek(), "typedef of an inline type declaration is")
        ttype = self.parse_type()
        name = self.expect_name()
        self.type_names.add(name.text)
        self.expect_op(";")
        return ast.TypedefDecl(
            name=name.text,
            type=ttype,
            is_newtype=kw.text == "type",
            annotations=annos,
            loc=name.loc,
        )

    # ------------------------------------------------------------------ externs, packages

    def parse_extern(self, annos: list[ast.Annotation]) -> ast.Decl:
        self.expect_kw("extern")
        obj = self.speculate(self._extern_object_head)
        if obj is not None:
            name, type_params = obj
            return self._extern_object_body(name, type_params, annos)
        ret = self.parse_type_or_void()
        name = self.expect_name()
        type_params = self.parse_opt_type_params()
        params = self.parse_params()
        self.expect_op(";")
        return ast.ExternFunctionDecl(
            name=name.text,
            ret=ret,
            params=params,
            type_params=type_params,
            annotations=annos,
            loc=name.loc,
        )

    def _extern_object_head(self) -> tuple[Token, list[str]]:
        name = self.expect_name()
        saved = set(self.type_names)
        type_params = self.parse_opt_type_params()
        if not self.at_op("{"):
            self.type_names = saved
            raise _Backtrack()
        return name, type_params

    def _extern_object_body(
        self, name: Token, type_params: list[str], annos: list[ast.Annotation]
    ) -> ast.ExternDecl:
        self.type_names.add(name.text)
        self.expect_op("{")
        methods: list[ast.MethodProto] = []
        while not self.accept_op("}"):
            mannos = self.parse_annotations()
            is_abstract = False
            if self.at_kw("abstract"):
                self.next()
                is_abstract = True
            if self.peek().kind == "ID" and self.peek().text == name.text and self.at_op("(", 1):
                ctor = self.next()
                params = self.parse_params()
                self.expect_op(";")
                methods.append(
                    ast.MethodProto(
                        name=ctor.text, ret=None, params=params, annotations=mannos, loc=ctor.loc
                    )
                )
                continue
            ret = self.parse_type_or_void()
            mname = self.expect_name()
            mtype_params = self.parse_opt_type_params()
            params = self.parse_params()
            self.expect_op(";")
            methods.append(
                ast.MethodProto(
                    name=mname.text,
                    ret=ret,
                    params=params,
                    type_params=mtype_params,
                    is_abstract=is_abstract,
                    annotations=mannos,
                    loc=mname.loc,
                )
            )
        return ast.ExternDecl(
            name=name.text,
            type_params=type_params,
            methods=methods,
            annotations=annos,
            loc=name.loc,
        )

    def parse_package(self, annos: list[ast.Annotation]) -> ast.PackageDecl:
        self.expect_kw("package")
        name = self.expect_name()
        self.type_names.add(name.text)
        type_params = self.parse_opt_type_params()
        params = self.parse_params()
        self.expect_op(";")
        return ast.PackageDecl(
            name=name.text, type_params=type_params, params=params, annotations=annos, loc=name.loc
        )

    # ------------------------------------------------------------------ parsers

    def parse_block_header(
        self,
        keyword: str,
        annos: list[ast.Annotation],
        type_decl: type[ast.ParserTypeDecl] | type[ast.ControlTypeDecl],
    ) -> ast.Decl | _BlockHeader:
        """``parser``/``control`` up to the body's ``{``: both share this header. A ``;``
        instead of a body makes it a type declaration, which is returned whole."""
        self.expect_kw(keyword)
        name = self.expect_name()
        self.type_names.add(name.text)
        type_params = self.parse_opt_type_params()
        params = self.parse_params()
        if self.accept_op(";"):
            return type_decl(
                name=name.text,
                type_params=type_params,
                params=params,
                annotations=annos,
                loc=name.loc,
            )
        ctor_params = self.parse_params() if self.at_op("(") else []
        self.expect_op("{")
        return _BlockHeader(name, type_params, params, ctor_params)

    def parse_parser(self, annos: list[ast.Annotation]) -> ast.Decl:
        head = self.parse_block_header("parser", annos, ast.ParserTypeDecl)
        if not isinstance(head, _BlockHeader):
            return head
        locals_: list[ast.Decl] = []
        states: list[ast.ParserState] = []
        while not self.accept_op("}"):
            lannos = self.parse_annotations()
            if self.at_kw("state"):
                states.append(self.parse_state(lannos))
            elif states:
                # p4c's grammar requires all local elements before the first state.
                raise self.syntax_error()
            else:
                locals_.append(self.parse_local_decl(lannos, in_parser=True))
        return ast.ParserDecl(
            name=head.name.text,
            params=head.params,
            ctor_params=head.ctor_params,
            locals=locals_,
            states=states,
            type_params=head.type_params,
            annotations=annos,
            loc=head.name.loc,
        )

    def parse_state(self, annos: list[ast.Annotation]) -> ast.ParserState:
        self.expect_kw("state")
        name = self.expect_name()
        self.expect_op("{")
        stmts: list[ast.Stmt | ast.Decl] = []
        transition: ast.Transition | None = None
        while not self.at_op("}"):
            if self.at_kw("transition"):
                transition = self.parse_transition()
                break
            stmts.append(self.parse_statement())
        close = self.expect_op("}")
        if transition is None:
            # p4c: a state without a transition statement goes to reject.
            transition = ast.Transition(next_state="reject", loc=close.loc)
        return ast.ParserState(
            name=name.text, stmts=stmts, transition=transition, annotations=annos, loc=name.loc
        )

    def parse_transition(self) -> ast.Transition:
        kw = self.expect_kw("transition")
        if self.at_kw("select"):
            self.next()
            self.expect_op("(")
            exprs = [self.parse_expr()]
            while self.accept_op(","):
                exprs.append(self.parse_expr())
            self.expect_op(")")
            self.expect_op("{")
            cases: list[ast.SelectCase] = []
            while not self.accept_op("}"):
                start = self.peek()
                keyset = self.parse_keyset()
                self.expect_op(":")
                state = self.expect_name()
                self.expect_op(";")
                cases.append(ast.SelectCase(keyset=keyset, state=state.text, loc=start.loc,
                                            state_loc=state.loc))
            return ast.Transition(select_exprs=exprs, cases=cases, loc=kw.loc)
        state = self.expect_name()
        self.expect_op(";")
        return ast.Transition(next_state=state.text, loc=kw.loc, state_loc=state.loc)

    def parse_keyset(self) -> ast.Expr:
        """A select-case or table-entry key: simple keyset or a parenthesised tuple of them."""
        if self.at_op("("):
            tup = self.speculate(self._tuple_keyset)
            if tup is not None:
                return tup
        return self.parse_simple_keyset()

    def _tuple_keyset(self) -> ast.Expr:
        lpar = self.expect_op("(")
        elems = [self.parse_simple_keyset()]
        while self.accept_op(","):
            elems.append(self.parse_simple_keyset())
        self.expect_op(")")
        if not self.at_op(":"):
            raise _Backtrack()
        if len(elems) == 1:
            return elems[0]
        return ast.ListExpr(elems=elems, loc=lpar.loc)

    def parse_simple_keyset(self) -> ast.Expr:
        tok = self.peek()
        if tok.is_kw("default"):
            self.next()
            return ast.Default(loc=tok.loc)
        if tok.is_kw("_"):
            self.next()
            return ast.DontCare(loc=tok.loc)
        expr = self.parse_expr()
        for op in ("&&&", ".."):
            if self.at_op(op):
                self.next()
                right = self.parse_expr()
                return ast.Binary(op=op, left=expr, right=right, loc=expr.loc)
        return expr

    # ------------------------------------------------------------------ controls

    def parse_control(self, annos: list[ast.Annotation]) -> ast.Decl:
        head = self.parse_block_header("control", annos, ast.ControlTypeDecl)
        if not isinstance(head, _BlockHeader):
            return head
        locals_: list[ast.Decl] = []
        while True:
            lannos = self.parse_annotations()
            tok = self.peek()
            if tok.is_kw("apply"):
                self.next()
                apply = self.parse_block(lannos)
                break
            if tok.is_kw("action"):
                locals_.append(self.parse_action(lannos))
            elif tok.is_kw("table"):
                locals_.append(self.parse_table(lannos))
            else:
                locals_.append(self.parse_local_decl(lannos, in_parser=False))
        self.expect_op("}")
        return ast.ControlDecl(
            name=head.name.text,
            params=head.params,
            ctor_params=head.ctor_params,
            locals=locals_,
            apply=apply,
            type_params=head.type_params,
            annotations=annos,
            loc=head.name.loc,
        )

    def parse_local_decl(self, annos: list[ast.Annotation], in_parser: bool) -> ast.Decl:
        """Constants, variables and instantiations inside a parser or control."""
        tok = self.peek()
        if tok.is_kw("const"):
            return self.parse_const(annos)
        if tok.is_kw("value_set"):
            if not in_parser:
                raise self.syntax_error()
            return self.parse_value_set(annos)
        if tok.kind == "EOF" or tok.is_op("}"):
            raise self.syntax_error()
        if tok.is_kw("state") and not in_parser:
            raise self.syntax_error()
        try:
            return self._var_or_instance(annos)
        except _Backtrack:
            # Report at the token where the declaration stopped making sense, like bison.
            raise self.syntax_error() from None

    def parse_value_set(self, annos: list[ast.Annotation]) -> ast.InstantiationDecl:
        """``value_set<T>(size) name;`` (a parser-local element only): kept as an instantiation
        of the built-in ``value_set`` whose type argument is the element type."""
        kw = self.next()
        elem = self.parse_type_args()
        if len(elem) != 1:
            raise CompileError(kw.loc, "value_set takes exactly one type argument")
        self.expect_op("(")
        size = self.parse_expr()
        self.expect_op(")")
        name = self.expect_name()
        self.expect_op(";")
        return ast.InstantiationDecl(
            name=name.text, type=ast.TypeName("value_set", args=elem, loc=kw.loc),
            args=[ast.Argument(value=size, loc=size.loc)], annotations=annos, loc=name.loc)

    def _var_or_instance(self, annos: list[ast.Annotation]) -> ast.Decl:
        """``T x;`` / ``T x = e;`` / ``T(args) x;`` — raises if the tokens are not one of these."""
        vtype = self.parse_type()
        if self.at_op("("):
            if not isinstance(vtype, ast.TypeName):
                raise _Backtrack()
            args = self.parse_arguments()
            if self.is_name() and self.at_op("=", 1) and self.at_op("{", 2):
                raise self.unsupported(self.peek(2), "instantiations with initializer blocks are")
            if not (self.is_name() and self.at_op(";", 1)):
                raise _Backtrack()
            name = self.next()
            self.next()
            return ast.InstantiationDecl(
                name=name.text, type=vtype, args=args, annotations=annos, loc=name.loc
            )
        if not self.is_name():
            raise _Backtrack()
        name = self.next()
        init = None
        if self.accept_op("="):
            init = self.parse_expr()
        self.expect_op(";")
        return ast.VarDecl(name=name.text, type=vtype, init=init, annotations=annos, loc=name.loc)

    def parse_action(self, annos: list[ast.Annotation]) -> ast.ActionDecl:
        self.expect_kw("action")
        name = self.expect_name()
        params = self.parse_params()
        body = self.parse_block()
        return ast.ActionDecl(
            name=name.text, params=params, body=body, annotations=annos, loc=name.loc
        )

    # ------------------------------------------------------------------ tables

    def parse_table(self, annos: list[ast.Annotation]) -> ast.TableDecl:
        self.expect_kw("table")
        name = self.expect_name()
        self.expect_op("{")
        props: list[ast.TableProperty] = []
        while not self.accept_op("}"):
            props.append(self.parse_table_property())
        return ast.TableDecl(name=name.text, properties=props, annotations=annos, loc=name.loc)

    def parse_table_property(self) -> ast.TableProperty:
        annos = self.parse_annotations()
        is_const = False
        if self.at_kw("const"):
            self.next()
            is_const = True
        ptok = self.expect_name()
        pname = ptok.text
        self.expect_op("=")
        prop = ast.TableProperty(name=pname, is_const=is_const, annotations=annos, loc=ptok.loc)
        if pname == "key":
            self.expect_op("{")
            while not self.accept_op("}"):
                expr = self.parse_expr()
                self.expect_op(":")
                kind = self.expect_name()
                kannos = self.parse_annotations()
                self.expect_op(";")
                prop.keys.append(
                    ast.KeyElement(
                        expr=expr, match_kind=kind.text, annotations=kannos, loc=expr.loc
                    )
                )
        elif pname == "actions":
            self.expect_op("{")
            while not self.accept_op("}"):
                aannos = self.parse_annotations()
                aname = self.parse_dotted_name()
                args = self.parse_arguments() if self.at_op("(") else []
                self.expect_op(";")
                prop.actions.append(
                    ast.ActionRef(name=aname.text, args=args, annotations=aannos, loc=aname.loc)
                )
        elif pname == "entries":
            self.expect_op("{")
            while not self.accept_op("}"):
                prop.entries.append(self.parse_entry(is_const))
        else:
            prop.value = self.parse_expr()
            self.expect_op(";")
        return prop

    def parse_dotted_name(self) -> Token:
        """A name with an optional leading dot (top-level scope), returned as one token."""
        if self.at_op("."):
            dot = self.next()
            name = self.expect_name()
            return Token("ID", "." + name.text, dot.loc, dot.pos, name.end, "." + name.text)
        return self.expect_name()

    def parse_entry(self, table_const: bool) -> ast.TableEntry:
        annos = self.parse_annotations()
        start = self.peek()
        is_const = table_const
        if self.at_kw("const"):
            self.next()
            is_const = True
        priority = None
        if self.at_kw("priority") and self.at_op("=", 1):
            self.next()
            self.next()
            priority = self.parse_expr()
            self.expect_op(":")
        keyset = self.parse_keyset()
        self.expect_op(":")
        aname = self.parse_dotted_name()
        args = self.parse_arguments() if self.at_op("(") else []
        action = ast.Call(
            target=ast.PathExpr(name=aname.text, loc=aname.loc), args=args, loc=aname.loc
        )
        annos += self.parse_annotations()
        self.expect_op(";")
        return ast.TableEntry(
            keyset=keyset,
            action=action,
            priority=priority,
            annotations=annos,
            is_const=is_const,
            loc=start.loc,
        )

    # ------------------------------------------------------------------ statements

    def parse_block(self, annos: list[ast.Annotation] | None = None) -> ast.BlockStmt:
        lbrace = self.expect_op("{")
        stmts: list[ast.Stmt | ast.Decl] = []
        while not self.accept_op("}"):
            stmts.append(self.parse_statement())
        return ast.BlockStmt(stmts=stmts, annotations=annos or [], loc=lbrace.loc)

    @_nested
    def parse_statement(self) -> ast.Stmt | ast.Decl:
        annos = self.parse_annotations()
        tok = self.peek()
        if tok.is_op("{"):
            return self.parse_block(annos)
        if tok.is_op(";"):
            self.next()
            return ast.EmptyStmt(loc=tok.loc)
        if tok.kind == "KW":
            kw = tok.text
            if kw == "if":
                return self.parse_if()
            if kw == "switch":
                return self.parse_switch()
            if kw == "exit":
                self.next()
                self.expect_op(";")
                return ast.ExitStmt(loc=tok.loc)
            if kw == "return":
                self.next()
                value = None if self.at_op(";") else self.parse_expr()
                self.expect_op(";")
                return ast.ReturnStmt(value=value, loc=tok.loc)
            if kw == "const":
                return self.parse_const(annos)
            if kw in _BASE_TYPE_KWS and not (kw == "error" and self.at_op(".", 1)):
                try:
                    decl = self._var_or_instance(annos)
                except _Backtrack:
                    raise self.syntax_error() from None
                assert isinstance(decl, (ast.VarDecl, ast.InstantiationDecl))
                return decl
            if kw in ("action", "table", "transition", "state", "value_set"):
                raise self.syntax_error()
            if kw == "this":
                raise self.unsupported(tok, "'this' is")
        if tok.kind == "ID" and tok.text == "for" and self.at_op("(", 1):
            raise self.unsupported(tok, "for loops are")
        if tok.kind == "ID" and tok.text in self.type_names and not self.at_op(".", 1):
            # A declared type name starts a declaration (p4c's TYPE_IDENTIFIER).
            try:
                return self._var_or_instance(annos)
            except _Backtrack:
                raise self.syntax_error() from None
        if tok.kind == "ID" or tok.is_op("."):
            decl = self.speculate(lambda: self._var_or_instance(annos))
            if decl is not None:
                assert isinstance(decl, (ast.VarDecl, ast.InstantiationDecl))
                return decl
        lhs = self.parse_expr()
        if self.at_op("="):
            self.next()
            rhs = self.parse_expr()
            self.expect_op(";")
            return ast.AssignStmt(lhs=lhs, rhs=rhs, loc=tok.loc)
        if isinstance(lhs, ast.Call):
            self.expect_op(";")
            return ast.CallStmt(call=lhs, loc=tok.loc)
        raise self.syntax_error()

    def parse_if(self) -> ast.IfStmt:
        kw = self.expect_kw("if")
        self.expect_op("(")
        cond = self.parse_expr()
        self.expect_op(")")
        then = self._sub_statement()
        other = None
        if self.at_kw("else"):
            self.next()
            other = self._sub_statement()
        return ast.IfStmt(cond=cond, then=then, other=other, loc=kw.loc)

    def _sub_statement(self) -> ast.Stmt:
        stmt = self.parse_statement()
        if not isinstance(stmt, ast.Stmt) or isinstance(stmt, (ast.VarDecl, ast.ConstDecl)):
            raise CompileError(stmt.loc, "a declaration is not allowed as the branch of an if")
        return stmt

    def parse_switch(self) -> ast.SwitchStmt:
        kw = self.expect_kw("switch")
        self.expect_op("(")
        expr = self.parse_expr()
        self.expect_op(")")
        self.expect_op("{")
        cases: list[ast.SwitchCase] = []
        while not self.accept_op("}"):
            tok = self.peek()
            if tok.is_kw("default"):
                self.next()
                label: ast.Expr = ast.Default(loc=tok.loc)
            else:
                label = self.parse_expr()
            self.expect_op(":")
            body = self.parse_block() if self.at_op("{") else None
            cases.append(ast.SwitchCase(label=label, body=body, loc=tok.loc))
        return ast.SwitchStmt(expr=expr, cases=cases, loc=kw.loc)

    # ------------------------------------------------------------------ expressions

    @_nested
    def parse_expr(self) -> ast.Expr:
        cond = self.parse_binary(0)
        if self.at_op("?"):
            self.next()
            then = self.parse_expr()
            self.expect_op(":")
            other = self.parse_expr()
            return ast.Ternary(cond=cond, then=then, other=other, loc=cond.loc)
        return cond

    def _peek_binary_op(self) -> str | None:
        tok = self.peek()
        if tok.kind != "OP":
            return None
        if tok.text == ">":
            nxt = self.peek(1)
            if nxt.is_op(">") and nxt.pos == tok.end:
                return ">>"
            return ">"
        return tok.text if tok.text in ast.BINARY_PREC else None

    def parse_binary(self, level: int) -> ast.Expr:
        if level >= len(ast.BINARY_LEVELS):
            return self.parse_unary()
        left = self.parse_binary(level + 1)
        while True:
            op = self._peek_binary_op()
            if op is None or ast.BINARY_PREC[op] != level:
                return left
            self.next()
            if op == ">>":
                self.next()
            right = self.parse_binary(level + 1)
            left = ast.Binary(op=op, left=left, right=right, loc=left.loc)

    @_nested
    def parse_unary(self) -> ast.Expr:
        tok = self.peek()
        if tok.kind == "OP" and tok.text in ("!", "~", "-", "+"):
            self.next()
            operand = self.parse_unary()
            return ast.Unary(op=tok.text, expr=operand, loc=tok.loc)
        if tok.is_op("("):
            cast = self.speculate(self._cast_prefix)
            if cast is not None:
                return ast.Cast(type=cast, expr=self.parse_unary(), loc=tok.loc)
        return self.parse_postfix(self.parse_primary())

    def _cast_prefix(self) -> ast.Type:
        """``( type )`` in front of an expression, when the parenthesised thing is a type."""
        self.expect_op("(")
        first = self.peek()
        if first.kind == "KW":
            if first.text not in _BASE_TYPE_KWS or first.text == "error":
                raise _Backtrack()
        elif first.kind == "ID" or first.is_op("."):
            name = self.peek(1).text if first.is_op(".") else first.text
            if name not in self.type_names:
                raise _Backtrack()
        else:
            raise _Backtrack()
        ctype = self.parse_type()
        self.expect_op(")")
        return ctype

    def parse_primary(self) -> ast.Expr:
        tok = self.peek()
        if tok.kind == "INT":
            return self.parse_int(self.next())
        if tok.kind == "STR":
            self.next()
            assert isinstance(tok.value, str)
            return ast.StringLiteral(value=tok.value, loc=tok.loc)
        if tok.kind == "ID":
            self.next()
            return ast.PathExpr(name=tok.text, loc=tok.loc)
        if tok.kind == "OP":
            if tok.text == ".":
                self.next()
                name = self.expect_name()
                return ast.PathExpr(name="." + name.text, loc=tok.loc)
            if tok.text == "(":
                self.next()
                inner = self.parse_expr()
                self.expect_op(")")
                return inner
            if tok.text == "{":
                return self.parse_brace_expr()
            raise self.syntax_error()
        if tok.kind == "KW":
            kw = tok.text
            if kw in ("true", "false"):
                self.next()
                return ast.BoolLiteral(value=kw == "true", loc=tok.loc)
            if kw == "error":
                self.next()
                return ast.PathExpr(name="error", loc=tok.loc)
            if kw == "_":
                self.next()
                return ast.DontCare(loc=tok.loc)
            if kw == "default":
                self.next()
                return ast.Default(loc=tok.loc)
            if kw in CONTEXTUAL_KEYWORDS:
                self.next()
                return ast.PathExpr(name=kw, loc=tok.loc)
            if kw in ("bit", "int", "varbit", "bool", "tuple", "string"):
                return ast.TypeExpr(type=self.parse_type(), loc=tok.loc)
            if kw == "this":
                raise self.unsupported(tok, "'this' is")
        raise self.syntax_error()

    def parse_brace_expr(self) -> ast.Expr:
        lbrace = self.expect_op("{")
        if self.accept_op("}"):
            return ast.ListExpr(elems=[], loc=lbrace.loc)
        if self.at_op("#"):
            raise self.unsupported(self.peek(), "invalid-header expressions {#} are")
        if self.is_name() and self.at_op("=", 1):
            fields: list[tuple[str, ast.Expr]] = []
            while True:
                fname = self.expect_name()
                self.expect_op("=")
                fields.append((fname.text, self.parse_expr()))
                if not self.accept_op(","):
                    break
                if self.at_op("}"):
                    break
            self.expect_op("}")
            return ast.StructInit(fields=fields, loc=lbrace.loc)
        elems = [self.parse_expr()]
        while self.accept_op(","):
            if self.at_op("}"):
                break
            elems.append(self.parse_expr())
        self.expect_op("}")
        return ast.ListExpr(elems=elems, loc=lbrace.loc)

    def parse_postfix(self, expr: ast.Expr) -> ast.Expr:
        while True:
            tok = self.peek()
            if tok.is_op("."):
                self.next()
                name = self.expect_name()
                expr = ast.Member(expr=expr, name=name.text, loc=expr.loc)
            elif tok.is_op("["):
                self.next()
                index = self.parse_expr()
                if self.accept_op(":"):
                    lo = self.parse_expr()
                    self.expect_op("]")
                    expr = ast.Slice(expr=expr, hi=index, lo=lo, loc=expr.loc)
                else:
                    self.expect_op("]")
                    expr = ast.Index(expr=expr, index=index, loc=expr.loc)
            elif tok.is_op("("):
                args = self.parse_arguments()
                expr = ast.Call(target=expr, args=args, loc=expr.loc)
            elif tok.is_op("<") and isinstance(expr, (ast.PathExpr, ast.Member)):
                type_args = self.speculate(self._call_type_args)
                if type_args is None:
                    return expr
                args = self.parse_arguments()
                expr = ast.Call(target=expr, args=args, type_args=type_args, loc=expr.loc)
            else:
                return expr

    def _call_type_args(self) -> list[ast.Type]:
        """``<T, ...>`` followed by ``(``: the type arguments of a generic call."""
        args = self.parse_type_args()
        if not self.at_op("("):
            raise _Backtrack()
        return args

    def parse_int(self, tok: Token) -> ast.IntLiteral:
        value, width, signed = tok.value  # type: ignore[misc]
        return ast.IntLiteral(value=value, width=width, signed=signed, text=tok.text, loc=tok.loc)


def parse_program(text: str, file: str = "<input>") -> ast.Program:
    """Parse preprocessed P4 text (with ``# line "file"`` markers) into an AST."""
    tokens = tokenize(text, file)
    return Parser(tokens, text).parse_program()


def parse_expression(text: str, file: str = "<input>") -> ast.Expr:
    """Parse a single expression (used by tests and by tools that take expressions)."""
    parser = Parser(tokenize(text, file), text)
    expr = parser.parse_expr()
    if parser.peek().kind != "EOF":
        raise parser.syntax_error()
    return expr
