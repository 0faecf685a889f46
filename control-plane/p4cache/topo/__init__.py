"""Topologies in the p4lang/tutorials topology.json style (hosts, switches, links) for p4cache."""

from p4cache.topo.topology import (
    Host,
    Link,
    MemcachedPorts,
    Switch,
    Topology,
    TopologyError,
    load,
)

__all__ = ["Host", "Link", "MemcachedPorts", "Switch", "Topology", "TopologyError", "load"]
