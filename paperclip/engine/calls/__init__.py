"""The tool-call pipeline: admit -> execute -> settle, one path for every call.

- ``pipeline``: a runner's batch of calls journaled, executed, settled, answered;
- ``executor``: core tools run inside the controller's fenced transaction;
- ``plugin_calls``: plugin tools, run outside it (their effect is outside our database);
- ``callbacks``: this process's bounded memory of the callbacks it runs or saw fail.

Imports: links, logs, ownership, tools
"""
