"""The engine's append-only logs, one statement per append, and their retention.

- ``events``: a run's event log (gap-free ``seq``, replays dropped by source);
- ``outbox``: the control plane's outbox to each runner, replayable by any replica;
- ``journal``: the tool journal (admission before dispatch, the result before returning);
- ``retention``: history past its retention, removed in small batches.

Imports: none
"""
