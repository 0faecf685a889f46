"""Action primitives as C statements over ``st`` (the packet's state) and ``st->ap`` (the
running action's parameters). Semantics follow softnic's engine (``softnic.runtime.primitives``),
which follows BMv2; constructs the kernel cannot do in one pass are refused by name."""

from __future__ import annotations

from typing import Any

from softnic.compiler.xdp.context import CounterSpec, DigestSpec, Gen, RegisterSpec, indent
from softnic.compiler.xdp.deparse import hash_fn
from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.expr import ABORT_CODES, CSrc, HdrRef, lit
from softnic.compiler.xdp.words import limbs
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint

REFUSED = {
    "clone_ingress_pkt_to_egress": "clone (clone / clone_preserving_field_list)",
    "clone_egress_pkt_to_egress": "clone (clone / clone_preserving_field_list)",
    "resubmit": "resubmit", "recirculate": "recirculate",
    "execute_meter": "meters", "modify_field_rng_uniform": "random",
    "assign_VL": "a varbit field", "assign_union": "header unions",
    "assign_header_stack": "assigning a whole header stack",
    "add": "the P4_14 primitive 'add'", "subtract": "the P4_14 primitive 'subtract'",
}


def _args(prim: Any, where: str) -> tuple[str, list]:
    if not isinstance(prim, dict) or not isinstance(prim.get("op"), str):
        raise PipelineLoadError(f"{where}: malformed primitive {str(prim)[:60]}")
    args = prim.get("parameters") or []
    if not isinstance(args, list):
        raise PipelineLoadError(f"{where}: malformed primitive parameters")
    return prim["op"], args


def _nargs(op: str, args: list, n: int, where: str) -> None:
    if len(args) != n:
        raise PipelineLoadError(f"{where}: {op} takes {n} parameters, got {len(args)}")


def _named(args: list, i: int, where: str) -> str:
    v = args[i].get("value") if isinstance(args[i], dict) else None
    if not isinstance(v, str):
        raise PipelineLoadError(f"{where}: expected a name, got {str(args[i])[:60]}")
    return v


def register_spec(g: Gen, name: str, where: str) -> RegisterSpec:
    r = g.registers.get(name)
    if r is None:
        rj = g.p.registers.get(name)
        if rj is None:
            raise PipelineLoadError(f"{where}: unknown register array {name[:60]!r}")
        r = g.registers[name] = RegisterSpec(name, g.fresh("reg_"), rj["size"], rj["bitwidth"])
    return r


def counter_spec(g: Gen, name: str, where: str) -> CounterSpec:
    c = g.counters.get(name)
    if c is None:
        cj = g.p.counters.get(name)
        if cj is None:
            raise PipelineLoadError(f"{where}: unknown counter array {name[:60]!r}")
        if cj.get("is_direct"):
            raise PipelineLoadError(f"{where}: count() on the direct counter {name[:60]!r}")
        c = g.counters[name] = CounterSpec(name, g.fresh("cnt_"), cj.get("size", 0))
    return c


