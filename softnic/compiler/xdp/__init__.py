"""softnic's xdp back end: BMv2 JSON (+ P4Info names) -> eBPF C for XDP (docs/xdp.md)."""
