"""``densim serve``: a local web application for what-if questions.

The page edits a few fields of a scenario (the same fields as the YAML), the server validates the
edited mapping through the loader ``densim run`` uses, runs the engine in a background worker and
caches every result by the hash of the resolved scenario.

* :mod:`.sources`: what the page can start from (the given scenario, built-in examples, sweep studies);
* :mod:`.edits`: the controls and how their values go into the scenario mapping;
* :mod:`.runs`: the worker, the cache and cancellation of superseded runs;
* :mod:`.view`: headline, plots and tables of a result as plain data;
* :mod:`.app`: the FastAPI application (created by :func:`create_app`).
"""

from __future__ import annotations

__all__ = ["create_app"]


def create_app(*args, **kwargs):
    from densim.tools.serve.app import create_app as _create

    return _create(*args, **kwargs)
