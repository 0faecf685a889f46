"""The state one BMv2 lowering shares between its steps (p4c's ConversionContext): what is
global in the BMv2 JSON. A leaf of the back end: the per-construct lowerers (``lower_parser``,
``lower_control``, ``lower_stmt``, ``lower_expr``) take it as an argument and the driver
(``lower``) creates it, so none of them imports another's module just for this type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softnic.compiler.bmv2.layout import FieldLoc, Layout, Loc, StructLoc
from softnic.compiler.bmv2.lower_expr import field_ref
from softnic.compiler.diagnostics import CompileWarning, error
from softnic.compiler.frontend.check import Checker, annotation_string
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import fresh_in
from softnic.compiler.ir.scope import Sym
from softnic.compiler.ir.types import ExternT, HeaderT, PType, StructT


def source_info(node: ast.Node, fragment: str) -> dict[str, Any]:
    return {
        "filename": node.loc.file,
        "line": node.loc.line,
        "column": node.loc.col,
        "source_fragment": fragment,
    }


def parse_ints(raw: str, const: Callable[[str], int | None] | None = None) -> list[int]:
    """The integers in an annotation's argument text; a name is looked up with ``const``."""
    out = []
    for part in raw.split(","):
        part = part.strip()
        try:
            out.append(int(part, 0))
        except ValueError:
            v = const(part) if const is not None else None
            if v is not None:
                out.append(v)
    return out


