"""CLI command modules; each defines ``register(app)`` and is named in ``densim.cli.main.COMMAND_MODULES`` (imported when its command is asked for)."""
