"""CLI command modules; each defines ``register(app)`` and is discovered automatically."""
