"""numba's ``njit`` when available; otherwise the plain Python function (slow but identical).

Importing this module initialises numba's CPU target once (see :func:`_init_target`): every kernel
in densim is compiled with ``cache=True``, so a run loads machine code from ``__pycache__``; what
remains of numba's start-up is its own import and this initialisation.
"""

from __future__ import annotations


def _init_target() -> None:
    """Load numba's CPU target registries without importing scipy.linalg.

    numba's ``numba.np.arraymath`` imports ``scipy.linalg.cython_blas`` when it is first loaded,
    only to decide whether ``np.dot`` on 1-D arrays may call BLAS (``_HAVE_BLAS``); importing
    scipy.linalg costs 0.1-0.25 s of every run's start-up here. No densim kernel uses ``np.dot`` or
    ``np.linalg``, so the registries are loaded while ``sys.modules["scipy.linalg"]`` is None
    (``_HAVE_BLAS`` is then False: a 1-D ``np.dot`` inside a kernel would use numba's own loop);
    the entry is removed afterwards, so scipy.linalg imports normally for whoever needs it, and a
    kernel that calls ``np.linalg`` still finds LAPACK when it is compiled.
    """
    import sys

    from numba.core.registry import cpu_target

    hide = "scipy.linalg" not in sys.modules
    if hide:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]
    try:
        cpu_target.target_context.refresh()
    finally:
        if hide and sys.modules.get("scipy.linalg", 0) is None:
            del sys.modules["scipy.linalg"]


try:  # pragma: no cover - depends on the environment
    import numba as _numba
    from numba import njit as _njit
    from numba import prange

    _init_target()

    def njit(fn=None, *, parallel: bool = False, inline: str = "never", error_model: str = "python",
             refcount: bool = True):
        """``numba.njit(cache=True, nogil=True)``; ``@njit`` or ``@njit(parallel=True)`` / ``inline="always"``.

        ``error_model="numpy"``: a float division by zero gives inf or nan as in numpy instead of
        raising, which spares the check and the exception path at every division.

        ``refcount=False`` (numba's ``_nrt=False``): the function only borrows the arrays it is given
        and emits no reference counting. numba increments and decrements an array's count each time
        the array is bound to a name, so a function called per event with twenty arrays (and the
        ``inline="always"`` helpers inlined into it) pays forty atomic operations per call: in the
        placement event loop that was three quarters of its time. Only for a function that
        allocates no array (numba then refuses to compile it) and returns none (its caller would
        release a reference it never got): it mutates the arrays it is given and returns scalars.
        """
        def deco(f):
            opts = {} if refcount else {"_nrt": False}
            return _njit(cache=True, nogil=True, parallel=parallel, inline=inline, error_model=error_model, **opts)(f)

        return deco(fn) if fn is not None else deco

    def set_threads(n: int | None) -> int:
        """Threads for parallel kernels (None: all numba may use); returns the previous number."""
        prev = _numba.get_num_threads()
        _numba.set_num_threads(_numba.config.NUMBA_NUM_THREADS if n is None else max(1, min(int(n), _numba.config.NUMBA_NUM_THREADS)))
        return prev

    def get_num_threads() -> int:
        """Threads the parallel kernels use now."""
        return _numba.get_num_threads()

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    prange = range

    def njit(fn=None, *, parallel: bool = False, inline: str = "never", error_model: str = "python",
             refcount: bool = True):
        return fn if fn is not None else (lambda f: f)

    def set_threads(n: int | None) -> int:
        return 1

    def get_num_threads() -> int:
        return 1

    HAVE_NUMBA = False


def load_cached(dispatcher) -> int:
    """Load the machine code numba's cache holds for ``dispatcher`` on this machine; returns how many overloads.

    Every signature the cache index lists for this machine is loaded as its first call would load
    it, so that a later call finds it loaded (a listed signature whose cache file has gone would be
    compiled, as that first call would compile it). This reads numba's cache index (``Dispatcher._cache``, numba internals): on a
    numba without them, or without numba, it loads nothing and returns 0 (the first call then loads
    as before). :mod:`densim.engine.preload` calls it in a background thread.
    """
    try:
        index = dispatcher._cache._cache_file._load_index()
        magic = dispatcher.targetctx.codegen().magic_tuple()
    except Exception:  # noqa: BLE001 - another numba, or a plain function
        return 0
    n = 0
    for key in list(index):
        sig = key[0]
        if key[1] != magic or tuple(sig) in dispatcher.overloads:
            continue
        dispatcher.compile(tuple(sig))
        n += 1
    return n


@njit
def _touch_pages(flat, step):
    """Write a zero every ``step`` bytes of ``flat`` (a uint8 view): the OS maps (and zeroes) each page."""
    for i in range(0, flat.size, step):
        flat[i] = 0


class Prefaulted:
    """A new C-ordered array whose memory the OS maps in a background thread; :meth:`get` hands it over.

    A fresh array's pages are mapped and zeroed by the OS on their first write (here about 0.1 s a GB
    with huge pages, more without). A kernel that writes a large output array pays that inside its
    own run; allocating the output while the run still has serial work to do (numpy and Python set-up
    on one core) and touching one byte a page in a thread that holds no GIL (a numba ``nogil``
    kernel) moves the cost to the other core. The array is touched in ``PARTS`` parts, each claimed
    by one thread: the background thread takes them from the first, :meth:`get` from the last until
    none is left, so a caller that comes early shares the work instead of waiting for it. The array's
    contents are undefined, as ``np.empty``'s.
    """

    PAGE = 4096
    PARTS = 32

    def __init__(self, shape, dtype) -> None:
        import threading

        import numpy as np

        self._array = np.empty(shape, dtype)
        self._thread = None
        if HAVE_NUMBA and self._array.nbytes >= 1 << 20:
            flat = self._array.reshape(-1).view(np.uint8)
            size = -(-flat.size // self.PARTS)
            self._parts = [flat[i:i + size] for i in range(0, flat.size, size)]
            self._next = [0, len(self._parts)]  # parts [next[0], next[1]) are not yet claimed
            self._lock = threading.Lock()
            self._thread = threading.Thread(target=self._touch, args=(0,), name="densim-prefault", daemon=True)
            self._thread.start()

    def _claim(self, end: int):
        with self._lock:
            lo, hi = self._next
            if lo >= hi:
                return None
            if end == 0:
                self._next[0] = lo + 1
                return self._parts[lo]
            self._next[1] = hi - 1
            return self._parts[hi - 1]

    def _touch(self, end: int) -> None:
        while (part := self._claim(end)) is not None:
            _touch_pages(part, self.PAGE)

    def get(self):
        """The array, once every page of it is mapped (touching the parts still left meanwhile)."""
        if self._thread is not None:
            self._touch(1)
            self._thread.join()
            self._thread = None
        return self._array
