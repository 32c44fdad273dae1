"""The unread-steers recovery policy: acknowledged steers a restart lost are delivered once."""

__version__ = "0.1.0"

__all__ = ["__version__"]
