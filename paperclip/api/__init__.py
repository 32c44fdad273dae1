"""The HTTP API: controllers translate HTTP to service calls; nothing else lives here."""
