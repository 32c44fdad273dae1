"""Execution workspaces: the git worktree each issue of a project works in, on one runner host.

- ``placement``: which runner an issue's run goes to (the host holding its
  worktree, once it has one) and the worktree a ``start_turn`` asks for;
- ``reports``: what runners report back (a worktree ready, a turn's work
  product, a worktree released or merged, the disk they use), recorded once;
- ``merges``: a person's merge of an issue's branch into its base branch,
  asked of the runner holding the worktree once, its answer awaited;
- ``keeper``: the lifecycle loop that asks a runner to remove the worktree of
  an issue that ended, once its retention passed.

The runner does the git work (``paperclip/runner/workspaces``); this package
only records and decides; it never imports the runner or the API.

Imports: links, logs, loop
"""
