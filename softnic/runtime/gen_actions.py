"""Code generation for actions.

Each action becomes a function ``_act<n>(F, D, S)``: ``F`` the packet's field slots, ``D`` the
action data tuple, ``S`` the :class:`~softnic.runtime.packet.PacketCtx`. Primitives compile to
inline statements (one generator each, in ``primitives``); an action with ``_jump`` /
``_jump_if_zero`` (p4c's lowering of conditionals in actions) becomes a small program-counter
loop.

Jumps are bounded by construction: a target must be a load-time constant pointing strictly
forward (p4c emits nothing else), so the program counter only grows and an action runs each of
its primitives at most once. A backward jump would loop forever while the switch lock is held
(BMv2 would hang the same way); softnic refuses it at load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.gen_base import GenContext, _ind
from softnic.runtime.primitives import emit


@dataclass
class ActionInfo:
    name: str
    aid: int
    fn: Callable
    param_widths: list[int]
    primitives: list[str]  # one trace line per primitive call
    # the function's source (gen_control_block inlines it)
    body: list[str] = field(default_factory=list)

    @property
    def can_exit(self) -> bool:
        return "S.exited = True" in self.body



class ActionGen:
    """Actions: straight-line primitives, or a forward-only program-counter loop."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    @staticmethod
    def primitive_label(p: Any) -> str:
        si = p.get("source_info") if isinstance(p, dict) else None
        if isinstance(si, dict) and isinstance(si.get("source_fragment"), str):
            return f"Primitive {si['source_fragment']}"
        return f"Primitive {p.get('op') if isinstance(p, dict) else '?'}"

    def jump_target(self, p: dict, i: int, n: int, where: str) -> int:
        """The constant, forward target of the jump at index ``i`` of ``n`` primitives."""
        params = p.get("parameters")
        want = 1 if p.get("op") == "_jump" else 2
        if not isinstance(params, list) or len(params) != want:
            raise PipelineLoadError(f"{where}: {p.get('op')} takes {want} parameter(s)")
        tgt = params[-1]
        if not isinstance(tgt, dict) or tgt.get("type") != "hexstr":
            raise PipelineLoadError(f"{where}: jump target must be a constant (hexstr)")
        pc = hexint(tgt.get("value"), where)
        if not i < pc <= n:
            raise PipelineLoadError(
                f"{where}: primitive {i} jumps to {pc}: only forward jumps inside the action "
                f"(to {i + 1}..{n}) are supported; a backward jump would loop forever")
        return pc

    def action(self, a: dict) -> ActionInfo:
        ctx = self.ctx
        name = a["name"]
        rd = a.get("runtime_data") or []
        ctx.eg.nparams = len(rd)
        ctx.eg.param_widths = [r["bitwidth"] for r in rd]
        prims = a["primitives"]
        fname = ctx.fresh("act")
        where = f"action {name!r}"
        jumps = any(isinstance(p, dict) and p.get("op") in ("_jump", "_jump_if_zero")
                    for p in prims)
        body: list[str] = []
        if not jumps:
            for p in prims:
                body += emit(ctx, p, where)
        else:
            n = len(prims)
            body += ["pc = 0", f"while pc < {n}:"]
            for i, p in enumerate(prims):
                op = p.get("op") if isinstance(p, dict) else None
                body.append(f"    if pc == {i}:")
                if op == "_jump":
                    body += [f"        pc = {self.jump_target(p, i, n, where)}", "        continue"]
                elif op == "_jump_if_zero":
                    tgt = self.jump_target(p, i, n, where)
                    c = ctx.eg.data(p["parameters"][0], where)
                    body += [f"        if ({c}) == 0:", f"            pc = {tgt}",
                             "            continue"]
                else:
                    body += _ind(emit(ctx, p, where), 2)
                body += [f"        pc = {i + 1}"]
        ctx.eg.nparams = None
        ctx.eg.param_widths = []
        if not body:
            body = ["pass"]
        ctx.src += [f"def {fname}(F, D, S):"] + _ind(body) + [""]
        labels = [self.primitive_label(p) for p in prims]
        return ActionInfo(name, a["id"], fname, [r["bitwidth"] for r in rd],  # type: ignore[arg-type]
                          labels, body)
