"""The end of a turn and of a run: the terminal guard, one status decision, the presentation.

- ``turn_end``: a turn's end processed in two transactions, a run finished exactly once;
- ``plain_end``: the common end (a failed turn, an accepted report) in two plain statements;
- ``nudge``: a turn that completed without the run's report asked for it in its session;
- ``presentation``: a succeeded run's answer presented once (live, or by recovery);
- ``drain``: a session closes only when every admitted input has a saved result.

Imports: context, links, logs, ownership, turns, workspaces
"""
