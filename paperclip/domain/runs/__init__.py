"""Runs and what starts them: wakes (coalesced, deduplicated), the runs' reads and the
actions a person takes on one (cancel, retry, dismiss), run tokens, runners and their
keys, the live state people see, the steer a person sends (``steers``: the value and
the port the engine fills).

Imports: companies, costs, keys
"""
