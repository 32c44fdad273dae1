"""Costs and budgets in the run engine.

- ``usage``: a runner's ``usage`` message recorded once, priced and charged to
  the run's budgets (a spent budget stops the runs it covers), then the
  budget alerts told to plugins;
- ``admission``: whether a claimed wake may start a run (its budgets'
  reservations), and whether a run's next turn may start;
- ``keeper``: held work released once its budgets allow it again (raised, or
  a new month in the company's time zone), on an injectable clock.

The rules themselves are the costs domain's (``budget_ledger``, ``costs``); these
parts tie them to the engine's transactions and loops.

Imports: endings, loop, ownership, turns
"""
