"""Runner connections on this replica, the messages they bring, and the leases they carry.

- ``runners``: ``hello``, resume, adoption of a runner's runs, the link's life;
- ``inbox``: a runner's messages, in order, a batch at a time;
- ``lease_keeper``: the leases of the runs this replica controls, renewed; runs nobody
  came back for, ended.

Imports: calls, costs, endings, links, logs, loop, ownership, recovery, turns, workspaces
"""
