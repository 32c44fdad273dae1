"""API keys: issued, listed and revoked per company; who holds a key, kept warm in each
replica (``key_cache``).

Imports: companies
"""
