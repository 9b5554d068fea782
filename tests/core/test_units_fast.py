"""The units converted without pint (densim.units._FAST_FACTORS) give pint's float, bit for bit."""

from __future__ import annotations

import random

import pytest

from densim import units as U


def _numbers() -> list[str]:
    rng = random.Random(19)
    out = ["0", "1", "2", "128", "1000", "0.5", "2.3", "1e3", "1.5e-3", "3.14159", "7.25", "24.0", "100000", "-5", "+2.5",
           ".5", "5.", "1E6"]
    for _ in range(600):
        k = rng.random()
        if k < 0.3:
            out.append(str(rng.randint(0, 10**7)))
        elif k < 0.7:
            out.append(f"{rng.uniform(0, 10 ** rng.randint(0, 6)):.{rng.randint(0, 6)}f}")
        else:
            out.append(f"{rng.uniform(0, 10):.3g}e{rng.randint(-6, 9)}")
    return out


@pytest.mark.parametrize("canonical", sorted(U._FAST_FACTORS))
def test_fast_units_equal_pint(canonical):
    ureg = U._registry()
    for unit in U._FAST_FACTORS[canonical]:
        for n in _numbers():
            for text in (f"{n} {unit}", f"  {n}   {unit} "):
                want = float(ureg.Quantity(text.strip()).to(canonical).magnitude)
                assert U._fast_quantity(text, canonical) == want, (text, canonical)
            assert U._fast_quantity(f"{n}{unit}", canonical) is None  # without a space: pint decides


def test_other_forms_still_go_to_pint():
    assert U._fast_quantity("1,000 MHz", "MHz") is None  # commas: pint's path removes them
    assert U._fast_quantity("2.3 GHz/s", "MHz") is None
    assert U._fast_quantity("5 ps", "s") is None  # not in the table
    assert U._fast_quantity("5 MB/s", "MHz") is None  # a rate is no frequency here
    assert U._fast_quantity("5 MB/h", "byte/s") is None  # only "/s" rates
    assert U._fast_quantity("5 min", "byte") is None
    assert U.parse("1,000 MHz", "MHz") == 1000.0
    assert U.parse("250 ms", "s") == 0.25
    with pytest.raises(U.UnitError):
        U.parse("5 W", "s")
