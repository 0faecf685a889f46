"""Workload clients: memcached traffic that records what it saw, for the checker and benchmarks."""
