"""The domains: one package per bounded context, each with its services (rules and
transactions), its routes, its request and response bodies and, where it has one, its
command group (``cli``: it talks to the API over HTTP).

From the ground up, each domain imports only domains on the lines above it (each
package's docstring names them in its ``Imports:`` line; ``tests/meta/test_domains.py``
holds every module to it). Below them all stand ``paperclip/common`` and ``paperclip/http``;
above them the engine, the composition root and the app.
"""
