"""``notify_webhook``: a plugin tool whose effect is outside Paperclip (an HTTP POST), with receipts."""

__version__ = "0.1.0"

__all__ = ["__version__"]
