"""The GPU inference validation studies (val-gpu-inference, val-gpu-trtllm) and the tensor-parallel all-reduce
term added in session 13 (issue 33): single-GPU rows carry none, multi-GPU rows carry it and say so."""

from __future__ import annotations

import pytest

from densim.tools.studies import val_gpu_inference, val_gpu_trtllm
from densim.tools.studies.val_gpu_inference import GQA_NOTE, TP_NOTE, predict


@pytest.mark.parametrize("mod", [val_gpu_inference, val_gpu_trtllm])
def test_multi_gpu_rows_say_the_term_came_after_the_miss_and_stay_predictions(mod, tmp_path):
    out = mod.run(tmp_path, 0)
    for h, (label, run) in zip(out["headline"], out["runs"].items(), strict=True):
        multi = " TP1 " not in label
        assert (TP_NOTE in h["source"]) == multi, h["name"]
        # single-GPU rows: no all-reduce at all (no interconnect share, no all-reduce times)
        assert ("GPU interconnect" in run["busy"]) == multi and ("decode_allreduce_s" in run) == multi, label
        # session 17: every Llama 2 70B row (the GQA model) reads the KV cache once per query head and says so
        assert (GQA_NOTE in h["source"]) == ("70b" in label) and run["kv_read_factor"] == (8.0 if "70b" in label else 1.0)
    # arithmetic, not predictions: the H200 70B 128/128 row (estimated by hand before its tolerance) and the four
    # trtllm 70B rows whose figure with the GQA KV read was estimated by hand before it was coded (session 17)
    arith = [h["name"] for h in out["headline"] if h["role"] == "arithmetic"]
    if mod is val_gpu_inference:
        assert arith == ["H200 FP8 llama-2-70b TP1 batch 512, 128/128 tokens: output tokens/s"]
    else:
        assert len(arith) == len(val_gpu_trtllm.HAND_ESTIMATED) == 4 and all("llama-2-70b" in n for n in arith)
        assert all("worked out by hand" in h["why"] for h in out["headline"] if h["role"] == "arithmetic")


def test_gqa_kv_read_by_hand():
    # H200 (4.8 TB/s x 0.8 = 3.84 TB/s), Llama 2 70B fp8 on one GPU at batch 32, 2048 in / 128 out: mean context
    # 2048 + 64 = 2,112 tokens; stored KV 2 x 80 x 8 x 128 x 1 B = 163,840 B per token; read per query head 8x:
    # 1,310,720 B. A step reads 68.977e9 + 32 x 2,112 x 1,310,720 = 157.56e9 B -> 41.03 ms (memory-bound;
    # compute 2 x 68.977e9 x 32 / (1,979e12 x 0.6) = 3.72 ms); per KV head it was 68.977e9 + 11.07e9 -> 20.85 ms
    p = predict("llama-2-70b", 32, 1, 2048, 128)
    assert p["kv_read_factor"] == 8.0
    assert p["decode_step_s"] == pytest.approx((68.977e9 + 32 * 2112 * 1_310_720) / 3.84e12, rel=1e-3)
    assert p["decode_step_s"] == pytest.approx(41.03e-3, rel=1e-3)
    # the 13B model has no GQA (40 query heads, 40 KV heads): nothing changes for it
    assert predict("llama-2-13b", 64, 1, 2048, 128)["kv_read_factor"] == 1.0


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
