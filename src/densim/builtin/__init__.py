"""Scenarios shipped inside the package (the demo runs with no external data)."""

from importlib import resources
from pathlib import Path


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("densim") / "builtin" / name))
