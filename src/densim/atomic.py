"""Write files so that a crash never leaves a complete-looking partial output."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _process_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp_path)`` then rename the temporary file onto ``path``.

    The file gets the permissions any new file of the process gets (``0o666`` less the umask), not
    the ``0o600`` of the temporary file, so results can be shared as the user's umask allows.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        writer(tmp_path)
        os.chmod(tmp_path, 0o666 & ~_process_umask())
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    return write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def strict_json(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float replaced by ``None`` (strict JSON has neither)."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return strict_json(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """JSON text that strict parsers accept: NaN and infinities become ``null``."""
    return json.dumps(strict_json(obj), allow_nan=False, default=_json_default, **kwargs)


def write_json_atomic(path: str | Path, obj: Any) -> Path:
    return write_text_atomic(path, dumps_strict(obj, indent=2, sort_keys=False) + "\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