def primitive(g: Gen, prim: Any, where: str) -> list[str]:
    op, args = _args(prim, where)
    ex = g.ex
    if op in REFUSED:
        raise XdpUnsupported(REFUSED[op], where)
    if op == "assign" or op == "modify_field":
        _nargs(op, args, 2, where)
        if isinstance(args[0], dict) and args[0].get("type") == "header":
            return _assign_header(g, args, where)
        dst = ex.lvalue(args[0], where)
        return ex.take_pre() + ex.store(dst, args[1], where)
    if op in ("assign_header", "copy_header"):
        _nargs(op, args, 2, where)
        return _assign_header(g, args, where)
    if op == "add_header":
        _nargs(op, args, 1, where)
        h = ex.header(args[0], where)
        nf = h.nwords - 1
        return ex.take_pre() + [f"if (!{h.valid}) {{"] + [
            f"    st->f[{h.word} + {i}] = 0;" for i in range(nf)] + [
            f"    {h.valid} = 1;",
            f"    st->f[{g.w.of(g.lay.len_reg)}] += {h.h.nbits // 8};", "}"]
    if op == "add_header_fast":
        h = ex.header(args[0], where)
        return ex.take_pre() + [f"{h.valid} = 1;"]
    if op == "remove_header":
        _nargs(op, args, 1, where)
        h = ex.header(args[0], where)
        return ex.take_pre() + [f"if ({h.valid}) {{", f"    {h.valid} = 0;",
                                f"    st->f[{g.w.of(g.lay.len_reg)}] -= {h.h.nbits // 8};", "}"]
    if op in ("push", "pop"):
        return _push_pop(g, op, args, where)
    if op in ("mark_to_drop", "drop"):
        out = [f"st->f[{g.sm('egress_spec')}] = {g.drop_port};",
               f"st->f[{g.sm('mcast_grp')}] = 0;"]
        return out
    if op == "exit":
        g.uses_exit = True
        return ["st->exited = 1;"]
    if op in ("no_op", "log_msg"):
        return []
    if op in ("assert", "assume"):
        _nargs(op, args, 1, where)
        cnd = ex.cond(args[0], where)
        return ex.take_pre() + [f"if (!{cnd}) {{ st->abort = {ABORT_CODES['assert']}; "
                                "goto abort; }"]
    if op == "truncate":
        _nargs(op, args, 1, where)
        v = ex.c(args[0], where)
        t = ex.fresh("tr")
        return ex.take_pre() + ["{", f"    __u64 {t} = {v};",
                                f"    if (!st->truncate || {t} < st->truncate)",
                                f"        st->truncate = {t};", "}"]
    if op == "generate_digest":
        _nargs(op, args, 2, where)
        lid = args[1].get("value") if isinstance(args[1], dict) else None
        lid = hexint(lid, where) if isinstance(lid, str) else lid
        if lid not in g.p.learn_lists:
            raise PipelineLoadError(f"{where}: unknown learn list {str(lid)[:20]}")
        name, flds = g.p.learn_lists[lid]
        if lid not in g.digests:
            g.digests[lid] = DigestSpec(lid, name, [(fn, s, g.lay.widths[s]) for fn, s in flds])
        return [f"emit_digest_{lid}(st);"]
    if op == "count":
        _nargs(op, args, 2, where)
        c = counter_spec(g, _named(args, 0, where), where)
        idx = ex.c(args[1], where)
        i = ex.fresh("i")
        return ex.take_pre() + ["{", f"    __u64 {i} = {idx};",
                                f"    if ({i} < {c.size}) {{",
                                f"        __u32 k32 = (__u32){i};",
                                f"        struct counter_val *cv = bpf_map_lookup_elem("
                                f"&{c.cname}, &k32);",
                                "        if (cv) {", "            cv->packets += 1;",
                                f"            cv->bytes += st->f[{g.sm('packet_length')}];",
                                "        }", "    }", "}"]
    if op == "register_read":
        _nargs(op, args, 3, where)
        r = register_spec(g, _named(args, 1, where), where)
        dst = ex.lvalue(args[0], where)
        idx = ex.c(args[2], where)
        pre = ex.take_pre()
        i = ex.fresh("i")
        n = limbs(r.width)
        word, w, _ = dst
        nd = limbs(w)
        top = w - 64 * (nd - 1)
        stores = []
        for k in range(nd):
            src = f"rv[{k}]" if k < n else "0"
            mask = f" & {lit((1 << top) - 1)}" if k == nd - 1 and top < 64 else ""
            stores.append(f"        st->f[{word} + {k}] = {src}{mask};")
        return pre + ["{", f"    __u64 {i} = {idx};", f"    if ({i} < {r.size}) {{",
                      f"        __u32 k32 = (__u32){i};",
                      f"        __u64 *rv = bpf_map_lookup_elem(&{r.cname}, &k32);",
                      "        if (rv) {"] + ["    " + s for s in stores] + [
                      "        }", "    }", "}"]
    if op == "register_write":
        _nargs(op, args, 3, where)
        r = register_spec(g, _named(args, 0, where), where)
        idx = ex.c(args[1], where)
        n = limbs(r.width)
        vals = ex.limbs(args[2], n, where)
        pre = ex.take_pre()
        i = ex.fresh("i")
        top = r.width - 64 * (n - 1)
        stores = []
        for k in range(n):
            mask = f" & {lit((1 << top) - 1)}" if k == n - 1 and top < 64 else ""
            stores.append(f"            rv[{k}] = ({vals[k]}){mask};")
        return pre + ["{", f"    __u64 {i} = {idx};", f"    if ({i} < {r.size}) {{",
                      f"        __u32 k32 = (__u32){i};",
                      f"        __u64 *rv = bpf_map_lookup_elem(&{r.cname}, &k32);",
                      "        if (rv) {"] + stores + ["        }", "    }", "}"]
    if op == "modify_field_with_hash_based_offset":
        _nargs(op, args, 4, where)
        fn = hash_fn(g, _named(args, 2, where), where)
        dst = ex.lvalue(args[0], where)
        base = ex.c(args[1], where)
        size = ex.c(args[3], where)
        pre = ex.take_pre()
        hv, m = ex.fresh("h"), ex.fresh("m")
        return pre + ["{", f"    __u64 {hv} = {fn}(st);", f"    __u64 {m} = {size};"] + indent(
            ex.store(dst, CSrc(f"({base} + ({m} ? {hv} % {m} : {hv}))"), where)) + ["}"]
    raise XdpUnsupported(f"the primitive {op[:40]!r}", where)


