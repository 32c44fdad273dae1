"""Agents: their providers' configuration and checks, the models they may use, the
provider kinds the plugins offer, and the wakeups people ask of them.

Imports: companies, projects, runs
"""
