"""An issue's worktree as people see it: its state, its diff, the merge a person asks
for (``merges``: the value and the port the engine fills).

Imports: companies, issues
"""
