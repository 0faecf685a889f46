"""Code generation for actions and the primitives in their bodies.

Each action becomes ``_act_<id>(F, D, S)``: ``F`` the packet's field slots, ``D`` the action
data tuple, ``S`` the :class:`~softnic.runtime.packet.PacketCtx`. Primitives compile to inline
statements; an action with ``_jump`` / ``_jump_if_zero`` (p4c's lowering of conditionals in
actions) becomes a small program-counter loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.gen_base import DROP_PORT, GenBase, _ind


@dataclass
class ActionInfo:
    name: str
    aid: int
    fn: Callable
    param_widths: list[int]
    primitives: list[str]  # one trace line per primitive call



class ActionGen(GenBase):
    """Actions and primitives. ``hash_fn`` comes from the checksum mixin (``gen_deparse``)."""

    # -- primitives --------------------------------------------------------------------------
    def primitive(self, p: Any, where: str) -> list[str]:
        if not isinstance(p, dict) or not isinstance(p.get("op"), str):
            raise PipelineLoadError(f"{where}: malformed primitive {p!r}")
        op = p["op"]
        args = p.get("parameters", [])
        if not isinstance(args, list):
            raise PipelineLoadError(f"{where}: primitive '{op}' parameters must be an array")
        w = f"{where}: primitive '{op}'"
        eg = self.eg

        def nargs(*counts: int) -> None:
            if len(args) not in counts:
                raise PipelineLoadError(f"{w}: expected {counts} parameters, got {len(args)}")

        def named(i: int, kind: str, table: dict) -> Any:
            a = args[i]
            if not isinstance(a, dict) or a.get("type") != kind or a.get("value") not in table:
                raise PipelineLoadError(f"{w}: parameter {i} must name a known {kind}: {a!r}")
            return table[a["value"]]

        if op == "assign_union":
            nargs(2)
            du = self.lay.unions.get(args[0].get("value") if isinstance(args[0], dict) else None)
            su = self.lay.unions.get(args[1].get("value") if isinstance(args[1], dict) else None)
            if du is None or su is None or len(du) != len(su):
                raise PipelineLoadError(f"{w}: expected two header unions of the same type")
            out = []
            for dn, sn in zip(du, su, strict=True):
                a, b = self.lay.headers[dn], self.lay.headers[sn]
                out.append(f"F[{a.base}:{a.base + a.span}] = F[{b.base}:{b.base + b.span}]")
            return out
        if op == "assign_VL":
            nargs(2)
            d = eg.lvalue(args[0], w)
            sref = args[1].get("value") if isinstance(args[1], dict) else None
            dh = self.lay.headers.get(args[0].get("value", [None])[0])
            sh = self.lay.headers.get(sref[0]) if isinstance(sref, list) else None
            if dh is None or sh is None or dh.vl_index is None or sh.vl_index is None:
                raise PipelineLoadError(f"{w}: expected two varbit fields")
            return [f"F[{d[0]}] = F[{self.lay.field_slot(sref)}]",
                    f"F[{dh.len_slot}] = F[{sh.len_slot}]"]
        if op in ("assign", "modify_field"):
            nargs(2)
            if isinstance(args[0], dict) and args[0].get("type") == "header":
                return self.primitive({"op": "assign_header", "parameters": args}, where)
            dst = eg.lvalue(args[0], w)
            src, sw = eg.rv(args[1], w)
            return [eg.store(dst, src, sw)]
        if op in ("add_to_field", "subtract_from_field"):
            nargs(2)
            dst = eg.lvalue(args[0], w)
            sign = "+" if op == "add_to_field" else "-"
            return [eg.store(dst, f"F[{dst[0]}] {sign} {eg.data(args[1], w)}")]
        binops = {"add": "+", "subtract": "-", "bit_and": "&", "bit_or": "|", "bit_xor": "^",
                  "shift_left": "<<", "shift_right": ">>"}
        if op in binops:
            nargs(3)
            dst = eg.lvalue(args[0], w)
            return [eg.store(dst, f"{eg.data(args[1], w)} {binops[op]} {eg.data(args[2], w)}")]
        if op == "assign_header":
            nargs(2)
            d = eg.header(args[0], w)
            s = eg.header(args[1], w)
            n = d.span
            return [f"_d = {d.base}", f"_s = {s.base}", f"F[_d:_d + {n}] = F[_s:_s + {n}]"]
        if op == "assign_header_stack":
            nargs(2)
            ds = self.lay.stack(args[0].get("value"))
            ss = self.lay.stack(args[1].get("value"))
            out = []
            for dh, sh in zip(ds.headers, ss.headers, strict=False):
                a, b = self.lay.headers[dh], self.lay.headers[sh]
                n = len(a.fields) + 1
                out.append(f"F[{a.base}:{a.base + n}] = F[{b.base}:{b.base + n}]")
            out.append(f"F[{ds.next_slot}] = F[{ss.next_slot}]")
            return out
        if op == "add_header":
            nargs(1)
            h = eg.header(args[0], w)
            zeros = eg.const([0] * h.nfields, "z")
            self.len_changes = True
            return [f"_h = {h.base}", f"if not F[_h + {h.nfields}]:",
                    f"    F[_h:_h + {h.nfields}] = {zeros}", f"    F[_h + {h.nfields}] = 1",
                    f"    F[{self.lay.len_reg}] += {self.header_nbytes(h)}"] + [
                        f"F[{vs}] = 0" for vs in h.siblings]
        if op == "remove_header":
            nargs(1)
            h = eg.header(args[0], w)
            self.len_changes = True
            return [f"_h = {h.base}", f"if F[_h + {h.nfields}]:",
                    f"    F[_h + {h.nfields}] = 0",
                    f"    F[{self.lay.len_reg}] -= {self.header_nbytes(h)}"]
        if op in ("push", "pop"):
            nargs(2)
            sname = args[0].get("value") if isinstance(args[0], dict) else None
            st = self.lay.stack(sname)
            nf = len(self.lay.headers[st.headers[0]].fields)
            return [f"_{op}(F, {eg.stack_bases(sname)}, {nf}, {st.next_slot}, "
                    f"{eg.data(args[1], w)})"]
        if op in ("mark_to_drop", "drop"):
            out = []
            if self.sm_espec is not None:
                out.append(f"F[{self.sm_espec}] = {DROP_PORT}")
            if self.sm_mcast is not None:
                out.append(f"F[{self.sm_mcast}] = 0")
            return out or ["pass"]
        if op == "exit":
            return ["S.exited = True", "return"]
        if op in ("no_op", "_nop"):
            return ["pass"]
        if op == "log_msg":
            nargs(1, 2)
            fmt = args[0].get("value") if isinstance(args[0], dict) else None
            if not isinstance(fmt, str):
                raise PipelineLoadError(f"{w}: format must be a string")
            vals = []
            if len(args) == 2:
                vec = args[1].get("value") if isinstance(args[1], dict) else None
                if not isinstance(vec, list):
                    raise PipelineLoadError(f"{w}: expected a parameters_vector")
                vals = [eg.data(x, w) for x in vec]
            return ["if S.logs is not None:",
                    f"    S.logs.append(_logfmt({fmt!r}, [{', '.join(vals)}]))"]
        if op in ("assert", "assume"):
            nargs(1)
            return [f"if not {eg.data(args[0], w)}:", f"    raise _AF({op!r} + ' failed')"]
        if op == "register_read":
            nargs(3)
            reg = named(1, "register_array", self.registers)
            dst = eg.lvalue(args[0], w)
            return [eg.store(dst, f"_regget({eg.const(reg, 'reg')}, {eg.data(args[2], w)})",
                             reg.bitwidth)]
        if op == "register_write":
            nargs(3)
            reg = named(0, "register_array", self.registers)
            r = eg.const(reg, "reg")
            return [f"_i = {eg.data(args[1], w)}", f"if 0 <= _i < {reg.size}:",
                    f"    {r}.cells[_i] = ({eg.data(args[2], w)}) & {reg.mask:#x}"]
        if op == "count":
            nargs(2)
            c = named(0, "counter_array", self.counters)
            plen = f"F[{self.sm_plen}]" if self.sm_plen is not None else "0"
            return [f"{eg.const(c, 'cnt')}.count({eg.data(args[1], w)}, {plen})"]
        if op == "execute_meter":
            nargs(3)
            m = named(0, "meter_array", self.meters)
            plen = f"F[{self.sm_plen}]" if self.sm_plen is not None else "0"
            dst = eg.lvalue(args[2], w)
            return [eg.store(dst, f"{eg.const(m, 'mtr')}.execute({eg.data(args[1], w)}, {plen})",
                             2)]
        if op == "modify_field_with_hash_based_offset":
            nargs(4)
            calc = args[2].get("value") if isinstance(args[2], dict) else None
            hf = self.hash_fn(calc, w)
            dst = eg.lvalue(args[0], w)
            return [f"_m = {eg.data(args[3], w)}", f"_hv = {hf}(F, b'')",
                    eg.store(dst, f"{eg.data(args[1], w)} + (_hv % _m if _m else _hv)")]
        if op == "modify_field_rng_uniform":
            nargs(3)
            dst = eg.lvalue(args[0], w)
            return [eg.store(dst, f"_rand({eg.data(args[1], w)}, {eg.data(args[2], w)})")]
        if op == "generate_digest":
            nargs(2)
            lid = hexint(args[1].get("value") if isinstance(args[1], dict) else None, w)
            if lid not in self.p.learn_lists:
                raise PipelineLoadError(f"{w}: unknown learn list id {lid}")
            return [f"S.digests = S.digests + ({lid},)"]
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            nargs(1, 2)
            fl = 0
            if len(args) == 2:
                fl = hexint(args[1].get("value") if isinstance(args[1], dict) else None, w)
                if fl and fl not in self.p.field_lists:
                    raise PipelineLoadError(f"{w}: unknown field list id {fl}")
            return [f"S.clone = ({eg.data(args[0], w)}, {fl})"]
        if op in ("resubmit", "recirculate"):
            nargs(0, 1)
            fl = 0
            if args:
                fl = hexint(args[0].get("value") if isinstance(args[0], dict) else None, w)
                if fl and fl not in self.p.field_lists:
                    raise PipelineLoadError(f"{w}: unknown field list id {fl}")
            return [f"S.{op} = {fl}"]
        if op == "truncate":
            nargs(1)
            return [f"S.truncate = {eg.data(args[0], w)}"]
        raise PipelineLoadError(f"{where}: unsupported primitive '{op}'")

    def primitive_label(self, p: dict) -> str:
        si = p.get("source_info") if isinstance(p, dict) else None
        if isinstance(si, dict) and isinstance(si.get("source_fragment"), str):
            return f"Primitive {si['source_fragment']}"
        return f"Primitive {p.get('op')}"

    # -- actions -----------------------------------------------------------------------------
    def action(self, a: dict) -> ActionInfo:
        name = a["name"]
        rd = a.get("runtime_data") or []
        self.eg.nparams = len(rd)
        self.eg.param_widths = [r["bitwidth"] for r in rd]
        prims = a["primitives"]
        fname = f"_act_{a['id']}"
        where = f"action '{name}'"
        jumps = any(isinstance(p, dict) and p.get("op") in ("_jump", "_jump_if_zero")
                    for p in prims)
        body: list[str] = []
        if not jumps:
            for p in prims:
                body += self.primitive(p, where)
        else:
            body += ["pc = 0", f"while pc < {len(prims)}:"]
            for i, p in enumerate(prims):
                op = p.get("op") if isinstance(p, dict) else None
                body.append(f"    if pc == {i}:")
                if op == "_jump":
                    tgt = self.eg.data(p["parameters"][0], where)
                    body += [f"        pc = {tgt}", "        continue"]
                elif op == "_jump_if_zero":
                    c = self.eg.data(p["parameters"][0], where)
                    tgt = self.eg.data(p["parameters"][1], where)
                    body += [f"        if ({c}) == 0:", f"            pc = {tgt}",
                             "            continue"]
                else:
                    body += _ind(self.primitive(p, where), 2)
                body += [f"        pc = {i + 1}"]
        self.eg.nparams = None
        self.eg.param_widths = []
        if not body:
            body = ["pass"]
        self.src += [f"def {fname}(F, D, S):"] + _ind(body) + [""]
        labels = [self.primitive_label(p) for p in prims]
        return ActionInfo(name, a["id"], fname, [r["bitwidth"] for r in rd], labels)  # type: ignore[arg-type]
