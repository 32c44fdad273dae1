"""What starts work: wakes become runs, routine slots become wakes.

- ``scheduler``: claim passes when a wake commits (``LISTEN``), queued turns of lost runs
  resumed when one may wait;
- ``wake_claims``: a claim pass, committed wakes made runs, ``start_turn`` sent: the claim
  (``claims``: one statement, ``SKIP LOCKED``) and the runs' write (``new_runs``: one
  statement);
- ``routines``: due cron slots fired, queued executions started, heartbeats beaten.

Imports: context, costs, links, logs, loop, ownership, recovery, turns, workspaces
"""
