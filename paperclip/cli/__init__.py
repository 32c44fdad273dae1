"""The ``paperclip`` command."""
