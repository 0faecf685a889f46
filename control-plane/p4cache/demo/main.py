"""`p4cache run` (what `make run` runs): bring p4cache up, run the job, report, tear down."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from p4cache.demo import rates as rates_mod
from p4cache.demo import report
from p4cache.demo.job import JobSpec, Target, run_job


def run(*, target: str = "softnic", placement: str = "switch", topo: Path | None = None,
        run_dir: Path | None = None,
        out_dir: Path = Path("build/run"), spec: JobSpec | None = None, slots: int | None = None,
        keep: bool = False, console: Console | None = None, rates: bool = True) -> int:
    from p4cache import system

    console = console or Console()
    spec = spec or JobSpec()
    t0 = time.monotonic()
    console.rule("p4cache run")
    state = system.up(topo_path=topo, target=target, run_dir=run_dir, slots=slots,
                      placement=placement)
    try:
        job_target = Target(
            servers={s.name: (s.ip, s.udp_port) for s in state.servers},
            clients=[c.name for c in state.clients],
            prefix=state.exec_prefix,
            status=state.controller_status,
            log_dir=Path(state.log_dir),
        )
        res = run_job(job_target, spec, out_dir.resolve(), console)
        console.print("[bold]3.[/] checking the history for linearizability (porcupine)")
        summary = report.summarize(res)
        if rates:
            try:
                summary["rates"] = rates_mod.measure(job_target, rates_mod.RatesSpec(), console)
            except (rates_mod.lg.LoadgenError, OSError) as e:
                summary["errors"].append(f"rates: {e}")
        console.rule("result")
        report.render(summary, console)
        if "rates" in summary:
            rates_mod.render(summary["rates"], console)
        json_path, png = report.write(summary, res)
        ok = not summary["errors"] and (summary.get("coherence") or {}).get("linearizable")
        console.rule("where to look next")
        console.print(f"  report       {json_path}" + (f"\n  plot         {png}" if png else ""))
        console.print(f"  history      {res.history} (every operation, for p4cache-lincheck)")
        console.print(f"  logs         {state.log_dir}/ (switch, controller, agents, memcached)")
        console.print("  live system  make run KEEP=1 leaves it up: then `p4cache status`, "
                      "`p4cache exec c1 -- memccat --servers=10.0.0.1:11211 k1`, "
                      "`p4cache down`")
        console.print("  experiments  .venv/bin/p4cache-bench --help (docs/results.md)")
        console.print(f"  took {time.monotonic() - t0:.0f} s")
        return 0 if ok else 1
    finally:
        if keep:
            console.print("[yellow]left running[/] (--keep): `p4cache down` tears it down")
        else:
            system.down(run_dir=run_dir)
            console.print("torn down: no namespaces, interfaces or processes left")
