"""Services own transactions and rules; each takes the session factory and an actor."""
