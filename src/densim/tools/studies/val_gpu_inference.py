"""Study ``val-gpu-inference``: LLM output throughput on an H200 from the datasheet and a roofline.

Source (measured): NVIDIA, TensorRT-LLM release 0.5.0, ``docs/source/blogs/H200launch.md`` ("H200 achieves
nearly 12,000 tokens/sec on Llama2-13B with TensorRT-LLM"), table "H200 FP8 Max throughput"
(https://github.com/NVIDIA/TensorRT-LLM/blob/release/0.5.0/docs/source/blogs/H200launch.md), preliminary
measurements with TensorRT-LLM v0.5.0 on one H200 (or 2 and 4 for TP 2 and 4), FP8:

===========  =====  ==  ============  =============  =====================
model        batch  TP  input tokens  output tokens  output tokens/s
===========  =====  ==  ============  =============  =====================
llama_13b    1024   1   128           128            11,819
llama_13b    128    1   128           2048           4,750
llama_13b    64     1   2048          128            1,349
llama_70b    512    1   128           128            3,014
llama_70b    512    4   128           2048           6,616
llama_70b    64     2   2048          128            682
llama_70b    32     1   2048          128            303
===========  =====  ==  ============  =============  =====================

Inputs, fixed before the table was read: H200 SXM from the catalog (141 GiB, 4.8 TB/s, 1,979 dense FP8
TFLOP/s: datasheet), Llama 2 13B and 70B architectures (Hugging Face config.json; catalog ``llm_models``,
13B in ``validation.yaml``), the roofline's default efficiencies (0.8 of peak bandwidth, 0.6 of peak FP8
compute, both (E)) and 0.9 of memory usable (vLLM's default), all set in commit 79301f2 before this
source was found. Precision: weights and compute FP8 (the table's "FP8"); KV cache FP8 too, decided from
memory alone: 1,024 sequences of up to 256 tokens of Llama 2 13B need 215 GB of KV cache in FP16, more
than the 141 GB card, and 107 GB in FP8 (assumption, not stated in the source). "llama_13b"/"llama_70b"
are taken to be Llama 2 (the blog's date, November 2023).

Since session 17 the engine (v0.5.0, before the XQA kernel) reads a GQA model's KV cache once per query head
(``Workload.kv_read = "per-query-head"``: 8 times the stored bytes for Llama 2 70B, 1 for 13B); why, and which
rows moved, is in ``val-gpu-trtllm``'s docstring.

Model: :func:`densim.models.inference.at_batch` at the published batch and TP (a static batch: ``B``
prefills then ``n_out`` decode steps, the same round as continuous batching): output tokens/s = ``B n_out /
(n_out t_d(B) + B t_p)``.

Tolerance (a priori): +/-40 % on each row's output tokens/s (a roofline with estimated efficiencies).
Written after a rough mental estimate of the 70B 128/128 row only (about +30 %), before any run.

Expected weak spots, written before the run: (1) the TP 2 and TP 4 rows: tensor-parallel all-reduce is not
modelled, so the model should be high there; (2) short prompts at large batch: each request's prefill is
charged ``max(compute, one read of the weights)``, a weight read per prompt, which overstates prefill when
prompts are batched, so the model may be low for the 128-token-prompt rows; (3) attention FLOPs are not
counted, so the long-prompt (2048) rows may be high.

Session 13 (issue 33): the tensor-parallel all-reduce is now modelled (:mod:`densim.models.inference`: 2 ring
all-reduces per layer of ``tokens x hidden x 2 B``, added to each decode step and prefill, not overlapped). It
was added AFTER the TP > 1 rows were seen missing high; its inputs were fixed from sources before these rows
were run with it, none tuned: per-direction link bandwidth from the datasheets (H100/H200 450 GB/s, A100
300 GB/s NVLink through NVSwitch), per-hop latency from NCCL's cost model (NVLink Ring/Simple 3.4 us), hidden
sizes from the models' configs (7B 4096, 13B 5120, 70B 8192), 2-byte activations (the engines' ``--dtype
float16``), no overlap (a data dependency). Each TP > 1 row's source text says so.
Result (before -> after): 70B TP4 b512 128/2048 +383.8 % -> +211.7 % (still out); 70B TP2 b64 2048/128
+31.5 % -> +18.3 % (within before and after). The single-GPU rows do not move.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from densim.catalog.core import builtin_catalog
from densim.models.gpu import GpuSpec
from densim.models.inference import LlmSpec, Workload, at_batch, decode_bytes, kv_read_factor, replica
from densim.tools.studies.base import Study, busy_check, headline

SOURCE = ("NVIDIA TensorRT-LLM release/0.5.0 docs/source/blogs/H200launch.md, table 'H200 FP8 Max throughput' "
          "(https://github.com/NVIDIA/TensorRT-LLM/blob/release/0.5.0/docs/source/blogs/H200launch.md)")
GPU = "nvidia-h200-sxm"
#: (model, batch, TP, input tokens, output tokens, measured output tokens/s)
MEASURED = [
    ("llama-2-13b", 1024, 1, 128, 128, 11_819),
    ("llama-2-13b", 128, 1, 128, 2048, 4_750),
    ("llama-2-13b", 64, 1, 2048, 128, 1_349),
    ("llama-2-70b", 512, 1, 128, 128, 3_014),
    ("llama-2-70b", 512, 4, 128, 2048, 6_616),
    ("llama-2-70b", 64, 2, 2048, 128, 682),
    ("llama-2-70b", 32, 1, 2048, 128, 303),
]
TOLERANCE = 0.40
#: the note every multi-GPU (TP > 1) row carries in its source text (issue 33, session 13)
TP_NOTE = "all-reduce term added in session 13 after the miss was seen; its inputs were not tuned"
#: how the engines measured here (TensorRT-LLM v0.5.0 and v0.6.1, before the XQA kernel of v0.8) read a GQA model's KV
#: cache in a decode step: once per query head (val-gpu-trtllm's docstring, session 17)
ENGINE_KV_READ = "per-query-head"
#: the note every GQA row (Llama 2 70B) carries in its source text (session 17)
GQA_NOTE = ("KV read once per query head (TensorRT-LLM before XQA, v0.8) added in session 17 after the 70B rows were "
            "seen missing; its factor (query over KV heads) is the model's config, nothing tuned")


def source_text(source: str, p: dict[str, Any], tp: int) -> str:
    """A row's source with the notes of the mechanisms added after misses were seen: the all-reduce (tp > 1) and the
    GQA KV reads (the prediction ``p`` read its model's KV cache more than once a step)."""
    notes = ([TP_NOTE] if tp > 1 else []) + ([GQA_NOTE] if p["kv_read_factor"] > 1 else [])
    return "; ".join([source, *notes])


def predict(model: str, batch: int, tp: int, n_in: int, n_out: int, *, gpu_name: str = GPU,
            precision: str = "fp8") -> dict[str, Any]:
    """The roofline's output tokens/s of one replica (``tp`` GPUs) at ``batch``, and its resources' busy shares."""
    cat = builtin_catalog()
    llm = cat.get("llm_models", model, LlmSpec)
    gpu = cat.get("gpus", gpu_name, GpuSpec)
    wl = Workload(tokens_in=n_in, tokens_out=n_out, precision=precision, kv_precision=precision, kv_read=ENGINE_KV_READ)
    r = replica(llm, gpu, wl, tp)
    a = at_batch(r, llm, wl, batch)
    round_s = float(a["round_s"])
    w, bw, fl = r["weights_bytes"], r["bandwidth_bps"], r["flops"]
    mem_s = float(decode_bytes(r, batch)) / bw
    comp_s = 2.0 * llm.params * batch / fl
    busy = {"HBM bandwidth": (n_out * mem_s + batch * w / bw) / round_s,
            "tensor compute": (n_out * comp_s + batch * 2.0 * llm.params * n_in / fl) / round_s,
            "KV cache memory": batch * r["context_tokens"] * r["kv_bytes_per_token"] / (r["usable_bytes"] - w)}
    out = {"tokens_per_s": float(a["tokens_per_s"]), "decode_step_s": float(a["decode_step_s"]),
           "decode_bound": str(a["decode_bound"]), "prefill_s": r["prefill_s"], "prefill_bound": r["prefill_bound"],
           "batch_max": r["batch_max"], "round_s": round_s, "busy": busy, "kv_read_factor": kv_read_factor(llm, wl)}
    if tp > 1:  # the all-reduce (not overlapped): its share of the round; single-GPU rows carry no such entry
        ar_d = float(a["allreduce_s"])
        busy["GPU interconnect"] = (n_out * ar_d + batch * r["prefill_allreduce_s"]) / round_s
        out |= {"decode_allreduce_s": ar_d, "prefill_allreduce_s": r["prefill_allreduce_s"]}
    return out


def run(out_dir: Path, seed: int) -> dict[str, Any]:
    del out_dir
    heads, runs, busy = [], {}, []
    for model, batch, tp, n_in, n_out, measured in MEASURED:
        label = f"{model} TP{tp} batch {batch}, {n_in}/{n_out} tokens"
        p = predict(model, batch, tp, n_in, n_out)
        runs[label] = p
        busy.append(busy_check(label, list(p["busy"]), [min(v, 1.0) for v in p["busy"].values()], kind="GPU (roofline)"))
        # the 70B 128/128 row's result was estimated by hand (about +30 %) before the tolerance was written: not blind
        seen = (model, batch, tp, n_in, n_out) == ("llama-2-70b", 512, 1, 128, 128)
        heads.append(headline(f"H200 FP8 {label}: output tokens/s", measured, p["tokens_per_s"], tolerance=TOLERANCE,
                              relative=True, source=source_text(SOURCE, p, tp), unit="tokens/s", role="arithmetic" if seen else "prediction",
                              why=("the roofline's figure for this row was estimated by hand (about +30 %) before the "
                                   "+/-40 % tolerance was written") if seen else None, rests_on=[label]))
    xs = [f"{m.split('-')[-1]} tp{t} b{b} {i}/{o}" for m, b, t, i, o, _ in MEASURED]
    fig = {"data": [{"type": "bar", "name": "TensorRT-LLM 0.5.0 (measured)", "x": xs, "y": [m[-1] for m in MEASURED]},
                    {"type": "bar", "name": "densim roofline", "x": xs, "y": [runs[k]["tokens_per_s"] for k in runs]}],
           "layout": {"title": {"text": "H200 FP8 output tokens/s: measured and predicted"}, "barmode": "group",
                      "yaxis": {"title": {"text": "output tokens/s"}, "type": "log"}}}
    return {"study": "val-gpu-inference", "headline": heads, "figures": [fig], "runs": runs, "seed": seed, "busy": busy}


STUDY = Study(
    name="val-gpu-inference",
    description="Validation: LLM output tokens/s on an H200 (FP8) from the datasheet and a roofline (TensorRT-LLM 0.5.0 measurements)",
    run=run,
    source=SOURCE,
    tags=("validation", "gpu"),
    area="gpu",
)
