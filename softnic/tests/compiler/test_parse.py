"""Front end: every corpus program parses, and the AST has the shape later stages rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.frontend.lexer import tokenize
from softnic.compiler.frontend.parser import parse_expression, parse_program
from softnic.compiler.frontend.preprocess import P4INCLUDE_DIR, preprocess
from softnic.compiler.ir import ast

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PROGRAMS = sorted(CORPUS.glob("*.p4"))


def parse_file(path: Path | str) -> ast.Program:
    return parse_program(preprocess(str(path), [], {}))


def parse_src(tmp_path: Path, src: str, name: str = "prog.p4") -> ast.Program:
    f = tmp_path / name
    f.write_text(src)
    return parse_file(f)


def find(decls: list, cls: type, name: str):  # noqa: ANN202 - helper returns any Decl
    for d in decls:
        if isinstance(d, cls) and d.name == name:
            return d
    raise AssertionError(f"{cls.__name__} {name} not found")


def user_decls(prog: ast.Program) -> list[ast.Decl]:
    return [d for d in prog.decls if not d.loc.file.startswith(P4INCLUDE_DIR)]


# --------------------------------------------------------------------------- corpus


def test_corpus_is_not_empty() -> None:
    assert len(PROGRAMS) >= 10


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_corpus_program_parses(path: Path) -> None:
    prog = parse_file(path)
    mains = [d for d in prog.decls if isinstance(d, ast.InstantiationDecl) and d.name == "main"]
    assert len(mains) == 1
    assert isinstance(mains[0].type, ast.TypeName) and mains[0].type.name == "V1Switch"
    assert len(mains[0].args) == 6
    assert mains[0].loc.file == str(path)
    # Every user declaration is located in the program or a file it includes, never at 0:0.
    for d in user_decls(prog):
        assert d.loc.line > 0 and d.loc.col > 0


# --------------------------------------------------------------------------- include files


def test_v1model_declares_the_p4c_api(tmp_path: Path) -> None:
    prog = parse_src(tmp_path, "#include <v1model.p4>\n")
    decls = prog.decls
    funcs = {d.name for d in decls if isinstance(d, ast.ExternFunctionDecl)}
    assert {
        "verify", "random", "digest", "mark_to_drop", "hash", "verify_checksum",
        "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload",
        "clone", "clone3", "resubmit", "resubmit_preserving_field_list", "recirculate",
        "recirculate_preserving_field_list", "clone_preserving_field_list", "truncate",
        "assert", "assume", "log_msg", "static_assert",
    } <= funcs  # fmt: skip
    both_drops = [d for d in decls if isinstance(d, ast.ExternFunctionDecl)
                  and d.name == "mark_to_drop"]  # fmt: skip
    assert sorted(len(d.params) for d in both_drops) == [0, 1]
    externs = {d.name: d for d in decls if isinstance(d, ast.ExternDecl)}
    assert {
        "packet_in", "packet_out", "counter", "direct_counter", "meter", "direct_meter",
        "register", "action_profile", "action_selector", "Checksum16",
    } <= set(externs)  # fmt: skip
    reg = externs["register"]
    assert reg.type_params == ["T"]
    ctor = [m for m in reg.methods if m.ret is None]
    assert len(ctor) == 1 and ctor[0].name == "register"
    read = next(m for m in reg.methods if m.name == "read")
    assert [(p.direction, p.name) for p in read.params] == [("out", "result"), ("in", "index")]
    pin = externs["packet_in"]
    assert [m.name for m in pin.methods] == ["extract", "extract", "lookahead", "advance", "length"]
    look = next(m for m in pin.methods if m.name == "lookahead")
    assert look.type_params == ["T"] and look.ret == ast.TypeName(name="T")
    h = find(decls, ast.ExternFunctionDecl, "hash")
    assert h.type_params == ["O", "T", "D", "M"]
    assert [p.name for p in h.params] == ["result", "algo", "base", "data", "max"]
    enums = {d.name: d.members for d in decls if isinstance(d, ast.EnumDecl)}
    assert enums["HashAlgorithm"] == [
        "crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity", "csum16", "xor16",
    ]  # fmt: skip
    assert enums["CloneType"] == ["I2E", "E2E"]
    assert enums["MeterType"] == ["packets", "bytes"]
    assert enums["CounterType"] == ["packets", "bytes", "packets_and_bytes"]
    kinds = [m for d in decls if isinstance(d, ast.MatchKindDecl) for m in d.members]
    assert kinds == ["exact", "ternary", "lpm", "range", "optional", "selector"]
    errors = [m for d in decls if isinstance(d, ast.ErrorDecl) for m in d.members]
    assert errors[:3] == ["NoError", "PacketTooShort", "NoMatch"]
    sm = find(decls, ast.StructDecl, "standard_metadata_t")
    fields = {f.name: f for f in sm.fields}
    for name in (
        "ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
        "mcast_grp", "egress_rid", "checksum_error", "parser_error", "priority",
    ):  # fmt: skip
        assert name in fields
    assert fields["egress_spec"].type == ast.BitType(width=ast.IntLiteral(value=9, text="9"))
    assert isinstance(fields["parser_error"].type, ast.ErrorType)
    assert fields["mcast_grp"].annotations[0].name == "alias"
    v1 = find(decls, ast.PackageDecl, "V1Switch")
    assert [p.name for p in v1.params] == ["p", "vr", "ig", "eg", "ck", "dep"]
    assert v1.params[0].type == ast.TypeName(
        name="Parser", args=[ast.TypeName(name="H"), ast.TypeName(name="M")]
    )
    noaction = find(decls, ast.ActionDecl, "NoAction")
    assert noaction.params == [] and noaction.body.stmts == []
    ingress = find(decls, ast.ControlTypeDecl, "Ingress")
    assert [a.name for a in ingress.annotations] == ["pipeline"]


def test_include_files_live_in_the_package() -> None:
    assert (Path(P4INCLUDE_DIR) / "core.p4").is_file()
    assert (Path(P4INCLUDE_DIR) / "v1model.p4").is_file()


# --------------------------------------------------------------------------- lexer


def test_lexer_longest_operators_and_angles() -> None:
    toks = tokenize("a &&& b && c |+| d |-| e ++ f 1..5 x>>y <<= // c\n /* d */ g")
    texts = [t.text for t in toks if t.kind != "EOF"]
    assert texts == [
        "a", "&&&", "b", "&&", "c", "|+|", "d", "|-|", "e", "++", "f", "1", "..", "5",
        "x", ">", ">", "y", "<<", "=", "g",
    ]  # fmt: skip
    # '>>' stays two tokens; the parser tells a shift from closing type arguments by adjacency
    gt1, gt2 = (t for t in toks if t.text == ">")
    assert gt2.pos == gt1.end


def test_lexer_follows_line_markers() -> None:
    text = '# 1 "top.p4"\nconst\n# 7 "inc.p4" 1\n  bit\n\n   x\n#line 3 "top.p4"\ny'
    toks = tokenize(text)
    assert [(t.text, str(t.loc)) for t in toks[:-1]] == [
        ("const", "top.p4:1:1"),
        ("bit", "inc.p4:7:3"),
        ("x", "inc.p4:9:4"),
        ("y", "top.p4:3:1"),
    ]


def test_lexer_keywords_strings_and_identifiers() -> None:
    toks = tokenize('control _ _x "a\\"b" apply')
    assert [(t.kind, t.text) for t in toks[:-1]] == [
        ("KW", "control"), ("KW", "_"), ("ID", "_x"), ("STR", '"a\\"b"'), ("KW", "apply"),
    ]  # fmt: skip
    assert toks[3].value == 'a"b'


# --------------------------------------------------------------------------- expressions


def test_precedence_follows_p4c() -> None:
    # '&' binds tighter than '==' in P4 (unlike C); '<<' tighter than '&'; '*' tighter than '+'.
    e = parse_expression("a + b * c << 2 & d == e || f && !g")
    assert isinstance(e, ast.Binary) and e.op == "||"
    assert isinstance(e.right, ast.Binary) and e.right.op == "&&"
    eq = e.left
    assert isinstance(eq, ast.Binary) and eq.op == "=="
    band = eq.left
    assert isinstance(band, ast.Binary) and band.op == "&"
    shl = band.left
    assert isinstance(shl, ast.Binary) and shl.op == "<<"
    plus = shl.left
    assert isinstance(plus, ast.Binary) and plus.op == "+"
    assert isinstance(plus.right, ast.Binary) and plus.right.op == "*"


def test_left_associativity_and_concat_level() -> None:
    e = parse_expression("a - b - c")
    assert isinstance(e, ast.Binary) and isinstance(e.left, ast.Binary)
    assert e.left.left == ast.PathExpr(name="a")
    # '++' is at the additive level: a ++ b + c == (a ++ b) + c
    e = parse_expression("a ++ b + c")
    assert isinstance(e, ast.Binary) and e.op == "+" and e.left.op == "++"  # type: ignore[attr-defined]
    e = parse_expression("a |+| b |-| c * d")
    assert isinstance(e, ast.Binary) and e.op == "|-|"
    assert isinstance(e.right, ast.Binary) and e.right.op == "*"


def test_ternary_is_right_associative_and_lowest() -> None:
    e = parse_expression("c ? x + 1 : d ? 2 : 3")
    assert isinstance(e, ast.Ternary)
    assert isinstance(e.then, ast.Binary)
    assert isinstance(e.other, ast.Ternary)


def test_shift_right_from_two_adjacent_angles() -> None:
    e = parse_expression("x >> 2 > y")
    assert isinstance(e, ast.Binary) and e.op == ">"
    assert isinstance(e.left, ast.Binary) and e.left.op == ">>"


def test_nested_type_args_close_with_double_angle() -> None:
    e = parse_expression("pkt.lookahead<bit<16>>()")
    assert isinstance(e, ast.Call)
    assert e.target == ast.Member(expr=ast.PathExpr(name="pkt"), name="lookahead")
    assert e.type_args == [ast.BitType(width=ast.IntLiteral(value=16, text="16"))]
    e = parse_expression("f<tuple<bit<8>, bit<16>>, bit<32>>(a, b)")
    assert isinstance(e, ast.Call) and len(e.type_args) == 2
    assert isinstance(e.type_args[0], ast.TupleType) and len(e.type_args[0].elems) == 2


def test_less_than_is_not_mistaken_for_type_args() -> None:
    e = parse_expression("a < b")
    assert e == ast.Binary(op="<", left=ast.PathExpr(name="a"), right=ast.PathExpr(name="b"))
    e = parse_expression("hdr.x < 5 && y > 3")
    assert isinstance(e, ast.Binary) and e.op == "&&"


def test_casts_slices_unary() -> None:
    e = parse_expression("(bit<8>) x + 1")
    assert isinstance(e, ast.Binary) and isinstance(e.left, ast.Cast)
    assert e.left.type == ast.BitType(width=ast.IntLiteral(value=8, text="8"))
    e = parse_expression("(int<16>)-5")
    assert isinstance(e, ast.Cast) and e.type.signed  # type: ignore[attr-defined]
    assert e.expr == ast.Unary(op="-", expr=ast.IntLiteral(value=5, text="5"))
    # '(x)' is a parenthesised expression when x is not a type
    e = parse_expression("(x) - 1")
    assert isinstance(e, ast.Binary) and e.left == ast.PathExpr(name="x")
    e = parse_expression("h.f[7:0] ++ ~h.g[3]")
    assert isinstance(e, ast.Binary) and isinstance(e.left, ast.Slice)
    assert isinstance(e.right, ast.Unary) and isinstance(e.right.expr, ast.Index)


def test_cast_to_declared_type_name(tmp_path: Path) -> None:
    prog = parse_src(
        tmp_path,
        "typedef bit<16> port_t;\n"
        "control C(inout bit<32> x) { apply { x = (bit<32>)(port_t)x; x = (x) + 1; } }\n",
    )
    c = find(prog.decls, ast.ControlDecl, "C")
    first, second = c.apply.stmts
    assert isinstance(first.rhs, ast.Cast) and isinstance(first.rhs.expr, ast.Cast)
    assert first.rhs.expr.type == ast.TypeName(name="port_t")
    assert isinstance(second.rhs, ast.Binary)


@pytest.mark.parametrize(
    ("text", "value", "width", "signed"),
    [
        ("8w5", 5, 8, False),
        ("16s3", 3, 16, True),
        ("32w0xFF", 255, 32, False),
        ("0x1_0", 16, None, False),
        ("0b1010", 10, None, False),
        ("0o17", 15, None, False),
        ("1_000", 1000, None, False),
        ("4w0b1_1", 3, 4, False),
        ("0d99", 99, None, False),
    ],
)
def test_integer_literals(text: str, value: int, width: int | None, signed: bool) -> None:
    e = parse_expression(text)
    assert e == ast.IntLiteral(value=value, width=width, signed=signed, text=text)


def test_negative_width_literal_is_unary_minus() -> None:
    e = parse_expression("-16s3")
    assert e == ast.Unary(op="-", expr=ast.IntLiteral(value=3, width=16, signed=True, text="16s3"))


def test_lists_struct_initializers_and_arguments() -> None:
    e = parse_expression("{a, b.c, 8w1}")
    assert isinstance(e, ast.ListExpr) and len(e.elems) == 3
    e = parse_expression("{f = 1, g = x}")
    assert isinstance(e, ast.StructInit) and [n for n, _ in e.fields] == ["f", "g"]
    assert parse_expression("{}") == ast.ListExpr(elems=[])
    e = parse_expression("f(x = 1, y = _)")
    assert isinstance(e, ast.Call)
    assert [a.name for a in e.args] == ["x", "y"]
    assert isinstance(e.args[1].value, ast.DontCare)
    e = parse_expression("f(a == 1)")
    assert isinstance(e, ast.Call) and e.args[0].name is None
    e = parse_expression("hdr.h.minSizeInBytes()")
    assert isinstance(e, ast.Call) and isinstance(e.target, ast.Member)
    assert e.target.name == "minSizeInBytes"
    e = parse_expression("error.NoMatch")
    assert e == ast.Member(expr=ast.PathExpr(name="error"), name="NoMatch")
    e = parse_expression(".top_const + 1")
    assert isinstance(e, ast.Binary) and e.left == ast.PathExpr(name=".top_const")


def test_stack_members_are_plain_members() -> None:
    for name in ("next", "last", "lastIndex"):
        e = parse_expression(f"hdr.stack.{name}")
        assert e == ast.Member(
            expr=ast.Member(expr=ast.PathExpr(name="hdr"), name="stack"), name=name
        )


# --------------------------------------------------------------------------- parsers


PARSER_SRC = """
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct hs_t { h_t h; h_t[4] stack; }
struct m_t { }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    const bit<8> K = 3;
    bit<8> tmp;
    state start {
        pkt.extract(hdr.h);
        tmp = pkt.lookahead<bit<8>>();
        verify(tmp != 0, error.NoMatch);
        transition select(hdr.h.a, hdr.h.b) {
            (1, 0x10 &&& 0xF0): s2;
            (K .. 9, _): s2;
            (_, default): accept;
            default: reject;
        }
    }
    state s2 {
        pkt.extract(hdr.stack.next);
        transition select(hdr.h.a) {
            5: s2;
            0x20 &&& 0xF0: accept;
        }
    }
    state no_transition {
        tmp = 1;
    }
}
"""


def test_parser_states_select_keysets(tmp_path: Path) -> None:
    prog = parse_src(tmp_path, PARSER_SRC)
    p = find(prog.decls, ast.ParserDecl, "P")
    assert [type(d).__name__ for d in p.locals] == ["ConstDecl", "VarDecl"]
    assert [s.name for s in p.states] == ["start", "s2", "no_transition"]
    start = p.states[0]
    assert len(start.stmts) == 3
    assert isinstance(start.stmts[1], ast.AssignStmt)
    look = start.stmts[1].rhs
    assert isinstance(look, ast.Call) and look.type_args
    tr = start.transition
    assert tr is not None and tr.next_state is None and len(tr.select_exprs) == 2
    k0, k1, k2, k3 = (c.keyset for c in tr.cases)
    assert isinstance(k0, ast.ListExpr)
    assert k0.elems[0] == ast.IntLiteral(value=1, text="1")
    assert isinstance(k0.elems[1], ast.Binary) and k0.elems[1].op == "&&&"
    assert isinstance(k1, ast.ListExpr)
    assert isinstance(k1.elems[0], ast.Binary) and k1.elems[0].op == ".."
    assert isinstance(k1.elems[1], ast.DontCare)
    assert isinstance(k2, ast.ListExpr) and isinstance(k2.elems[1], ast.Default)
    assert isinstance(k3, ast.Default)
    assert [c.state for c in tr.cases] == ["s2", "s2", "accept", "reject"]
    s2 = p.states[1].transition
    assert s2 is not None
    assert isinstance(s2.cases[1].keyset, ast.Binary) and s2.cases[1].keyset.op == "&&&"
    # A state without a transition statement goes to reject, like p4c.
    nt = p.states[2].transition
    assert nt is not None and nt.next_state == "reject" and nt.select_exprs == []


def test_parenthesised_single_keyset_is_the_expression(tmp_path: Path) -> None:
    src = PARSER_SRC.replace("5: s2;", "(5): s2;").replace(
        "0x20 &&& 0xF0: accept;", "(0x1 + 0x1) &&& 0xF0: accept;"
    )
    prog = parse_src(tmp_path, src)
    p = find(prog.decls, ast.ParserDecl, "P")
    tr = p.states[1].transition
    assert tr is not None
    assert tr.cases[0].keyset == ast.IntLiteral(value=5, text="5")
    mask = tr.cases[1].keyset
    assert isinstance(mask, ast.Binary) and mask.op == "&&&"
    assert isinstance(mask.left, ast.Binary) and mask.left.op == "+"


# --------------------------------------------------------------------------- controls, tables


CONTROL_SRC = """
#include <v1model.p4>
control C(inout bit<32> x, inout standard_metadata_t sm)(bit<8> ctor_arg) {
    register<bit<32>>(1024) r;
    direct_counter(CounterType.packets) dc;
    bit<32> v = 5;
    const bit<8> K = 1;
    action a(bit<9> port) { sm.egress_spec = port; }
    action b() { }
    table t {
        key = {
            x: ternary @name("xkey");
            sm.ingress_port: range;
        }
        actions = {
            @tableonly a;
            @defaultonly b();
            .NoAction;
        }
        const default_action = b();
        size = 64;
        counters = dc;
        entries = {
            priority = 10: (0x10 &&& 0xF0, 1 .. 5): a(1);
            const priority = 20: (_, default): b();
            @my_anno("e") (x, 0) : a(port = 2) @tail_anno;
        }
        my_custom_property = 32w7;
    }
    table t2 {
        key = { x: exact; }
        actions = { a; }
        default_action = a;
        const entries = {
            1: a(3);
            _: a(4);
        }
        implementation = action_profile(32w8);
    }
    apply {
        switch (t.apply().action_run) {
            a:
            b: { x = 1; }
            default: { exit; }
        }
        if (t2.apply().hit) { return; } else if (x == 2) { x = 3; } else { ; }
        @atomic { r.read(x, 0); r.write(0, x + 1); }
    }
}
"""


def test_control_locals(tmp_path: Path) -> None:
    prog = parse_src(tmp_path, CONTROL_SRC)
    c = find(prog.decls, ast.ControlDecl, "C")
    assert [p.name for p in c.params] == ["x", "sm"]
    assert [p.name for p in c.ctor_params] == ["ctor_arg"] and c.ctor_params[0].direction is None
    kinds = [type(d).__name__ for d in c.locals]
    assert kinds == [
        "InstantiationDecl", "InstantiationDecl", "VarDecl", "ConstDecl",
        "ActionDecl", "ActionDecl", "TableDecl", "TableDecl",
    ]  # fmt: skip
    r = c.locals[0]
    assert r.type == ast.TypeName(
        name="register", args=[ast.BitType(width=ast.IntLiteral(value=32, text="32"))]
    )
    assert r.args[0].value == ast.IntLiteral(value=1024, text="1024")
    v = c.locals[2]
    assert isinstance(v, ast.VarDecl) and v.init == ast.IntLiteral(value=5, text="5")


def test_table_properties(tmp_path: Path) -> None:
    prog = parse_src(tmp_path, CONTROL_SRC)
    c = find(prog.decls, ast.ControlDecl, "C")
    t = find(c.locals, ast.TableDecl, "t")
    props = {p.name: p for p in t.properties}
    assert list(props) == [
        "key", "actions", "default_action", "size", "counters", "entries", "my_custom_property",
    ]  # fmt: skip
    key = props["key"]
    assert [k.match_kind for k in key.keys] == ["ternary", "range"]
    assert key.keys[0].annotations[0].name == "name"
    assert key.keys[0].annotations[0].exprs == [ast.StringLiteral(value="xkey")]
    acts = props["actions"].actions
    assert [a.name for a in acts] == ["a", "b", ".NoAction"]
    assert [[x.name for x in a.annotations] for a in acts] == [["tableonly"], ["defaultonly"], []]
    da = props["default_action"]
    assert da.is_const and isinstance(da.value, ast.Call)
    assert da.value.target == ast.PathExpr(name="b")
    assert props["size"].value == ast.IntLiteral(value=64, text="64")
    assert props["counters"].value == ast.PathExpr(name="dc")
    assert props["my_custom_property"].value == ast.IntLiteral(value=7, width=32, text="32w7")
    entries = props["entries"]
    assert not entries.is_const
    e0, e1, e2 = entries.entries
    assert e0.priority == ast.IntLiteral(value=10, text="10") and not e0.is_const
    assert isinstance(e0.keyset, ast.ListExpr)
    assert [x.op for x in e0.keyset.elems] == ["&&&", ".."]  # type: ignore[attr-defined]
    assert e0.action.target == ast.PathExpr(name="a")
    assert e0.action.args[0].value == ast.IntLiteral(value=1, text="1")
    assert e1.is_const and e1.priority == ast.IntLiteral(value=20, text="20")
    assert isinstance(e1.keyset, ast.ListExpr)
    assert [type(x) for x in e1.keyset.elems] == [ast.DontCare, ast.Default]
    assert [a.name for a in e2.annotations] == ["my_anno", "tail_anno"]
    assert e2.action.args[0].name == "port"
    t2 = find(c.locals, ast.TableDecl, "t2")
    props2 = {p.name: p for p in t2.properties}
    assert props2["default_action"].value == ast.PathExpr(name="a")
    ce = props2["entries"]
    assert ce.is_const and all(e.is_const for e in ce.entries)
    assert ce.entries[0].keyset == ast.IntLiteral(value=1, text="1")
    assert isinstance(ce.entries[1].keyset, ast.DontCare)
    impl = props2["implementation"].value
    assert isinstance(impl, ast.Call) and impl.target == ast.PathExpr(name="action_profile")


def test_switch_fall_through_and_statements(tmp_path: Path) -> None:
    prog = parse_src(tmp_path, CONTROL_SRC)
    c = find(prog.decls, ast.ControlDecl, "C")
    sw, iff, atomic = c.apply.stmts
    assert isinstance(sw, ast.SwitchStmt)
    assert isinstance(sw.expr, ast.Member) and sw.expr.name == "action_run"
    labels = [case.label for case in sw.cases]
    assert labels[:2] == [ast.PathExpr(name="a"), ast.PathExpr(name="b")]
    assert isinstance(labels[2], ast.Default)
    assert sw.cases[0].body is None  # fall-through
    assert sw.cases[1].body is not None and isinstance(sw.cases[1].body.stmts[0], ast.AssignStmt)
    assert isinstance(sw.cases[2].body.stmts[0], ast.ExitStmt)  # type: ignore[union-attr]
    assert isinstance(iff, ast.IfStmt)
    assert isinstance(iff.cond, ast.Member) and iff.cond.name == "hit"
    assert isinstance(iff.then, ast.BlockStmt) and isinstance(iff.then.stmts[0], ast.ReturnStmt)
    assert isinstance(iff.other, ast.IfStmt)
    assert isinstance(iff.other.other, ast.BlockStmt)
    assert isinstance(iff.other.other.stmts[0], ast.EmptyStmt)
    assert isinstance(atomic, ast.BlockStmt) and atomic.annotations[0].name == "atomic"
    assert all(isinstance(s, ast.CallStmt) for s in atomic.stmts)


def test_declarations_inside_blocks(tmp_path: Path) -> None:
    prog = parse_src(
        tmp_path,
        "header h_t { bit<8> a; }\n"
        "control Sub(inout bit<8> y) { apply { } }\n"
        "control C(inout bit<8> x) {\n"
        "  apply {\n"
        "    bit<8> a = x;\n"
        "    h_t[2] st;\n"
        "    h_t h;\n"
        "    const int<4> N = -1;\n"
        "    Sub() s;\n"
        "    s.apply(x);\n"
        "    x = a;\n"
        "    tuple<bit<8>, bool> tu = {x, true};\n"
        "  }\n"
        "}\n",
    )
    c = find(prog.decls, ast.ControlDecl, "C")
    kinds = [type(s).__name__ for s in c.apply.stmts]
    assert kinds == [
        "VarDecl", "VarDecl", "VarDecl", "ConstDecl", "InstantiationDecl", "CallStmt",
        "AssignStmt", "VarDecl",
    ]  # fmt: skip
    st = c.apply.stmts[1]
    assert isinstance(st.type, ast.StackType)
    assert st.type.size == ast.IntLiteral(value=2, text="2")


def test_top_level_declarations(tmp_path: Path) -> None:
    prog = parse_src(
        tmp_path,
        "typedef bit<48> mac_t;\n"
        "type bit<32> id_t;\n"
        "enum Color { RED, GREEN }\n"
        "enum bit<8> Proto { TCP = 6, UDP = 8w17 }\n"
        "error { MyError }\n"
        "match_kind { my_kind }\n"
        "header_union u_t { h1_t a; h2_t b; }\n"
        "struct pair_t<T> { T first; T second; }\n"
        "extern Obj<T> { Obj(bit<32> size); T get<U>(in U idx); abstract void cb(); }\n"
        "extern bit<8> ext_fn<T>(in T v);\n"
        "extern void ext_void();\n"
        "bit<8> add1(in bit<8> v) { return v + 1; }\n"
        "varbit<32> dummy_fn() { return 0; }\n"
        "package Pkg<H>(H h);\n"
        "parser PT<H>(packet_in b, out H h);\n"
        "control CT(inout bit<8> x);\n",
    )
    d = {x.name: x for x in prog.decls if not isinstance(x, (ast.ErrorDecl, ast.MatchKindDecl))}
    assert d["mac_t"] == ast.TypedefDecl(
        name="mac_t", type=ast.BitType(width=ast.IntLiteral(value=48, text="48"))
    )
    assert isinstance(d["id_t"], ast.TypedefDecl) and d["id_t"].is_newtype
    assert d["Color"].members == ["RED", "GREEN"] and d["Color"].underlying is None
    proto = d["Proto"]
    assert isinstance(proto.underlying, ast.BitType) and proto.members == ["TCP", "UDP"]
    assert proto.values == [
        ast.IntLiteral(value=6, text="6"),
        ast.IntLiteral(value=17, width=8, text="8w17"),
    ]
    errs = [x for x in prog.decls if isinstance(x, ast.ErrorDecl)]
    assert errs[0].name == "error" and errs[0].members == ["MyError"]
    assert isinstance(d["u_t"], ast.HeaderUnionDecl)
    assert d["pair_t"].type_params == ["T"]
    obj = d["Obj"]
    assert isinstance(obj, ast.ExternDecl) and obj.type_params == ["T"]
    assert [(m.name, m.ret is None, m.is_abstract) for m in obj.methods] == [
        ("Obj", True, False), ("get", False, False), ("cb", False, True),
    ]  # fmt: skip
    assert obj.methods[1].type_params == ["U"]
    fn = d["ext_fn"]
    assert isinstance(fn, ast.ExternFunctionDecl) and fn.type_params == ["T"]
    assert isinstance(d["ext_void"].ret, ast.VoidType)
    add1 = d["add1"]
    assert isinstance(add1, ast.FunctionDecl)
    assert isinstance(add1.body.stmts[0], ast.ReturnStmt)
    assert isinstance(d["Pkg"], ast.PackageDecl) and d["Pkg"].type_params == ["H"]
    assert isinstance(d["PT"], ast.ParserTypeDecl)
    assert isinstance(d["CT"], ast.ControlTypeDecl)


# --------------------------------------------------------------------------- annotations


def test_annotations_keep_raw_text_and_expressions(tmp_path: Path) -> None:
    prog = parse_src(
        tmp_path,
        '@name("top.x") @hidden @weird(not an, expression ++) @size(1, 2 + 3)\n'
        '@kv[key="v", n=3]\n'
        "const bit<8> X = 1;\n"
        "struct s_t { @field_list(1) bit<8> f; }\n"
        "control C(@name(\"p\") inout bit<8> x) { apply { } }\n",
    )
    x = find(prog.decls, ast.ConstDecl, "X")
    a = {an.name: an for an in x.annotations}
    assert list(a) == ["name", "hidden", "weird", "size", "kv"]
    assert a["name"].raw == '"top.x"'
    assert a["name"].exprs == [ast.StringLiteral(value="top.x")]
    assert a["hidden"].raw == "" and a["hidden"].exprs == []
    assert a["weird"].raw == "not an, expression ++" and a["weird"].exprs == []
    assert a["size"].exprs[0] == ast.IntLiteral(value=1, text="1")
    assert isinstance(a["size"].exprs[1], ast.Binary)
    assert a["kv"].kv == {
        "key": ast.StringLiteral(value="v"),
        "n": ast.IntLiteral(value=3, text="3"),
    }
    s = find(prog.decls, ast.StructDecl, "s_t")
    assert s.fields[0].annotations[0].name == "field_list"
    c = find(prog.decls, ast.ControlDecl, "C")
    assert c.params[0].annotations[0].exprs == [ast.StringLiteral(value="p")]


def test_annotations_corpus_program() -> None:
    prog = parse_file(CORPUS / "annotations.p4")
    ing = find(prog.decls, ast.ControlDecl, "AIngress")
    assert ing.annotations[0].name == "description"
    t = find(ing.locals, ast.TableDecl, "mac_table")
    assert [a.name for a in t.annotations] == ["id", "name", "softnic_hint"]
    assert t.annotations[0].exprs == [ast.IntLiteral(value=0x02000001, text="0x02000001")]
    keys = next(p for p in t.properties if p.name == "key").keys
    assert [[a.name for a in k.annotations] for k in keys] == [["name"], ["name", "brief"]]
    fwd = find(ing.locals, ast.ActionDecl, "forward")
    assert fwd.params[0].annotations[0].raw == '"out_port"'


# --------------------------------------------------------------------------- locations


def test_locations_follow_line_markers_into_includes(tmp_path: Path) -> None:
    (tmp_path / "inc.p4").write_text("// header file\n\nheader h_t {\n    bit<8> a;\n}\n")
    prog = parse_src(
        tmp_path,
        '#include "inc.p4"\n#define WIDTH 16\n/* a\n   multi-line\n   comment */\n'
        "const bit<WIDTH> C1 = 1;\n"
        "  const    bit<8>   C2 =   2;\n",
    )
    h = find(prog.decls, ast.HeaderDecl, "h_t")
    assert h.loc == ast.Loc(str(tmp_path / "inc.p4"), 3, 8)
    assert h.fields[0].loc == ast.Loc(str(tmp_path / "inc.p4"), 4, 12)
    c1 = find(prog.decls, ast.ConstDecl, "C1")
    assert (c1.loc.file, c1.loc.line) == (str(tmp_path / "prog.p4"), 6)
    c2 = find(prog.decls, ast.ConstDecl, "C2")
    # Whitespace runs that cpp collapses are restored: columns are those of the source file.
    assert c2.loc == ast.Loc(str(tmp_path / "prog.p4"), 7, 21)
    assert c2.value.loc == ast.Loc(str(tmp_path / "prog.p4"), 7, 28)


def test_locations_of_nested_nodes(tmp_path: Path) -> None:
    prog = parse_src(
        tmp_path,
        "control C(inout bit<8> x) {\n"
        "    apply {\n"
        "        x = x + (bit<8>)3;\n"
        "    }\n"
        "}\n",
    )
    c = find(prog.decls, ast.ControlDecl, "C")
    assign = c.apply.stmts[0]
    f = str(tmp_path / "prog.p4")
    assert assign.loc == ast.Loc(f, 3, 9)
    assert assign.rhs.loc == ast.Loc(f, 3, 13)
    assert assign.rhs.right.loc == ast.Loc(f, 3, 17)
    assert assign.rhs.right.expr.loc == ast.Loc(f, 3, 25)


def test_defines_and_include_dirs(tmp_path: Path) -> None:
    inc = tmp_path / "incdir"
    inc.mkdir()
    (inc / "consts.p4").write_text("const bit<8> FROM_INC = VALUE;\n")
    prog_file = tmp_path / "prog.p4"
    prog_file.write_text("#include <consts.p4>\n#ifdef FLAG\nconst bit<8> FLAGGED = 1;\n#endif\n")
    prog = parse_program(preprocess(str(prog_file), [str(inc)], {"VALUE": "42", "FLAG": None}))
    names = [d.name for d in prog.decls]
    assert names == ["FROM_INC", "FLAGGED"]
    assert prog.decls[0].value == ast.IntLiteral(value=42, text="42")
    prog = parse_program(preprocess(str(prog_file), [str(inc)], {"VALUE": "1"}))
    assert [d.name for d in prog.decls] == ["FROM_INC"]


def test_target_macros_are_predefined(tmp_path: Path) -> None:
    prog = parse_src(tmp_path, "#ifdef __TARGET_BMV2__\nconst bit<8> BMV2 = 1;\n#endif\n")
    assert [d.name for d in prog.decls] == ["BMV2"]
