"""What Paperclip's recovery policies share: :class:`PortPolicy`, a policy through the port."""

from paperclip_recovery_kit.policy import PortPolicy, port_of

__version__ = "0.1.0"

__all__ = ["PortPolicy", "__version__", "port_of"]
