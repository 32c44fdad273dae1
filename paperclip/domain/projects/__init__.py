"""Projects: the code an issue is worked on, its sources (a repository, a folder) and
how its worktrees are made and merged.

Imports: companies
"""
