"""Database access: the embedded server, the engine, the declarative base, migrations."""
