"""A real RVTools export for the tests, fetched by commit, never committed here.

``samples/SizingWorkshop-RVTools.xlsx`` of https://github.com/mjvincent/rvtools-to-ibm-cloud (MIT licence) is a real,
anonymised RVTools export (ESXi 6.0 hosts): vInfo with 805 VM rows (763 powered on, 32 powered off, 10 templates)
and 2,698 blank formatted rows under them, 34 vHost hosts, vNetwork and vPartition tabs. It has no vCPU tab and no
readiness column, so it exercises the reader on a real file but cannot check CPU Ready.

The project keeps data from other repositories out of its own history: put the file at
``../shared/traces/rvtools-sizingworkshop/SizingWorkshop-RVTools.xlsx`` beside the repository (the tests skip
without it), e.g. with ``python -m tests.planning.rvtools_sizingworkshop DEST.xlsx``, which downloads it at the
pinned commit and checks its SHA-256.
"""

from __future__ import annotations

import hashlib
import sys
import urllib.request
from pathlib import Path

REPO = "mjvincent/rvtools-to-ibm-cloud"
COMMIT = "0fd7e8dbfb94a4ac3796943e0cbf16910260adc0"
PATH = "samples/SizingWorkshop-RVTools.xlsx"
URL = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/{PATH}"
SHA256 = "bad170c06c8af3b0cd331d464605f382c41827c705838aaa7c0c07fbcc619f99"
SIZE = 323115


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def download(dest: Path) -> Path:
    """The file at the pinned commit, refused unless its SHA-256 is the pinned one."""
    with urllib.request.urlopen(URL, timeout=60) as r:  # noqa: S310 - a fixed https URL
        data = r.read()
    if hashlib.sha256(data).hexdigest() != SHA256:
        raise SystemExit(f"{URL}: SHA-256 {hashlib.sha256(data).hexdigest()} is not the pinned {SHA256}")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return dest


if __name__ == "__main__":
    print(download(Path(sys.argv[1])))
