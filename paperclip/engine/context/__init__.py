"""What a run is given and judged against, read from the rows it stands on.

- ``prompt``: the execution input, assembled through the prompt-rendering hooks;
- ``snapshot``: the wake snapshot (the exact comments a run was woken for), its pages;
- ``run_view``: the read-only view of a run that guards and presentation decisions see;
- ``completion``: the completion guards' question, asked at ``finish`` and after the turn.

Imports: none
"""
