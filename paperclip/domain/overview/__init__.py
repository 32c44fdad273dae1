"""The overview people start from: the inbox (what waits on them) and the dashboard
(what runs, what it costs, who is loaded).

Imports: companies, holds, issues, runs
"""
