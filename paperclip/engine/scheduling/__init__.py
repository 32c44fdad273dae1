"""What starts work: wakes become runs, routine slots become wakes.

- ``scheduler``: committed wakes claimed (``SKIP LOCKED``), their runs created, queued
  turns of lost runs resumed, ``start_turn`` sent;
- ``routines``: due cron slots fired, queued executions started, heartbeats beaten.

Imports: context, costs, links, logs, loop, ownership, recovery, turns, workspaces
"""
