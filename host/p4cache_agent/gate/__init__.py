"""The TCP write gate in front of memcached.

- requests.py  — the request framer: a client's bytes cut into command lines and data blocks
  exactly where memcached 1.6.18 cuts them (commands.py says what each line does, cparse.py
  reads tokens and numbers as memcached's C code does);
- responses.py — the response framer: memcached's replies cut into one response per command;
- policy.py    — which invalidations a command needs before it may reach memcached;
- proxy.py     — the asyncio relay that ties them together, one upstream connection per client.
"""
