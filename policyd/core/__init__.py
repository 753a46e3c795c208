"""The pure core: no I/O (no files, sockets, subprocesses, env, clock or logging)."""
