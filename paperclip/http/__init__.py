"""What every route needs and no domain owns: who may call a route (``access``), the error
body, paging parameters and signed cursors, the constrained field types of request bodies
(``fields``).

Imports no domain and no engine.
"""
