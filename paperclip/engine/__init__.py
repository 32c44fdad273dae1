"""The run engine, control-plane side: wakes to runs, controllers and their fences, the tool journal.

Each part is a package (or, for ``engine`` and ``loop``, a module) of its own.
Its docstring says what it owns and ends with one line naming the parts it may
import, ``Imports: a, b`` (or ``Imports: none``), which a continuation line may
carry on; ``tests/meta/test_engine_parts.py`` holds every module to it.
"""
