"""The shared runtime base of Paperclip's provider plugins, and what their fakes and tests share.

A provider package holds what is its CLI's own (its protocol, its driver, its
fake); what every provider needs lives here once:

- :mod:`~paperclip_provider_kit.probe`: ``paperclip doctor``'s look at a CLI.
- :mod:`~paperclip_provider_kit.errors`: the machine-readable codes of a failed turn.
- :mod:`~paperclip_provider_kit.config` and :mod:`~paperclip_provider_kit.schema`:
  the checks and JSON Schema pieces of an agent's provider config.
- :mod:`~paperclip_provider_kit.reports`: a turn's usage, reported once per response.
- :mod:`~paperclip_provider_kit.process`: a CLI's process group, described and stopped.
- :mod:`~paperclip_provider_kit.registration`: a provider kind, with what the
  running hook API knows.
- :mod:`~paperclip_provider_kit.http` (extra ``http``): a small HTTP server on uvicorn.

For fakes and tests:

- :mod:`~paperclip_provider_kit.script` and :mod:`~paperclip_provider_kit.usage`:
  a fake's scripts and their scripted usage.
- :mod:`~paperclip_provider_kit.mcp_client` (extra ``fake``): a run's tools over
  MCP streamable HTTP, as the real CLIs reach them.
- :mod:`~paperclip_provider_kit.testing` and :mod:`~paperclip_provider_kit.fixtures`
  (extra ``testing``): a fake's script folder, a turn's event sink, drivers on
  the fake and the turns every driver is tried with (``testing.turns``), the
  conformance scenario of a fake against its real CLI (``testing.conformance``),
  and pytest fixtures for a real MCP tool server on loopback.
"""

__version__ = "0.4.0"

__all__ = ["__version__"]
