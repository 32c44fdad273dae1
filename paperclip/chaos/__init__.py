"""``paperclip chaos``: a cluster of real processes under faults, and the invariants checked after.

The harness starts an embedded PostgreSQL, control-plane replicas and runners
as separate OS processes (runners reach the replicas through a loopback proxy
of ours, so their link can be cut), drives runs through the scripted fake
Codex app-server, injects faults and armed failpoints, and checks from the
database and the API that nothing was lost or done twice. It reaches the
product only from outside: HTTP, SQL, signals and the environment.
"""
