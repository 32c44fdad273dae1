"""What Paperclip's provider plugins share for their fakes and tests.

- :mod:`paperclip_provider_kit.mcp_client`: lists and calls a run's tools over
  MCP streamable HTTP, as OpenCode, Pi's extension and a gateway do; the fake
  providers use it, so their tool traffic is the real protocol.
- :mod:`paperclip_provider_kit.usage`: a fake's scripted usage, what each
  of its responses says it used.
- :mod:`paperclip_provider_kit.testing` and :mod:`paperclip_provider_kit.fixtures`
  (extra ``testing``): a fake's script folder, a turn's event sink, and pytest
  fixtures for a real MCP tool server on loopback.
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
