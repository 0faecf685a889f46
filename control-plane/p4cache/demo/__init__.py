"""`make run`'s job (`p4cache run`): a running p4cache, a data set, a skewed workload from every
client host, and a report of what the switch did, checked for coherence.

    client.py   one recording client process (runs inside a client host)
    job.py      load the data set, run the clients, watch the controller, collect
    report.py   the numbers (hit share, per-server load, latencies, verdict) and their rendering
"""
