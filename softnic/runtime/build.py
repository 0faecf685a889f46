"""Build a :class:`~softnic.runtime.pipeline.Pipeline` from BMv2 JSON (``Switch.load_json``).

Compiles the program (``codegen``), creates a node per table / condition / action call, links
the nodes, installs JSON default and const entries, and refuses a cyclic control graph, so
that everything that can be wrong with a pipeline is found at load time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softnic.runtime.api import ActionCall, MatchKey, PipelineLoadError, SwitchError
from softnic.runtime.codegen import Compiled, compile_program
from softnic.runtime.exprgen import hexint
from softnic.runtime.externs import Meter
from softnic.runtime.gen_control_block import compile_graph, successors
from softnic.runtime.loader import Program, load_program
from softnic.runtime.match_tables import Entry, Table
from softnic.runtime.pipeline import (
    ActionCallNode,
    CondNode,
    FixedActionNode,
    Pipeline,
    TableNode,
    walker,
)


def _successors(n: Any) -> list[Any]:
    return [x for x in successors(n) if x is not None]


def _check_acyclic(pl: Pipeline) -> None:
    """Refuse a control graph with a cycle: a packet would walk it forever under the lock.

    p4c never emits one (P4 controls have no loops), so this only catches hand-made JSON; with
    it, every ingress / egress pass visits each node at most once.
    """
    state: dict[int, int] = {}  # id(node) -> 1 on the DFS path, 2 done
    for root in pl.nodes.values():
        if id(root) in state:
            continue
        stack = [(root, iter(_successors(root)))]
        state[id(root)] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[id(node)] = 2
                stack.pop()
                continue
            mark = state.get(id(nxt))
            if mark == 1:
                raise PipelineLoadError(f"control flow loops back to node '{nxt.name}'")
            if mark is None:
                state[id(nxt)] = 1
                stack.append((nxt, iter(_successors(nxt))))


def _json_entry_key(t: Table, mk_list: Any, where: str) -> list[MatchKey | None]:
    if not isinstance(mk_list, list) or len(mk_list) != len(t.kinds):
        raise PipelineLoadError(f"{where}: match_key does not fit the table key")
    out: list[MatchKey | None] = []
    for kind, mk in zip(t.kinds, mk_list, strict=True):
        if not isinstance(mk, dict):
            raise PipelineLoadError(f"{where}: malformed match_key {mk!r}")
        if kind == "valid":
            out.append(MatchKey(value=1 if mk.get("key") else 0))
        elif kind == "exact":
            out.append(MatchKey(value=hexint(mk.get("key"), where)))
        elif kind == "lpm":
            out.append(MatchKey(value=hexint(mk.get("key"), where),
                                prefix_len=int(mk.get("prefix_length", 0))))
        elif kind in ("ternary", "optional"):
            out.append(MatchKey(value=hexint(mk.get("key"), where),
                                mask=hexint(mk.get("mask", "0x" + "f" * 64), where)))
        elif kind == "range":
            out.append(MatchKey(value=hexint(mk.get("start"), where),
                                high=hexint(mk.get("end"), where)))
    return out


def build_pipeline(j: dict, drop_port: int) -> Pipeline:
    """Load, compile and link one BMv2 JSON; any problem raises PipelineLoadError."""
    prog = load_program(j)
    comp, _, _ = compile_program(prog, drop_port)
    pl = Pipeline(prog, comp)
    # BMv2's egress thread writes drop_port + 1 into egress_spec (truncated to the field
    # width, i.e. 0 for the default 511), so only an egress mark_to_drop drops.
    pl.espec_init = (drop_port + 1) & ((1 << prog.layout.widths[pl.s_espec]) - 1)
    plen = prog.layout.sm["packet_length"]
    pending: list[tuple[Any, dict]] = []
    for pj in j["pipelines"]:
        pname = pj.get("name")
        if pname not in ("ingress", "egress"):
            raise PipelineLoadError(f"unknown pipeline {pname!r} (v1model has ingress/egress)")
        if pj.get("action_profiles"):
            raise PipelineLoadError("action profiles / selectors are not supported by softnic")
        for tj in pj.get("tables") or []:
            node = _build_table(prog, comp, tj, plen)
            if node.name in pl.nodes:
                raise PipelineLoadError(f"duplicate control node name '{node.name}'")
            pl.nodes[node.name] = node
            pl.tables[node.name] = node
            pending.append((node, tj))
        for cj in pj.get("conditionals") or []:
            c = CondNode()
            c.name = cj.get("name")
            c.fn = comp.conditions[c.name]
            pl.nodes[c.name] = c
            pending.append((c, cj))
        for aj in pj.get("action_calls") or []:
            a = ActionCallNode()
            a.name = aj.get("name")
            info = comp.actions.get(aj.get("action_id"))
            if info is None:
                raise PipelineLoadError(f"action call '{a.name}': unknown action id")
            a.fn = info.fn
            pl.nodes[a.name] = a
            pending.append((a, aj))

    def node(name: Any, where: str) -> Any:
        if name is None:
            return None
        if name not in pl.nodes:
            raise PipelineLoadError(f"{where}: unknown next node {name!r}")
        return pl.nodes[name]

    for n, nj in pending:
        where = f"node '{n.name}'"
        if isinstance(n, CondNode):
            n.true_next = node(nj.get("true_next"), where)
            n.false_next = node(nj.get("false_next"), where)
        elif isinstance(n, ActionCallNode):
            n.next = node(nj.get("next_node"), where)
        else:
            _link_table(prog, comp, n, nj, node)
    for pj in j["pipelines"]:
        pl.inits[pj["name"]] = node(pj.get("init_table"), f"pipeline '{pj['name']}'")
    for name in ("ingress", "egress"):
        pl.inits.setdefault(name, None)
    pl.ingress_init = pl.inits["ingress"]
    pl.egress_init = pl.inits["egress"]
    _check_acyclic(pl)
    pl.ingress_fn = (compile_graph(pl.ingress_init, "<softnic-ingress>", comp)
                     or walker(pl.ingress_init))
    pl.egress_fn = compile_graph(pl.egress_init, "<softnic-egress>", comp) or walker(pl.egress_init)
    return pl

def _build_table(prog: Program, comp: Compiled, tj: dict, plen: int) -> TableNode:
    name = tj.get("name")
    where = f"table '{name}'"
    if tj.get("type", "simple") != "simple":
        raise PipelineLoadError(f"{where}: table type {tj.get('type')!r} is not supported")
    kinds = [k.get("match_type") for k in tj.get("key") or []]
    widths = []
    for k in tj.get("key") or []:
        if k.get("match_type") == "valid":
            widths.append(1)
        else:
            widths.append(prog.layout.widths[prog.layout.field_slot(k.get("target"))])
    names = tj.get("actions") or []
    ids = tj.get("action_ids") or []
    if len(names) != len(ids):
        raise PipelineLoadError(f"{where}: 'actions' and 'action_ids' differ in length")
    actions = {}
    for an, aid in zip(names, ids, strict=True):
        if aid not in comp.actions:
            raise PipelineLoadError(f"{where}: unknown action id {aid}")
        actions[an] = comp.actions[aid]
    tup, kint = comp.key_fns[name]
    t = Table(name, kinds, widths, tj.get("match_type", "exact"), tup, kint, actions,
              int(tj.get("max_size", 0) or 0))
    t.with_counters = bool(tj.get("with_counters", False))
    dm = tj.get("direct_meters")
    if dm is not None:
        mj = prog.meters.get(dm)
        if mj is None:
            raise PipelineLoadError(f"{where}: unknown direct meter {dm!r}")
        t.meter_target = prog.layout.field_slot(mj.get("result_target"))
        t.meter_bytes = mj.get("type") == "bytes"
    return TableNode(t, plen)

def _link_table(prog: Program, comp: Compiled, n: TableNode, tj: dict,
                node: Callable[[Any, str], Any]) -> None:
    where = f"table '{n.name}'"
    nt = tj.get("next_tables") or {}
    # As BMv2's P4Objects::init_pipelines reads them: each action of the table goes on to the
    # node next_tables names for it, and to none (the control ends) when it is not named;
    # __HIT__/__MISS__, when present, override that for hits/misses; a miss with no default
    # action goes to __MISS__, else base_default_next. Other keys are never read.
    n.has_hit, n.has_miss = "__HIT__" in nt, "__MISS__" in nt
    n.hit_next = node(nt.get("__HIT__"), where)
    n.miss_next = node(nt.get("__MISS__"), where)
    n.next_by_action = {an: node(nt.get(an), where) for an in n.table.actions}
    n.base_next = n.miss_next if n.has_miss else node(tj.get("base_default_next"), where)
    t = n.table
    de = tj.get("default_entry")
    if isinstance(de, dict):
        aid = de.get("action_id")
        info = comp.actions.get(aid) if isinstance(aid, int) else None
        if info is None:
            raise PipelineLoadError(f"{where}: default action id {aid!r:.40} unknown")
        data = [hexint(x, where) for x in de.get("action_data") or []]
        if len(data) != len(info.param_widths):
            raise PipelineLoadError(f"{where}: default action data does not fit '{info.name}'")
        e = Entry()
        e.aid, e.params, e.fn, e.data = aid, data, info.fn, tuple(data)
        e.next = next_for(n, info.name, hit=False)
        n.default = n.json_default = e
        n.default_const = bool(de.get("action_const", False)) or bool(
            de.get("action_entry_const", False) and "action_data" in de)
    entries = tj.get("entries")
    if entries:
        t.immutable = True
        prios = [int(e.get("priority", 0)) for e in entries if isinstance(e, dict)]
        top = max(prios, default=0) + 1
        for i, ej in enumerate(entries):
            ew = f"{where} entry {i}"
            if not isinstance(ej, dict) or not isinstance(ej.get("action_entry"), dict):
                raise PipelineLoadError(f"{ew}: malformed entry")
            ae = ej["action_entry"]
            info = comp.actions.get(ae.get("action_id"))
            if info is None:
                raise PipelineLoadError(f"{ew}: unknown action id {ae.get('action_id')!r}")
            call = ActionCall(info.name, [hexint(x, ew) for x in ae.get("action_data") or []])
            key = _json_entry_key(t, ej.get("match_key"), ew)
            prio = top - int(ej.get("priority", 0)) if t.mode == "ternary" else 0
            try:
                e = t.make_entry(key, call, prio,
                                 lambda a, n=n: next_for(n, a, hit=True))
                e.is_const = True
                if prog.meters and t.meter_target is not None:
                    e.meter = Meter()
                t.insert(e)
            except SwitchError as err:
                raise PipelineLoadError(f"{ew}: {err}") from err
    if (not t.kinds and not entries and n.default is not None and n.default_const
            and not t.with_counters and t.meter_target is None):
        n.__class__ = FixedActionNode

def next_for(n: TableNode, action: str, hit: bool) -> Any:
    """The node after table ``n`` when it ran ``action`` (on a hit, or as its default action
    on a miss), as BMv2's MatchTableAbstract::get_next_node(_default) choose it."""
    if hit and n.has_hit:
        return n.hit_next
    if not hit and n.has_miss:
        return n.miss_next
    return n.next_by_action.get(action)