class LowerContext:
    """The state one lowering shares between its steps: what is global in the BMv2 JSON.

    ``layout`` holds the header types and instances; ``actions``, ``calculations``,
    ``learn_lists``, ``field_lists`` and ``checksums`` are the JSON's global arrays, filled by
    the per-construct lowerers through the methods below; ``names`` and ``ids`` keep the
    generated names and ids unique; ``roots`` maps block parameter types to their storage and
    ``instances`` lists the extern instances in declaration order.
    """

    def __init__(self, chk: Checker, program_name: str) -> None:
        self.chk = chk
        self.program_name = program_name
        self.layout = Layout()
        self.actions: list[dict[str, Any]] = []
        self.action_ids: dict[str, int] = {}  # JSON name -> the first action of that name
        self.action_decl_ids: dict[int, int] = {}  # id(ActionDecl) -> its JSON action id
        self.action_decl_of: dict[str, ast.ActionDecl] = {}  # JSON name -> first declaration
        self.calculations: list[dict[str, Any]] = []
        self.learn_lists: list[dict[str, Any]] = []
        self.field_lists: list[dict[str, Any]] = []
        self.field_list_ids: dict[int, int] = {}
        self.checksums: list[dict[str, Any]] = []
        self.direct_meter_targets: dict[str, list[str]] = {}
        self.direct_bindings: dict[tuple[str, str], str] = {}
        self.warnings: list[CompileWarning] = []
        self.names: set[str] = set()
        self.ids: dict[str, int] = {}
        self.meta_type: StructT | None = None
        self.meta_root: StructLoc | None = None
        self.roots: dict[str, Loc] = {}
        self.instances: list[Sym] = []

    # ------------------------------------------------------------------ small services

    def next_id(self, kind: str) -> int:
        n = self.ids.get(kind, 0)
        self.ids[kind] = n + 1
        return n

    def warn(self, node: ast.Node, msg: str, kind: str, width: int = 1,
             loc: ast.Loc | None = None) -> None:
        """A warning of p4c's class ``kind`` about ``node`` (or the position ``loc`` in it)."""
        w = CompileWarning(loc or node.loc, msg, kind, width)
        if w not in self.warnings:  # a construct lowered twice still warns once
            self.warnings.append(w)

    def fresh_name(self, base: str) -> str:
        return fresh_in(self.names, base)

    def fresh_action_name(self, base: str) -> str:
        return self.fresh_name(base)

    def fresh_table_name(self, base: str) -> str:
        return self.fresh_name(base)

    def fresh_cond_name(self) -> str:
        return f"node_{self.next_id('node') + 2}"

    # ------------------------------------------------------------------ actions

    def add_action_json(self, name: str, runtime_data: list[dict[str, Any]],
                        prims: list[dict[str, Any]], node: ast.Node) -> int:
        aid = len(self.actions)
        self.actions.append({"name": name, "id": aid, "runtime_data": runtime_data,
                             "primitives": prims})
        self.action_ids.setdefault(name, aid)
        self.names.add(name)
        return aid

    # ------------------------------------------------------------------ calculations etc.

    def add_calculation(self, algo: str, inputs: list[dict[str, Any]], node: ast.Node) -> str:
        for c in self.calculations:
            if c["algo"] == algo and c["input"] == inputs:
                return c["name"]
        name = self.fresh_name("calc")
        self.calculations.append({"name": name, "id": len(self.calculations),
                                  "source_info": source_info(node, ""), "algo": algo,
                                  "input": inputs})
        return name

    def add_learn_list(self, name: str, elems: list[dict[str, Any]],
                       fields: list[tuple[str, int]], node: ast.Node) -> int:
        """The id of the learn list ``name`` with these elements (added when new). ``fields``
        (the digest struct's fields) is not needed here any more: P4Info takes them from the
        checked program."""
        for ll in self.learn_lists:
            if ll["name"] == name and ll["elements"] == elems:
                return ll["id"]
        lid = len(self.learn_lists) + 1
        self.learn_lists.append({"id": lid, "name": name, "source_info": source_info(node, ""),
                                 "elements": elems})
        return lid

    def field_list_id(self, index: Any, node: ast.Node) -> int:
        if not isinstance(index, int):
            raise error(node, "field list index must be a constant")
        if index in self.field_list_ids:
            return self.field_list_ids[index]
        elems: list[dict[str, Any]] = []
        if self.meta_type is not None and self.meta_root is not None:
            annos = dict(self.meta_type.field_annotations)
            for fn, _ in self.meta_type.fields:
                for aname, raw in annos.get(fn, ()):
                    if aname == "field_list" and index in parse_ints(raw, self.const_int):
                        loc = self.meta_root.fields[fn]
                        if not hasattr(loc, "field"):
                            raise error(node, f"{fn}: only scalar fields can be in field lists")
                        elems.append(field_ref(loc.header, loc.field))  # type: ignore
        fid = len(self.field_lists) + 1
        self.field_lists.append({"id": fid, "name": f"field_list{index}", "elements": elems})
        self.field_list_ids[index] = fid
        return fid

    def const_int(self, name: str) -> int | None:
        """The value of a top-level integer constant (``@field_list(FL_PACKET_IN)``)."""
        sym = self.chk.top.lookup(name)
        if sym is not None and sym.kind == "const" and isinstance(sym.value, int) and not (
                isinstance(sym.value, bool)):
            return sym.value
        return None

    def bind_direct(self, kind: str, inst: str, table: str) -> None:
        prev = self.direct_bindings.get((kind, inst))
        if prev is not None and prev != table:
            raise error(None, f"{inst}: a direct {kind} can be attached to only one table")
        self.direct_bindings[(kind, inst)] = table

    # ------------------------------------------------------------------ storage roots

    def root_for(self, t: PType, p: ast.Param, is_meta: bool) -> Loc | None:
        if isinstance(t, ExternT):
            return None
        if not isinstance(t, StructT):
            raise error(p, f"{p.name}: block parameters of type {t.show()} are unsupported")
        decl_sym = self.chk.top.lookup(t.name)
        if decl_sym is not None and annotation_string(decl_sym.decl, "name") == (
            "standard_metadata"
        ) or t.name == "standard_metadata_t":
            if "standard_metadata" not in self.roots:
                hdr = HeaderT("standard_metadata", t.fields)
                self.layout.add_header("standard_metadata", hdr, metadata=True)
                self.roots["standard_metadata"] = StructLoc(
                    t, {fn: FieldLoc("standard_metadata", fn, ft) for fn, ft in t.fields},
                    header="standard_metadata")
            return self.roots["standard_metadata"]
        if t.name not in self.roots:
            prefix = "userMetadata." if is_meta else ""
            fields: dict[str, Loc] = {}
            for fn, ft in t.fields:
                fields[fn] = self.layout.alloc(ft, fn, prefix, "")
            self.roots[t.name] = StructLoc(t, fields)
            if is_meta:
                self.meta_type = t
                self.meta_root = self.roots[t.name]  # type: ignore[assignment]
        return self.roots[t.name]

    def block_env(self, d: Any, meta_index: int | None) -> dict[int, Loc]:
        env: dict[int, Loc] = {}
        for i, p in enumerate(d.params):
            psym = self.chk.decl_syms[id(p)]
            assert psym.type is not None
            loc = self.root_for(psym.type, p, i == meta_index)
            if loc is not None:
                env[id(psym)] = loc
        for loc_decl in d.locals:
            if isinstance(loc_decl, ast.VarDecl):
                sym = self.chk.decl_syms[id(loc_decl)]
                assert sym.type is not None
                lname = self.layout.local_name(loc_decl.name)
                env[id(sym)] = self.layout.alloc(sym.type, lname, "")
                if loc_decl.init is not None:
                    raise error(loc_decl, f"{loc_decl.name}: initializers of control-level "
                                "variables are unsupported on this target; assign in apply")
            elif isinstance(loc_decl, ast.InstantiationDecl):
                self.instances.append(self.chk.decl_syms[id(loc_decl)])
            elif isinstance(loc_decl, ast.ParserState):
                pass
        return env
