"""Support code of the p4cache PTF suite: a P4Runtime client, the base test class and
topology, and a real memcached for reference answers. ptf-tests/run.sh puts this directory on
PTF's path (``--pypath ptf-tests/lib``)."""
