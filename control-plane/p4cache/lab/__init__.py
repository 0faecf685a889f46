"""The p4cache lab: namespaces, veths, softnic, memcached, agents and controller on one machine."""

from p4cache.lab.lab import Host, Lab, LabSpec

__all__ = ["Host", "Lab", "LabSpec"]