def _assign_header(g: Gen, args: list, where: str) -> list[str]:
    ex = g.ex
    d: HdrRef = ex.header(args[0], where)
    s: HdrRef = ex.header(args[1], where)
    if d.h.type_name != s.h.type_name:
        raise PipelineLoadError(f"{where}: assign_header between different header types")
    n = d.nwords
    return ex.take_pre() + [f"if ({s.valid}) {{"] + [
        f"    st->f[{d.word} + {i}] = st->f[{s.word} + {i}];" for i in range(n)] + [
        "} else {", f"    {d.valid} = 0;", "}"]


def _push_pop(g: Gen, op: str, args: list, where: str) -> list[str]:
    _nargs(op, args, 2, where)
    if isinstance(args[0], dict) and args[0].get("type") == "header_union_stack":
        raise XdpUnsupported("header unions", where)
    st = g.lay.stack(_named(args, 0, where))
    sw = g.w.stacks[st.name]
    cnt = args[1]
    if not (isinstance(cnt, dict) and cnt.get("type") == "hexstr"):
        raise XdpUnsupported(f"{op} with a run-time count", where)
    count = hexint(cnt.get("value"), where)
    if count < 0:
        raise PipelineLoadError(f"{where}: {op} count is negative")
    size, stride = sw.size, sw.stride
    valid = stride - 1
    out = []
    if op == "push":
        for i in range(size - 1, -1, -1):
            b = sw.base + i * stride
            if i >= count:
                s = sw.base + (i - count) * stride
                out += [f"st->f[{b + k}] = st->f[{s + k}];" for k in range(stride)]
            else:
                out.append(f"st->f[{b + valid}] = 0;")
        nw = sw.next_word
        out.append(f"st->f[{nw}] = st->f[{nw}] + {count} > {size} ? {size} : "
                   f"st->f[{nw}] + {count};")
        # the written elements move up by count
        out.append(f"st->hw[{sw.index}] = st->hw[{sw.index}] + {count} > {size} ? {size} : "
                   f"st->hw[{sw.index}] + {count};")
    else:
        for i in range(size):
            b = sw.base + i * stride
            if i + count < size:
                s = sw.base + (i + count) * stride
                out += [f"st->f[{b + k}] = st->f[{s + k}];" for k in range(stride)]
            else:
                out.append(f"st->f[{b + valid}] = 0;")
        nw = sw.next_word
        out.append(f"st->f[{nw}] = st->f[{nw}] > {count} ? st->f[{nw}] - {count} : 0;")
    return out
