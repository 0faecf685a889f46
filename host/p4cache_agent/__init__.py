"""p4cache host agent: the TCP write gate in front of memcached and the switch's invalidation
client (the gate lives in p4cache_agent.gate)."""
