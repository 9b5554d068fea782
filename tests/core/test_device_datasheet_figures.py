"""Storage devices as datasheets write them (issue 30, item 4): a sequential latency is not a random one,
the queue depth an IOPS figure is rated at, and one-line refusals naming the part."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from densim.models.devices import DeviceSpec, block_service

# Intel DC P3700 800 GB as its product specification prints it: "latency 20 us" is a sequential 4 KB figure;
# random 4 KB read 460 K IOPS rated at 4 workers x QD32 = QD128 (modelling guide §7.2 [S32]); no random latency.
P3700_DATASHEET = {"name": "intel-dc-p3700-800gb-datasheet", "kind": "nvme_ssd", "seq_read_latency": "20 us",
                   "seq_write_latency": "20 us", "read_iops": 460000, "write_iops": 175000, "iops_queue_depth": 128,
                   "seq_read": "2800 MB/s", "seq_write": "2000 MB/s"}


def test_a_sequential_latency_is_refused_as_the_random_one():
    with pytest.raises(ValidationError, match=r"device 'intel-dc-p3700-800gb-datasheet': read_latency \(random 4 KiB "
                                              r"read at QD1\) is required; seq_read_latency 20 us is a sequential figure"):
        DeviceSpec.model_validate(P3700_DATASHEET)


def test_latency_and_iops_that_cannot_be_the_same_io_are_refused():
    # 460,000 IOPS x 100 us = 46 requests in flight; rated at QD16 there are at most 16: the latency is not the
    # QD1 latency of the I/O the IOPS were measured with
    d = {**P3700_DATASHEET, "read_latency": "100 us", "write_latency": "30 us", "iops_queue_depth": 16}
    with pytest.raises(ValidationError, match=r"read_iops 460000 with read_latency 100 us needs 46 requests in flight, "
                                              r"more than the iops_queue_depth 16"):
        DeviceSpec.model_validate(d)
    # at the rated QD128 the same figures are consistent (46 <= 128; writes 175,000 x 30 us = 5.25 <= 128)
    assert DeviceSpec.model_validate({**d, "iops_queue_depth": 128}).servers() == pytest.approx(46.0)


def test_sequential_access_starts_from_the_sequential_latency():
    # random QD1 read 80 us (E), sequential 20 us, 2,800 MB/s. A 128 KiB sequential read:
    #   t1 = 20 us + (131,072 - 4,096) B / 2.8e9 B/s = 20 + 45.35 = 65.35 us; rate 2.8e9 / 131,072 = 21,362 /s.
    # A 4 KiB random read keeps the random 80 us.
    dev = DeviceSpec.model_validate({**P3700_DATASHEET, "read_latency": "80 us", "write_latency": "30 us"})
    t1, cap, _ = block_service(dev, 131072, 1.0, sequential=True)
    assert t1 == pytest.approx(20e-6 + 126976 / 2.8e9) and cap == pytest.approx(2.8e9 / 131072)
    t1, cap, _ = block_service(dev, 4096, 1.0, sequential=False)
    assert t1 == pytest.approx(80e-6) and cap == pytest.approx(460000)
    # a part without a sequential latency behaves as before: sequential starts from the random latency
    old = DeviceSpec.model_validate({k: v for k, v in P3700_DATASHEET.items() if not k.startswith("seq_") or k in (
        "seq_read", "seq_write")} | {"read_latency": "80 us", "write_latency": "30 us"})
    assert block_service(old, 131072, 1.0, sequential=True)[0] == pytest.approx(80e-6 + 126976 / 2.8e9)


def test_a_scenario_part_with_only_a_sequential_latency_is_one_line_naming_it():
    from densim.errors import InputError
    from densim.spec.loader import scenario_from_dict

    d = {"name": "t", "parts": {"devices": [{**P3700_DATASHEET, "name": "p3700-ds"}]},
         "cluster": {"hosts": [{"name": "a", "count": 1, "server": "dual-platinum-8180-768g"}]},
         "vms": [{"name": "v", "count": 1, "vcpus": 2, "memory": "4 GiB", "profile": {"kind": "constant", "mean": 0.3}}],
         "simulation": {"step": "1 min", "horizon": "1 h"}}
    with pytest.raises(InputError, match=r"^t:parts.devices\[0\]: device 'p3700-ds': read_latency \(random 4 KiB read at "
                                         r"QD1\) is required; seq_read_latency 20 us is a sequential figure [^\n]*$"):
        from densim.plant import resolve

        resolve(scenario_from_dict(d))
