"""The ingress and egress pipelines: BMv2's node graph as straight-line C with labels.

Each table, conditional and action call is a label; a node ends with ``goto`` its successor,
so the C has the graph's shape (p4c emits an acyclic graph; softnic's engine refuses cycles,
and so does this generator). Every value lives in the per-CPU state map, not in registers, so
the verifier's states at a label compare equal and it prunes instead of walking every path.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.xdp.actions import primitive
from softnic.compiler.xdp.context import Gen, indent
from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.expr import lit
from softnic.compiler.xdp.tables import (
    LPM,
    SEARCH,
    ActionSig,
    KeyField,
    TableSpec,
    lpm_order,
    table_kind,
)
from softnic.compiler.xdp.words import limbs
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint

END = "end"


def _action_sig(g: Gen, aid: Any, where: str) -> tuple[ActionSig, dict]:
    a = g.p.actions_by_id.get(aid) if isinstance(aid, int) else None
    if a is None:
        raise PipelineLoadError(f"{where}: unknown action id {str(aid)[:20]}")
    widths = [rd.get("bitwidth", 0) for rd in a.get("runtime_data") or []]
    return ActionSig(aid, a["name"], widths), a


def action_body(g: Gen, sig: ActionSig, a: dict, where: str) -> list[str]:
    offs = sig.words()

    def param(i: Any) -> tuple[int, int]:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(sig.widths):
            raise PipelineLoadError(f"{where}: runtime_data index {str(i)[:20]} out of range")
        return offs[i], sig.widths[i]

    g.ex.param = param
    out = []
    try:
        for prim in a.get("primitives") or []:
            out += primitive(g, prim, f"action '{g.comment(a['name'])}'")
    finally:
        g.ex.param = None
    return out


def action_fn(g: Gen, sig: ActionSig, a: dict, where: str) -> str:
    """The BPF subprogram of action ``sig`` (emitted once): its own 512-byte stack frame, so
    big programs do not run out of stack. Returns 1 when the packet must be dropped."""
    fn = g.action_fns.get(sig.aid)
    if fn is None:
        fn = g.action_fns[sig.aid] = f"act_{sig.aid}"
        body = action_body(g, sig, a, where)
        g.helpers += [f"/* action {g.comment(a['name'])} */",
                      f"static __noinline int {fn}(struct p4_state *st)", "{"] + indent(body) + [
                      "    return 0;", "abort:", "    return 1;", "}", ""]
    return fn


def _const_params(sig: ActionSig, data: Any, where: str) -> list[str]:
    if not isinstance(data, list) or len(data) != len(sig.widths):
        raise PipelineLoadError(f"{where}: action data does not match the action's parameters")
    out = []
    for off, w, v in zip(sig.words(), sig.widths, data, strict=False):
        x = hexint(v, where) & ((1 << w) - 1)
        out += [f"st->ap[{off + i}] = {lit(x >> (64 * i))};" for i in range(limbs(w))]
    return out


class PipelineGen:
    def __init__(self, g: Gen, pl: dict, label_prefix: str) -> None:
        self.g = g
        self.pl = pl
        self.pre = label_prefix
        self.labels: dict[str, str] = {}
        self.nodes: dict[str, tuple[str, dict]] = {}
        for kind in ("tables", "conditionals", "action_calls"):
            for n in pl.get(kind) or []:
                if not isinstance(n, dict) or not isinstance(n.get("name"), str):
                    raise PipelineLoadError(f"malformed {kind} node in '{pl.get('name')}'")
                if n["name"] in self.nodes:
                    raise PipelineLoadError(f"duplicate node name {n['name'][:60]!r}")
                self.nodes[n["name"]] = (kind, n)
                self.labels[n["name"]] = f"{label_prefix}_n{len(self.labels)}"

    def goto(self, name: Any) -> str:
        if name is None:
            return f"goto {self.pre}_{END};"
        if name not in self.labels:
            raise PipelineLoadError(f"unknown next node {str(name)[:60]!r}")
        return f"goto {self.labels[name]};"

    def check_acyclic(self) -> list[str]:
        """Nodes in an order where each comes before its successors (else refuse)."""
        succ: dict[str, list[str]] = {}
        for name, (kind, n) in self.nodes.items():
            nxt = []
            if kind == "conditionals":
                nxt = [n.get("true_next"), n.get("false_next")]
            elif kind == "action_calls":
                nxt = [n.get("next_node")]
            else:
                nxt = list((n.get("next_tables") or {}).values()) + [n.get("base_default_next")]
            succ[name] = [x for x in nxt if isinstance(x, str)]
        order: list[str] = []
        state: dict[str, int] = {}
        for root in self.nodes:
            stack = [(root, iter(succ[root]))]
            if state.get(root):
                continue
            state[root] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    state[node] = 2
                    order.append(node)
                    continue
                if nxt not in self.nodes:
                    raise PipelineLoadError(f"unknown next node {nxt[:60]!r}")
                if state.get(nxt) == 1:
                    raise PipelineLoadError(f"pipeline '{self.pl.get('name')}' has a cycle "
                                            f"through node {nxt[:60]!r}")
                if not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, iter(succ[nxt])))
        return list(reversed(order))

    def gen(self) -> list[str]:
        order = self.check_acyclic()
        init = self.pl.get("init_table")
        out = [self.goto(init)]
        for name in order:
            kind, n = self.nodes[name]
            out.append(f"{self.labels[name]}: /* {self.g.comment(name)} */")
            if kind == "conditionals":
                out += self.conditional(n)
            elif kind == "action_calls":
                sig, a = _action_sig(self.g, n.get("action_id"), f"action call '{name}'")
                out += self.call(sig, a, [], n.get("next_node"), f"action call '{name}'")
            else:
                out += self.table(n)
        out.append(f"{self.pre}_{END}:")
        return out

    def conditional(self, n: dict) -> list[str]:
        ex = self.g.ex
        c = ex.cond(n.get("expression"), f"conditional '{self.g.comment(n['name'])}'")
        pre = ex.take_pre()
        body = [f"if ({c})", "    " + self.goto(n.get("true_next")), self.goto(n.get("false_next"))]
        # a prologue declares temporaries, and a declaration cannot follow a label in C17
        return ["{"] + indent(pre + body) + ["}"] if pre else body

    def call(self, sig: ActionSig, a: dict, params: list[str], nxt: Any, where: str) -> list[str]:
        body = params + [f"if ({action_fn(self.g, sig, a, where)}(st))", "    goto abort;"]
        if self.g.uses_exit:
            body.append(f"if (st->exited) goto {self.pre}_{END};")
        return ["{"] + indent(body) + ["}", self.goto(nxt)]

    def _next(self, n: dict, action: str, hit: bool) -> Any:
        nt = n.get("next_tables") or {}
        if "__HIT__" in nt or "__MISS__" in nt:
            return nt.get("__HIT__" if hit else "__MISS__")
        return nt.get(action, n.get("base_default_next"))

    def table(self, n: dict) -> list[str]:
        g = self.g
        name = n["name"]
        where = f"table '{g.comment(name)}'"
        if n.get("type", "simple") != "simple":
            raise XdpUnsupported("action profiles and selectors", where)
        if n.get("support_timeout"):
            raise XdpUnsupported("idle timeout (support_timeout)", where)
        if n.get("direct_meters"):
            raise XdpUnsupported("direct meters", where)
        keys = n.get("key") or []
        sigs: dict[int, tuple[ActionSig, dict]] = {}
        for aid in n.get("action_ids") or []:
            sigs[aid] = _action_sig(g, aid, where)
        de = n.get("default_entry") or {}
        if not keys and de.get("action_const"):
            # a keyless table with a fixed default action (p4c's tbl_* wrappers): a direct call
            sig, a = _action_sig(g, de.get("action_id"), where)
            return self.call(sig, a, _const_params(sig, de.get("action_data") or [], where),
                             self._next(n, a["name"], False), where)
        kfs: list[KeyField] = []
        kvals: list[tuple[list[str], int]] = []
        ex = g.ex
        pre: list[str] = []
        for k in keys:
            mt = k.get("match_type")
            tgt = k.get("target")
            if mt == "valid":
                h = g.lay.header(tgt if isinstance(tgt, str) else (tgt or [None])[0])
                src, w = [f"st->f[{g.w.of(h.valid_slot)}]"], 1
            else:
                node: Any = {"type": "field", "value": tgt}
                w = g.lay.widths[g.lay.field_slot(tgt)]
                src = ex.limbs(node, limbs(w), where)
                if g.lay.signed[g.lay.field_slot(tgt)]:
                    src = [f"({src[0]} & {lit((1 << w) - 1)})"]
                mask = k.get("mask")
                if mask is not None:
                    m = hexint(mask, where)
                    src = [f"({s} & {lit(m >> (64 * i))})" for i, s in enumerate(src)]
            pre += ex.take_pre()
            kfs.append(KeyField(mt, w))
            kvals.append((src, w))
        kind = table_kind(kfs, where)
        size = n.get("max_size", 1024)
        if not isinstance(size, int) or not 0 < size <= 1 << 20:
            raise PipelineLoadError(f"{where}: max_size {str(size)[:20]} out of range")
        spec = TableSpec(name, g.fresh("tbl_"), kind, kfs, size,
                         {aid: s for aid, (s, _) in sigs.items()})
        spec.param_words = max([s.nwords for s, _ in sigs.values()] + [1])
        g.param_words = max(g.param_words, spec.param_words)
        g.tables[name] = spec
        out = pre + self._key_build(spec, kvals)
        g.key_bytes = max(g.key_bytes, spec.key_size)
        if kind == SEARCH:
            g.search_fns += self._search_fn(spec)
            out += ["st->hit_idx = -1;",
                    f"bpf_loop({size}, search_{spec.cname}, NULL, 0);",
                    "{", "    struct entry_val *v = NULL;",
                    "    if (st->hit_idx >= 0) {",
                    "        __u32 hi = st->hit_idx;",
                    f"        void *e = bpf_map_lookup_elem(&{spec.cname}, &hi);",
                    f"        if (e) v = e + {8 + 3 * 8 * max(1, spec.key_words)};",
                    "    }"]
        else:
            out += ["{", f"    struct entry_val *v = bpf_map_lookup_elem(&{spec.cname}, st->kb);"]
        nparam = spec.param_words
        # direct counter: atomic adds on the entry (only for tables that have one: a locked
        # add costs tens of ns per table)
        count = ["        __sync_fetch_and_add(&v->packets, 1);",
                 f"        __sync_fetch_and_add(&v->bytes, st->f[{g.sm('packet_length')}]);"
                 ] if n.get("with_counters") else []
        out += ["    int hit = v != NULL;",
                "    if (v) {"] + count + [
                "    } else {",
                f"        v = bpf_map_lookup_elem(&{spec.cname}_def, &zero);",
                "        if (!v)",
                f"            goto {self.pre}_{END};",
                "    }",
                "    st->action = v->action;",
                f"    for (int i = 0; i < {nparam}; i++)",
                "        st->ap[i] = v->p[i];",
                "    st->hit = hit;",
                "}",
                "switch (st->action) {"]
        for aid, (sig, a) in sigs.items():
            out.append(f"case {aid}:")
            aw = f"{where} action '{g.comment(a['name'])}'"
            body = [f"if ({action_fn(g, sig, a, aw)}(st))", "    goto abort;"]
            if g.uses_exit:
                body.append(f"if (st->exited) goto {self.pre}_{END};")
            hit_n = self._next(n, a["name"], True)
            miss_n = self._next(n, a["name"], False)
            if hit_n == miss_n:
                body.append(self.goto(hit_n))
            else:
                body += ["if (st->hit)", "    " + self.goto(hit_n), self.goto(miss_n)]
            out += indent(["{"] + indent(body) + ["}"])
        out += ["}", f"goto {self.pre}_{END};"]
        return out

    def _key_build(self, t: TableSpec, kvals: list[tuple[list[str], int]]) -> list[str]:
        if t.kind == LPM:
            out = []
            off = 4
            for i in lpm_order(t):
                src, w = kvals[i]
                nb = (w + 7) // 8
                pad = 8 * nb - w
                for b in range(nb):
                    # byte b (big-endian) of (value << pad)
                    bit = 8 * (nb - 1 - b) - pad  # value bit index of the byte's lowest bit
                    if bit >= 0:
                        li, sh = divmod(bit, 64)
                        e = f"({src[li]} >> {sh})" if sh else src[li]
                        if sh > 56 and li + 1 < len(src):
                            e = f"({e} | ({src[li + 1]} << {64 - sh}))"
                    else:
                        e = f"({src[0]} << {-bit})"
                    out.append(f"st->kb[{off + b}] = (__u8)({e});")
                off += nb
            out.append(f"*(__u32 *)st->kb = {8 * off - 32};")
            return out
        out = []
        word = 0
        search = t.kind == SEARCH
        for src, w in kvals:
            for i in range(limbs(w)):
                s = src[i] if i < len(src) else "0"
                out.append(f"st->kw[{word}] = {s};" if search else
                           f"*(__u64 *)&st->kb[{8 * word}] = {s};")
                word += 1
        return out

    def _search_fn(self, t: TableSpec) -> list[str]:
        """The bpf_loop callback testing entry ``index`` of a SEARCH table (entries are kept
        sorted, highest priority first; the first unused slot ends the search)."""
        kw = max(1, t.key_words)
        conds = []
        word = 0
        for kf in t.keys:
            n = limbs(kf.width)
            if kf.match_type == "range":
                if n > 1:
                    raise XdpUnsupported("a range match on a field wider than 64 bits",
                                         f"table '{self.g.comment(t.name)}'")
                conds.append(f"(st->kw[{word}] >= e[{word}] && st->kw[{word}] <= "
                             f"e[{2 * kw + word}])")
            else:
                for i in range(n):
                    conds.append(f"((st->kw[{word + i}] & e[{kw + word + i}]) == e[{word + i}])")
            word += n
        test = " && ".join(conds) if conds else "1"
        return [f"static long search_{t.cname}(__u32 index, void *unused)", "{",
                "    __u32 zero = 0;",
                "    struct p4_state *st = bpf_map_lookup_elem(&p4_state, &zero);",
                "    if (!st)", "        return 1;",
                f"    __u32 *slot = bpf_map_lookup_elem(&{t.cname}, &index);",
                "    if (!slot || !slot[0])", "        return 1;",
                "    __u64 *e = (__u64 *)(slot + 2);",
                f"    if ({test}) {{", "        st->hit_idx = index;", "        return 1;", "    }",
                "    return 0;", "}", ""]


def pipelines(g: Gen) -> dict[str, list[str]]:
    pls = g.p.json.get("pipelines") or []
    by_name = {pl.get("name"): pl for pl in pls if isinstance(pl, dict)}
    out = {}
    for which in ("ingress", "egress"):
        pl = by_name.get(which)
        if pl is None:
            out[which] = []
            continue
        out[which] = PipelineGen(g, pl, which).gen()
    return out

