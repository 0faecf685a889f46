"""Tokenizer for preprocessed P4_16 source.

The input is the C preprocessor's output, so it carries ``# <line> "<file>"`` line markers; the
lexer follows them so that every token's ``loc`` names the original file and line, which is what
users need in ``file:line:col: error:`` messages. Comments are still present (``cpp -C`` keeps
them to preserve columns) and are skipped here.

``>>`` is deliberately never produced as one token: ``bit<bit<8>>``-style nested type arguments
need two ``>`` tokens, so the parser joins two adjacent ``>`` into a shift where an operator is
expected (the same trick p4c's grammar uses with R_ANGLE_SHIFT).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir.ast import Loc

KEYWORDS = frozenset(
    """
    abstract action actions apply bool bit const control default else entries enum error exit
    extern false header header_union if in inout int key list match_kind out package parser
    priority return select state string struct switch table this transition true tuple type
    typedef value_set varbit void
    """.split()
)

# Keywords that p4c also accepts where a plain name is expected (member names, declared names).
CONTEXTUAL_KEYWORDS = frozenset(
    {"apply", "key", "actions", "entries", "state", "type", "priority", "list"}
)

# Longest first, so that '&&&' wins over '&&' and '|+|' over '|'.
OPERATORS = [
    "&&&", "|+|", "|-|",
    "<<", "<=", ">=", "==", "!=", "&&", "||", "++", "..",
    "+", "-", "*", "/", "%", "|", "&", "^", "~", "!", "<", ">",
    "[", "]", "{", "}", "(", ")", ":", ",", "?", ".", "=", ";", "@", "#",
]  # fmt: skip

_OP_RE = re.compile("|".join(re.escape(op) for op in OPERATORS))
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_RE = re.compile(
    r"(?P<width>[0-9]+)(?P<sign>[ws])(?P<body>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
    r"|0[dD][0-9_]+|[0-9][0-9_]*)"
    r"|(?P<plain>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
)
_MARKER_RE = re.compile(r'[ \t]*#[ \t]*(?:line[ \t]+)?([0-9]+)(?:[ \t]+"((?:[^"\\]|\\.)*)")?')
_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


@dataclass(frozen=True)
class Token:
    """One token. ``kind`` is ID, INT, STR, KW (text is the keyword), OP (text is the operator) or
    EOF. ``pos``/``end`` are offsets in the preprocessed text (used for raw annotation bodies and
    for telling ``> >`` from ``>>``)."""

    kind: str
    text: str
    loc: Loc
    pos: int
    end: int
    value: object = None

    def is_op(self, op: str) -> bool:
        return self.kind == "OP" and self.text == op

    def is_kw(self, kw: str) -> bool:
        return self.kind == "KW" and self.text == kw


def parse_int_literal(text: str, loc: Loc) -> tuple[int, int | None, bool]:
    """Value, width and signedness of an integer literal such as ``8w0xFF`` or ``16s5``."""
    m = _NUMBER_RE.fullmatch(text)
    if m is None:
        raise CompileError(loc, f"invalid integer literal {text}")
    width: int | None = None
    signed = False
    body = m.group("plain")
    if body is None:
        width = int(m.group("width"))
        signed = m.group("sign") == "s"
        body = m.group("body")
    digits = body.replace("_", "")
    base = 10
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[digits[1].lower()]
        digits = digits[2:]
    if not digits:
        raise CompileError(loc, f"invalid integer literal {text}")
    return int(digits, base), width, signed


def _decode_string(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append(_STRING_ESCAPES.get(raw[i + 1], raw[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class Lexer:
    """Turns preprocessed text into a list of tokens (ending with one EOF token)."""

    def __init__(self, text: str, default_file: str = "<input>") -> None:
        self.text = text
        self.file = default_file
        self.line = 1
        self.line_start = 0
        self.pos = 0

    def _loc(self, pos: int) -> Loc:
        return Loc(self.file, self.line, pos - self.line_start + 1)

    def _newline(self, pos_after: int) -> None:
        self.line += 1
        self.line_start = pos_after

    def _at_line_start(self, pos: int) -> bool:
        return self.text[self.line_start : pos].strip(" \t") == ""

    def _line_marker(self) -> bool:
        """Handle a ``# N "file"`` line (or any other surviving ``#`` directive) at self.pos."""
        eol = self.text.find("\n", self.pos)
        if eol < 0:
            eol = len(self.text)
        line_text = self.text[self.pos : eol]
        m = _MARKER_RE.match(line_text)
        if m is None:
            stripped = line_text.strip()
            if stripped.startswith("#pragma") or stripped == "#":
                self.pos = eol  # pragmas surviving cpp carry no meaning for softnic
                return True
            raise CompileError(self._loc(self.pos), f"unexpected preprocessor directive {stripped}")
        if m.group(2) is not None:
            self.file = _decode_string(m.group(2))
        # The marker gives the number of the line that follows it.
        self.pos = eol + 1 if eol < len(self.text) else eol
        self.line = int(m.group(1))
        self.line_start = self.pos
        return True

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        text = self.text
        n = len(text)
        while True:
            # Skip whitespace, comments and line markers.
            while self.pos < n:
                ch = text[self.pos]
                if ch == "\n":
                    self.pos += 1
                    self._newline(self.pos)
                elif ch in " \t\r\f\v":
                    self.pos += 1
                elif text.startswith("//", self.pos):
                    eol = text.find("\n", self.pos)
                    self.pos = n if eol < 0 else eol
                elif text.startswith("/*", self.pos):
                    close = text.find("*/", self.pos + 2)
                    if close < 0:
                        raise CompileError(self._loc(self.pos), "unterminated comment")
                    for k in range(self.pos, close):
                        if text[k] == "\n":
                            self._newline(k + 1)
                    self.pos = close + 2
                elif ch == "#" and self._at_line_start(self.pos):
                    self._line_marker()
                else:
                    break
            if self.pos >= n:
                out.append(Token("EOF", "", self._loc(self.pos), n, n))
                return out
            out.append(self._one())

    def _one(self) -> Token:
        text = self.text
        start = self.pos
        loc = self._loc(start)
        ch = text[start]
        if ch.isdigit():
            m = _NUMBER_RE.match(text, start)
            assert m is not None
            end = m.end()
            if end < len(text) and (text[end].isalnum() or text[end] == "_"):
                bad = _IDENT_RE.match(text, start) or re.compile(r"[0-9A-Za-z_]+").match(
                    text, start
                )
                assert bad is not None
                raise CompileError(loc, f"invalid integer literal {bad.group(0)}")
            lit = text[start:end]
            self.pos = end
            return Token("INT", lit, loc, start, end, parse_int_literal(lit, loc))
        if ch.isalpha() or ch == "_":
            m = _IDENT_RE.match(text, start)
            assert m is not None
            word = m.group(0)
            self.pos = m.end()
            if word in KEYWORDS or word == "_":
                return Token("KW", word, loc, start, self.pos)
            return Token("ID", word, loc, start, self.pos, word)
        if ch == '"':
            i = start + 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\n":
                    raise CompileError(loc, "unterminated string literal")
                i += 2 if text[i] == "\\" else 1
            if i >= len(text):
                raise CompileError(loc, "unterminated string literal")
            self.pos = i + 1
            raw = text[start + 1 : i]
            return Token("STR", text[start : i + 1], loc, start, self.pos, _decode_string(raw))
        m = _OP_RE.match(text, start)
        if m is None:
            raise CompileError(loc, f"unexpected character {ch!r}")
        self.pos = m.end()
        return Token("OP", m.group(0), loc, start, self.pos)


def tokenize(text: str, default_file: str = "<input>") -> list[Token]:
    """All tokens of ``text`` (preprocessed P4), ending with an EOF token."""
    return Lexer(text, default_file).tokens()
