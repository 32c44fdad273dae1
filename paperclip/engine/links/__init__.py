"""One connected runner as this replica sees it: frames in and out, ordered sending, the gate.

- ``transport``: the engine's view of a connection (receive, send, close);
- ``link``: ordered sending from the outbox, acknowledgements, the saved position;
- ``gate``: whether a message is about a run this replica controls, and what to do when not;
- ``runner_offers``: what each runner said it offers, kept on its row.

Imports: logs, ownership
"""
