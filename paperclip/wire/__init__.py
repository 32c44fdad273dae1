"""The runner protocol's messages and the server-owned tool catalog: what crosses the wire.

A leaf: the control plane, the runner and the benchmarks import it, and it
imports nothing of Paperclip.
"""
