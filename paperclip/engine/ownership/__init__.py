"""Who controls a run: this replica's owned runs, the controller lease, the epoch fence.

- ``owned_runs``: the runs this replica controls, their epochs and verified tokens
  (the one piece of in-process state the engine's parts share);
- ``leases``: adopting (the one place the epoch moves), renewing, releasing;
- ``fence``: the epoch check every controller write passes, under the run's row lock;
- ``fenced_tx``: a batch's transaction, its runs locked and fenced first.

Imports: none
"""
