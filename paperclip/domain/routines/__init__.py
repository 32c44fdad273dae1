"""Routines: schedules, webhooks and heartbeats that open issues and wake agents; their
passes and executions, templates and secrets.

Imports: companies, costs, issues, projects, runs
"""
