"""The runner's git workspaces: one worktree per issue, made from a repository its host allows.

Everything here runs git on the runner host and nothing else: the policy
(:mod:`.policy`), the one way git is run (:mod:`.git`), the worktrees
(:mod:`.worktrees`), their work product (:mod:`.report`), their release
(:mod:`.release`) and the disk they use (:mod:`.disk`).
"""
