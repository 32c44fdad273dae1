"""What every domain stands on: who is acting (``actor``), the activity log, company-scoped
queries and pages, server secrets, instance figures.

Imports no domain, no HTTP and no engine.
"""
