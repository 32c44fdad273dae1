"""What every route needs and no domain owns: who may call a route (``access``), the error
body, paging parameters and signed cursors, the constrained field types of request bodies
(``fields``), the hosts and origins a request may come from (``origins``: the request gate
and the command line's client both ask it).

Imports no domain and no engine.
"""
