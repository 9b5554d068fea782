"""The GPU inference validation studies (val-gpu-inference, val-gpu-trtllm) and the tensor-parallel all-reduce
term added in session 13 (issue 33): single-GPU rows carry none, multi-GPU rows carry it and say so."""

from __future__ import annotations

import pytest

from densim.tools.studies import val_gpu_inference, val_gpu_trtllm
from densim.tools.studies.val_gpu_inference import TP_NOTE, predict


@pytest.mark.parametrize("mod", [val_gpu_inference, val_gpu_trtllm])
def test_multi_gpu_rows_say_the_term_came_after_the_miss_and_stay_predictions(mod, tmp_path):
    out = mod.run(tmp_path, 0)
    for h, (label, run) in zip(out["headline"], out["runs"].items(), strict=True):
        multi = " TP1 " not in label
        assert (TP_NOTE in h["source"]) == multi, h["name"]
        # single-GPU rows: no all-reduce at all (no interconnect share, no all-reduce times)
        assert ("GPU interconnect" in run["busy"]) == multi and ("decode_allreduce_s" in run) == multi, label
    # the roles were not changed by the term: every row a prediction except the H200 70B 128/128 row (seen before)
    roles = [h["role"] for h in out["headline"]]
    assert roles.count("arithmetic") == (1 if mod is val_gpu_inference else 0)


def test_h200_tp2_row_all_reduce_by_hand():
    # Llama 2 70B on 2 H200s (NVSwitch, 450 GB/s per direction, 3.4 us per hop), hidden 8192, 80 layers:
    # 2 all-reduces per layer = 160; TP 2: 2 (2 - 1) / 2 = 1; per token 160 x 8192 x 2 B / 450e9 B/s = 5.825422 us,
    # fixed 160 x 2 (2 - 1) x 3.4 us = 1.088 ms. Decode at batch 64: 64 x 5.825422 us + 1.088 ms = 1.460827 ms;
    # prefill of 2048 tokens: 2048 x 5.825422 us + 1.088 ms = 13.018465 ms
    p = predict("llama-2-70b", 64, 2, 2048, 128)
    assert p["decode_allreduce_s"] == pytest.approx(1.460827e-3, rel=1e-6)
    assert p["prefill_allreduce_s"] == pytest.approx(13.018465e-3, rel=1e-6)
    # the same row on one GPU would carry none
    assert "decode_allreduce_s" not in predict("llama-2-70b", 32, 1, 2048, 128)
