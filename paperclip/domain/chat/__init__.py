"""Chat with an agent: conversations, their messages, and the chat turns they start or
steer.

Imports: companies, issues, projects, runs
"""
