"""The OpenDC reader's Arrow -> numpy conversion (``numpy_of``) reads fixed-width numbers and booleans from their
buffers, so that reading a trace does not import pandas (pyarrow's ``to_numpy`` and ``pa.array`` do, about
0.4 s of a cold process). It must give exactly what ``to_numpy`` gives, also for sliced arrays (an offset
into the buffer), booleans (bit-packed, offset not a multiple of 8), several chunks and nulls (fallback)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from densim.workloads.readers.opendc import numpy_of

TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64(), pa.timestamp("ms"),
         pa.duration("s"), pa.bool_()]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TYPES), st.lists(st.integers(-100, 100), min_size=0, max_size=40),
       st.integers(0, 20), st.integers(0, 20), st.booleans())
def test_np_equals_to_numpy(t, values, off, length, chunked):
    arr = pa.array([bool(v % 2) for v in values] if t == pa.bool_() else [abs(v) if pa.types.is_unsigned_integer(t) else v
                                                                           for v in values], type=t)
    arr = arr.slice(min(off, len(arr)), length)
    col = pa.chunked_array([arr, arr]) if chunked else arr
    want = col.to_numpy(zero_copy_only=False) if isinstance(col, pa.Array) else col.to_numpy()
    got = numpy_of(col)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):  # numpy_of gives the int64 ticks
        want = want.view(np.int64)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_nulls_fall_back_to_arrow():
    got = numpy_of(pa.array([1.0, None, 3.0]))
    assert np.isnan(got[1]) and got[0] == 1.0 and got[2] == 3.0


def test_reading_an_opendc_trace_does_not_import_pandas(traces):
    code = ("import sys; from densim.workloads.readers.opendc import read_opendc_tasks; "
            f"read_opendc_tasks({str(traces / 'opendc-1k-tasks')!r}, require_capacity=False); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
