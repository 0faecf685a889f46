"""Front end errors: exact ``file:line:col: error: message`` for syntax, preprocessor and
unsupported-construct errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.parser import parse_program
from softnic.compiler.frontend.preprocess import preprocess

NEGATIVE = Path(__file__).resolve().parent.parent / "corpus" / "negative_syntax"
CASES = sorted(NEGATIVE.glob("*.p4"))
_EXPECT_RE = re.compile(r"^// expect: (.+)$")


def compile_error(path: Path | str) -> CompileError:
    with pytest.raises(CompileError) as info:
        parse_program(preprocess(str(path), [], {}))
    return info.value


def expected_message(path: Path) -> str:
    """The first line says where the error is: ``L:C: error: msg`` in this file, or
    ``other_file:L:C: error: msg`` for an error inside a file it includes."""
    m = _EXPECT_RE.match(path.read_text().splitlines()[0])
    assert m, f"{path.name}: first line must be '// expect: <line>:<col>: error: <message>'"
    exp = m.group(1)
    if exp[0].isdigit():
        return f"{path}:{exp}"
    return f"{path.parent}/{exp}"


def test_negative_corpus_is_not_empty() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_negative_program_reports_exact_error(path: Path) -> None:
    assert str(compile_error(path)) == expected_message(path)


@pytest.mark.parametrize(
    ("src", "line", "col", "message"),
    [
        # a value set is a parser-local element only (p4c's grammar)
        ("const bit<8> X = 1;\ncontrol C() { value_set<bit<8>>(4) vs; apply { } }\n",
         2, 15, "syntax error, unexpected VALUE_SET"),
        ("@pragma foo bar\nconst bit<8> X = 1;\n", 1, 1,
         "@pragma annotations are not supported by softnic"),
        ("control C() { apply { for (bit<8> i = 0; i < 4; i = i + 1) { } } }\n",
         1, 23, "for loops are not supported by softnic"),
        ("control C() { apply { this.x = 1; } }\n", 1, 23, "'this' is not supported by softnic"),
        ("header_union U<T> { T a; }\n", 1, 14,
         "generic header unions are not supported by softnic"),
        ("typedef struct { bit<8> a; } S;\n", 1, 9,
         "typedef of an inline type declaration is not supported by softnic"),
        ("const list<bit<8>> L = {1};\n", 1, 7, "list types are not supported by softnic"),
        ("header h_t { bit<8> a; }\ncontrol C(inout h_t h) { apply { h = {#}; } }\n", 2, 39,
         "invalid-header expressions {#} are not supported by softnic"),
        ("table t { }\n", 1, 1, "tables outside a control are not supported by softnic"),
        ('const string S = "abc;\n', 1, 18, "unterminated string literal"),
        ("extern E { E(); abstract void f(); }\n"
         "control C() { E() e = { void f() { } }; apply { } }\n",
         2, 23, "instantiations with initializer blocks are not supported by softnic"),
        ("control C() { apply { bit<8> y = (this.x); } }\n", 1, 35,
         "'this' is not supported by softnic"),
        ("const bit<8> X = 1 $ 2;\n", 1, 20, "unexpected character '$'"),
    ],
)  # fmt: skip
def test_unsupported_and_lexical_errors(
    tmp_path: Path, src: str, line: int, col: int, message: str
) -> None:
    f = tmp_path / "prog.p4"
    f.write_text(src)
    assert str(compile_error(f)) == f"{f}:{line}:{col}: error: {message}"


@pytest.mark.parametrize(
    ("src", "line", "col", "unexpected"),
    [
        ("const bit<8> X = ;\n", 1, 18, ";"),
        ("struct s { bit<8> a }\n", 1, 21, "}"),
        ("header h { bit<8> a; }\nheader g { h x y; }\n", 2, 16, 'IDENTIFIER "y"'),
        ("header h { bit<8> a; }\nconst h X = 1;\nh Y;\n", 3, 4, ";"),
        ("control C() { apply { x = 1 } }\n", 1, 29, "}"),
        ("control C() { apply { } }\ncontrol", 3, 1, "end of file"),
        ("control C() { apply { x = 1 + ; } }\n", 1, 31, ";"),
        ("const bit<8> X = 8w1 8w2;\n", 1, 22, 'INTEGER "8w2"'),
        ('const bit<8> X = "s" "t";\n', 1, 22, 'STRING_LITERAL "t"'),
        ("control C() { apply { if x { } } }\n", 1, 26, 'IDENTIFIER "x"'),
        ("control C() { apply { } } }\n", 1, 27, "}"),
        ("extern E { void f() }\n", 1, 21, "}"),
        ("control C(inout bit<8> x) { x = 1; apply { } }\n", 1, 31, "="),
        ("parser P() { bit<8> a b; state start { } }\n", 1, 23, 'IDENTIFIER "b"'),
        ("header h { bit<8> f; }\ncontrol C() { apply { h x y; } }\n", 2, 27, 'IDENTIFIER "y"'),
        ("control C() { apply { bit<8> x y; } }\n", 1, 32, 'IDENTIFIER "y"'),
    ],
)  # fmt: skip
def test_syntax_errors_name_the_offending_token(
    tmp_path: Path, src: str, line: int, col: int, unexpected: str
) -> None:
    f = tmp_path / "prog.p4"
    f.write_text(src)
    expected = f"{f}:{line}:{col}: error: syntax error, unexpected {unexpected}"
    assert str(compile_error(f)) == expected


def test_type_identifier_is_named_as_such(tmp_path: Path) -> None:
    f = tmp_path / "prog.p4"
    f.write_text("header h_t { bit<8> a; }\nconst bit<8> X = 1 h_t;\n")
    err = compile_error(f)
    assert str(err) == f'{f}:2:20: error: syntax error, unexpected TYPE_IDENTIFIER "h_t"'


def test_missing_cpp_is_reported_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "prog.p4"
    f.write_text("const bit<8> X = 1;\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    err = compile_error(f)
    assert err.loc is None
    assert "apt-get install cpp" in str(err)


def test_missing_input_file(tmp_path: Path) -> None:
    err = compile_error(tmp_path / "nope.p4")
    assert "No such file or directory" in str(err)


def test_error_directive_location(tmp_path: Path) -> None:
    f = tmp_path / "prog.p4"
    f.write_text("const bit<8> X = 1;\n#error stop here\n")
    assert str(compile_error(f)) == f"{f}:2:2: error: #error stop here"
