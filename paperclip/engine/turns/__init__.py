"""A run's turns, and what a person sends into a live one.

- ``lifecycle``: a turn opened, started, ended, lost (in the caller's fenced transaction);
- ``steering``: a person's steer, sent into the live turn exactly once;
- ``unread_steers``: the steers a restart continuation carries (acknowledged, never read);
- ``starts``: the ``start_turn`` of a later turn (a continuation, a retry, a report nudge).

Imports: links, logs, workspaces
"""
