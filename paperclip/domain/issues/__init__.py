"""Issues and their comments: numbers allocated by the database, reads by id or
identifier, the comment thread and the wakes comments and assignments make.

Imports: companies, projects, runs
"""
