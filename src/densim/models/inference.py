"""LLM inference on GPUs: memory (weights + KV cache), throughput from a roofline, latency under load, and
how many GPUs and hosts give a target token rate within latency bounds (``densim gpu size``).

Inputs: a model (:class:`LlmSpec`: parameters ``P``, layers ``L``, KV heads ``h_kv``, head dimension
``d``, hidden size ``h``; catalog section ``llm_models``), a precision (bytes per weight ``b_w`` and per KV
value ``b_kv``: fp16 2, fp8 1), the mean prompt and output lengths ``n_in``, ``n_out``, and the GPU
(:class:`GpuSpec`: memory ``M``, bandwidth ``BW``, dense tensor FLOP/s ``F`` at the precision, GPU-to-GPU
link bandwidth per direction ``BW_link`` and per-hop latency ``alpha``). A replica of the model runs on
``tp`` GPUs of one host (tensor parallel: memory, bandwidth and compute add up, and every layer all-reduces
its activations across the ``tp`` GPUs)::

    weights  W = P x b_w                                       KV per token  k = 2 L h_kv d b_kv
    usable   M_u = tp x M x mem_util                           mean context  c = n_in + n_out / 2
    batch    B_max = floor((M_u - W) / (k x c))                (sequences the KV cache holds)
    decode step   t_d(B) = max((W + B c k r) / (tp BW e_bw),  2 P B / (tp F e_f))  +  t_ar(B)
    prefill       t_p    = max(2 P n_in / (tp F e_f),  W / (tp BW e_bw))  +  t_ar(n_in)

The KV read factor ``r`` (:func:`kv_read_factor`) is 1 for a kernel that reads each KV head once (GQA-aware:
TensorRT-LLM's XQA from v0.8, FlashDecoding-style kernels; the default) and ``h_q / h_kv`` (query heads over KV
heads) for one that reads it once per query head (a thread block per head: TensorRT-LLM's masked MHA kernel
before XQA, NVIDIA docs/source/advanced/gpt-attention.md and docs/source/blogs/XQA-kernel.md); it is 1 for a
model without GQA either way, and it leaves the KV cache's size (``B_max``) unchanged.

Tensor-parallel all-reduce (Megatron-style tensor parallelism: each layer's attention output and MLP output
are partial sums on the ``tp`` GPUs, summed by one all-reduce each, 2 per layer) of a step over ``T`` tokens
(``T = B`` in a decode step, ``n_in`` in a prefill), each a message of ``S = T h a`` bytes (``a`` =
:data:`ACT_BYTES` = 2: activations stay in the model's 16-bit dtype when weights are FP8), as a ring
all-reduce::

    t_ar(T) = 2 L x [ 2 (tp - 1) / tp x T h a / BW_link  +  2 (tp - 1) alpha ]          (0 at tp = 1)

``BW_link`` is :meth:`GpuSpec.link_bandwidth_bps` (the card's per-direction figure on NVSwitch or PCIe;
``tp - 1`` of its links on a mesh). Overlap assumption: NONE. The all-reduce adds to the step time
instead of hiding under the roofline's memory or compute time, because the next layer needs the summed
activations before it can start (a data dependency; TensorRT-LLM, vLLM and Megatron inference issue the
all-reduce between the layer's GEMMs and the next layer's). This was decided from how the engines work,
before the validation rows were run with the term. Not modelled: NCCL's per-collective base latency (8.4 us
in its Ring/Simple model) and the vendors' one-shot/two-shot custom all-reduce kernels for small messages;
the link bandwidth is the datasheet peak (no efficiency factor), so the term is a lower bound on the time the
all-reduce takes.

A decode step reads every weight once and the batch's KV cache (memory-bound at small B) and does
``2 P`` FLOPs per sequence (compute-bound at large B); a prefill does ``2 P`` FLOPs per prompt token
(compute-bound). With continuous batching at batch ``B``, in a round of ``n_out`` decode steps the replica
finishes ``B`` requests and prefills ``B`` new ones::

    round    S(B) = n_out t_d(B) + B t_p
    TPOT     = S(B) / n_out = t_d(B) + B t_p / n_out         (time per output token, prefills included)
    capacity X(B) = B / S(B) requests/s per replica,  tokens/s = X n_out

Latency under load: each replica is ``B`` slots, each holding a request for ``S(B)``; ``n`` replicas at
``lambda`` requests/s are an M/M/c queue with ``c = n B`` servers of service time ``S`` (Erlang C,
:func:`densim.models.queueing.erlang_c`); a request waits ``W`` for a slot, then is prefilled::

    TTFT = W + t_p,    P(W > t) = C(c, lambda S) exp(-(c / S - lambda) t)
    p95 TTFT = t_p + max(0, ln(C / 0.05) / (c / S - lambda))

:func:`size` searches tp in {1, 2, 4, 8} (at most the host's GPUs, weights must fit; tp > 1 needs the
model's hidden size and the card's interconnect figures, else that width is skipped with the reason),
B in 1..B_max with TPOT within its bound, and the fewest replicas meeting the token rate with p95 TTFT
within its bound; the answer is the fewest GPUs (then hosts): ``hosts = ceil(n / (gpus_per_host / tp))``.
Batches above 1,024 are tried on a geometric grid (:func:`batches`), replicas up to 63 above the
throughput floor.

Efficiencies ``e_bw`` (achieved share of peak memory bandwidth in decode) and ``e_f`` (of peak dense
tensor FLOP/s in prefill and large-batch decode) default to 0.8 and 0.6: engineering estimates (E), not
fitted to any measurement. ``mem_util`` 0.9 is vLLM's default ``gpu_memory_utilization``
(https://docs.vllm.ai/en/latest/api/vllm/config/cache.html, "gpu_memory_utilization: float = 0.9").
Not modelled: attention FLOPs and KV reads in prefill, overlap of communication with compute, speculative
decoding, prefix caching, quantised KV beyond fp8, MoE models, output-length variance (the queue takes
exponential service). See docs/background/gpus.md, "LLM inference sizing".
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from densim.models.gpu import GpuSpec

_CFG = ConfigDict(defer_build=True, allow_inf_nan=False, frozen=True, extra="forbid", populate_by_name=True)

#: bytes per weight / KV value by precision
BYTES = {"fp16": 2.0, "fp8": 1.0}
#: tensor-parallel widths tried by :func:`size`
TP_WIDTHS = (1, 2, 4, 8)
#: default efficiencies (E) and usable memory share (vLLM's default gpu_memory_utilization)
BW_EFFICIENCY, COMPUTE_EFFICIENCY, MEM_UTIL = 0.8, 0.6, 0.9
#: the TTFT quantile :func:`size` bounds
TTFT_QUANTILE = 0.95
#: bytes per activation element in the tensor-parallel all-reduce: the model's 16-bit dtype (fp16/bf16) whatever
#: the weight precision (TensorRT-LLM's FP8 Llama builds are ``--dtype float16 --enable_fp8``: FP8 GEMMs, FP16
#: activations between them; docs/source/performance.md, commit 138f96d45f90b9667426f7c47297d8c06bafac73)
ACT_BYTES = 2.0


class LlmSpec(BaseModel):
    """A decoder-only transformer, as far as inference sizing needs it (catalog section ``llm_models``)."""

    model_config = _CFG
    name: str
    params_b: float = Field(gt=0, description="parameters, billions")
    layers: int = Field(gt=0)
    kv_heads: int = Field(gt=0, description="key/value heads (GQA: fewer than attention heads)")
    head_dim: int = Field(gt=0)
    hidden_size: int | None = Field(default=None, gt=0, description="model width (config.json hidden_size): the "
                                    "activations a tensor-parallel replica all-reduces; None: tp > 1 is not sized")
    attention_heads: int | None = Field(default=None, gt=0, description="query heads (config.json "
                                        "num_attention_heads): a kernel that reads the KV cache once per query head "
                                        "(Workload.kv_read) reads attention_heads / kv_heads times its bytes")
    source: str = ""

    @property
    def params(self) -> float:
        return self.params_b * 1e9

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        """KV cache of one token: 2 (K and V) x layers x KV heads x head dimension x bytes."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * kv_bytes


class Workload(BaseModel):
    """The inference load: mean prompt and output tokens per request and the precision."""

    model_config = _CFG
    tokens_in: int = Field(gt=0, description="mean prompt tokens per request")
    tokens_out: int = Field(gt=0, description="mean output tokens per request")
    precision: Literal["fp16", "fp8"] = "fp16"
    kv_precision: Literal["fp16", "fp8"] | None = Field(default=None, description="KV cache precision (default: precision)")
    bw_efficiency: float = Field(default=BW_EFFICIENCY, gt=0, le=1)
    compute_efficiency: float = Field(default=COMPUTE_EFFICIENCY, gt=0, le=1)
    mem_util: float = Field(default=MEM_UTIL, gt=0, le=1)
    kv_read: Literal["per-kv-head", "per-query-head"] = Field(
        default="per-kv-head", description="how a decode step's attention kernel reads the KV cache: once per KV head "
        "(GQA-aware kernels: TensorRT-LLM's XQA from v0.8, FlashDecoding-style kernels) or once per query head (a "
        "thread block per query head: TensorRT-LLM's masked MHA kernel before XQA)")


def tflops(gpu: GpuSpec, precision: str) -> float:
    """The GPU's dense tensor TFLOP/s at ``precision``; ValueError when it has no such unit."""
    if precision == "fp8":
        if gpu.fp8_tflops is None:
            raise ValueError(f"{gpu.name} has no FP8 tensor unit: use precision fp16")
        return gpu.fp8_tflops
    return gpu.fp16_tflops


def allreduce_s(gpu: GpuSpec, tp: int, message_bytes):
    """One ring all-reduce of ``message_bytes`` over ``tp`` GPUs: ``2 (tp - 1) / tp x S / BW_link + 2 (tp - 1) alpha``
    (0 at tp = 1); ValueError when tp > 1 and the card has no interconnect figures."""
    m = np.asarray(message_bytes, dtype=np.float64)
    if tp == 1:
        return np.zeros_like(m)
    link = gpu.link_bandwidth_bps(tp)  # raises for a card without figures
    return 2.0 * (tp - 1) / tp * m / link + 2.0 * (tp - 1) * gpu.interconnect_latency_s


def tp_comm_coefficients(llm: LlmSpec, gpu: GpuSpec, tp: int) -> tuple[float, float]:
    """``(per_token_s, fixed_s)`` of a step's tensor-parallel all-reduces, ``t_ar(T) = per_token_s x T + fixed_s``:
    2 all-reduces per layer of ``T x hidden x ACT_BYTES`` bytes. (0, 0) at tp = 1; ValueError when tp > 1 and the
    model has no hidden size or the card no interconnect figures."""
    if tp == 1:
        return 0.0, 0.0
    if llm.hidden_size is None:
        raise ValueError(f"model {llm.name} has no hidden_size: the tensor-parallel all-reduce needs it")
    link = gpu.link_bandwidth_bps(tp)  # raises for a card without figures
    per_token = 2.0 * llm.layers * 2.0 * (tp - 1) / tp * llm.hidden_size * ACT_BYTES / link
    fixed = 2.0 * llm.layers * 2.0 * (tp - 1) * gpu.interconnect_latency_s
    return per_token, fixed


def kv_read_factor(llm: LlmSpec, wl: Workload) -> float:
    """KV bytes a decode step reads per stored KV byte: 1 when the kernel reads each KV head once
    (``kv_read="per-kv-head"``), ``attention_heads / kv_heads`` when it reads it once per query head (1 for a model
    without grouped-query attention); ValueError when that needs the model's query heads and they are not given."""
    if wl.kv_read == "per-kv-head":
        return 1.0
    if llm.attention_heads is None:
        raise ValueError(f"model {llm.name} has no attention_heads: kv_read 'per-query-head' needs the query heads")
    if llm.attention_heads % llm.kv_heads:
        raise ValueError(f"model {llm.name}: attention_heads {llm.attention_heads} is not a multiple of kv_heads "
                         f"{llm.kv_heads}")
    return llm.attention_heads / llm.kv_heads


def decode_bytes(r: dict, batch):
    """Bytes a decode step reads from GPU memory at batch ``B``: every weight once and the batch's KV cache as the
    kernel reads it (``kv_read_bytes_per_token``; the mean context ``c`` per sequence)."""
    b = np.asarray(batch, dtype=np.float64)
    return r["weights_bytes"] + b * r["context_tokens"] * r["kv_read_bytes_per_token"]


def replica(llm: LlmSpec, gpu: GpuSpec, wl: Workload, tp: int) -> dict:
    """Memory, roofline and all-reduce figures of one replica on ``tp`` GPUs (the module docstring's equations).
    ValueError when tp > 1 and the model's hidden size or the card's interconnect figures are missing."""
    bw = tp * gpu.memory_bandwidth_bps * wl.bw_efficiency
    fl = tp * tflops(gpu, wl.precision) * 1e12 * wl.compute_efficiency
    w = llm.params * BYTES[wl.precision]
    k = llm.kv_bytes_per_token(BYTES[wl.kv_precision or wl.precision])
    k_read = k * kv_read_factor(llm, wl)
    ctx = wl.tokens_in + wl.tokens_out / 2.0
    usable = tp * gpu.memory_bytes * wl.mem_util
    b_max = int(max(0.0, (usable - w) / (k * ctx)))
    ar_tok, ar_fixed = tp_comm_coefficients(llm, gpu, tp)
    ar_p = ar_tok * wl.tokens_in + ar_fixed
    t_p = max(2.0 * llm.params * wl.tokens_in / fl, w / bw) + ar_p
    return {"tp": tp, "weights_bytes": w, "kv_bytes_per_token": k, "kv_read_bytes_per_token": k_read,
            "context_tokens": ctx, "usable_bytes": usable,
            "batch_max": b_max, "prefill_s": t_p, "bandwidth_bps": bw, "flops": fl,
            "allreduce_per_token_s": ar_tok, "allreduce_fixed_s": ar_fixed, "prefill_allreduce_s": ar_p,
            "prefill_bound": "compute" if 2.0 * llm.params * wl.tokens_in / fl >= w / bw else "memory-bandwidth"}


def decode_allreduce_s(r: dict, batch):
    """``t_ar(B)``: a decode step's tensor-parallel all-reduce time at batch ``B`` (0 at tp = 1)."""
    return r["allreduce_per_token_s"] * np.asarray(batch, dtype=np.float64) + r["allreduce_fixed_s"]


def decode_step_s(r: dict, llm: LlmSpec, batch):
    """``t_d(B)``: the slower of reading weights + the batch's KV cache and the batch's 2 P FLOPs per token, plus the
    step's all-reduce (not overlapped)."""
    b = np.asarray(batch, dtype=np.float64)
    mem = decode_bytes(r, b) / r["bandwidth_bps"]
    comp = 2.0 * llm.params * b / r["flops"]
    return np.maximum(mem, comp) + decode_allreduce_s(r, b)


def at_batch(r: dict, llm: LlmSpec, wl: Workload, batch) -> dict:
    """Round time, TPOT and capacity of one replica at batch ``batch`` (array or scalar)."""
    b = np.asarray(batch, dtype=np.float64)
    td = decode_step_s(r, llm, b)
    ar = decode_allreduce_s(r, b)
    round_s = wl.tokens_out * td + b * r["prefill_s"]
    mem = decode_bytes(r, b) / r["bandwidth_bps"]
    return {"decode_step_s": td, "round_s": round_s, "tpot_s": round_s / wl.tokens_out,
            "requests_per_s": b / round_s, "tokens_per_s": b / round_s * wl.tokens_out, "allreduce_s": ar,
            "decode_bound": np.where(2.0 * llm.params * b / r["flops"] >= mem * (1 - 1e-12), "compute", "memory-bandwidth")}


def ttft_quantile_s(lam: float, round_s, slots, prefill_s: float, q: float = TTFT_QUANTILE):
    """Quantile ``q`` of the time to first token: the M/M/c wait for a slot (c = slots, service round_s) + prefill."""
    from densim.models.queueing import erlang_c

    s = np.asarray(round_s, dtype=np.float64)
    c = np.asarray(slots, dtype=np.float64)
    a = lam * s
    pw = erlang_c(c, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = c / s - lam
        w = np.where(pw > (1 - q), np.log(pw / (1 - q)) / rate, 0.0)
        w = np.where(a < c, w, np.inf)
    return prefill_s + w


#: batches tried one by one up to this; above it, a geometric grid (a small model on a large card holds 10^5 sequences)
EXACT_BATCHES = 1024


def batches(b_max: int) -> np.ndarray:
    """The batches :func:`size` tries: every one up to :data:`EXACT_BATCHES`, then 3,072 geometric steps to ``b_max``."""
    if b_max <= 4 * EXACT_BATCHES:
        return np.arange(1, b_max + 1)
    grid = np.geomspace(EXACT_BATCHES + 1, b_max, 3 * EXACT_BATCHES).astype(np.int64)
    return np.unique(np.r_[np.arange(1, EXACT_BATCHES + 1), grid, b_max])


def size(llm: LlmSpec, gpu: GpuSpec, wl: Workload, *, tokens_per_s: float, gpus_per_host: int,
         ttft_s: float, tpot_s: float, max_replicas: int = 100_000) -> dict:
    """The fewest GPUs (then hosts) that give ``tokens_per_s`` output tokens/s with p95 TTFT <= ``ttft_s``
    and TPOT <= ``tpot_s``; ``feasible`` False with the reason when no tensor-parallel width and batch can.
    ValueError when ``wl.kv_read`` needs the model's query heads and it has none (:func:`kv_read_factor`)."""
    read_factor = kv_read_factor(llm, wl)  # a model/workload mismatch, not a width that does not fit: raise first
    lam = tokens_per_s / wl.tokens_out
    best, reasons = None, []
    for tp in TP_WIDTHS:
        if tp > gpus_per_host:
            break
        try:
            r = replica(llm, gpu, wl, tp)
        except ValueError as exc:  # tp > 1 without the model's hidden size or the card's interconnect figures
            reasons.append(f"tp={tp}: {exc}")
            continue
        if r["batch_max"] < 1:
            reasons.append(f"tp={tp}: weights {r['weights_bytes'] / 2**30:.1f} GiB + one sequence's KV cache do not fit "
                           f"{r['usable_bytes'] / 2**30:.1f} GiB usable")
            continue
        bs = batches(r["batch_max"])
        ab = at_batch(r, llm, wl, bs)
        ok = ab["tpot_s"] <= tpot_s
        if not ok.any():
            reasons.append(f"tp={tp}: TPOT {ab['tpot_s'][0] * 1e3:.1f} ms at batch 1 exceeds the bound {tpot_s * 1e3:g} ms")
            continue
        bs, ab = bs[ok], {k: v[ok] for k, v in ab.items()}
        if r["prefill_s"] > ttft_s:
            reasons.append(f"tp={tp}: the prefill alone takes {r['prefill_s'] * 1e3:.1f} ms, above the TTFT bound")
            continue
        # fewest replicas per batch: from the throughput floor upward until p95 TTFT holds (vectorised over tries)
        n0 = np.floor(lam * ab["round_s"] / bs).astype(np.int64) + 1
        tries = n0[:, None] + np.arange(64)[None, :]
        q = ttft_quantile_s(lam, ab["round_s"][:, None], tries * bs[:, None], r["prefill_s"])
        good = q <= ttft_s
        if not good.any():
            reasons.append(f"tp={tp}: the queue for a slot keeps p95 TTFT above {ttft_s:g} s")
            continue
        # only the batches some try meets the bound at (a sentinel replica count for the others would overflow
        # when multiplied by tp and, negative, be picked as the fewest GPUs)
        rows = np.flatnonzero(good.any(axis=1))
        first = np.full(bs.size, -1)
        first[rows] = good[rows].argmax(axis=1)
        n = tries[np.arange(bs.size), np.maximum(first, 0)]
        gpus = n * tp
        i = int(rows[np.lexsort((-bs[rows], gpus[rows]))[0]])  # fewest GPUs, then the largest batch (lowest cost per token)
        if n[i] > max_replicas:
            reasons.append(f"tp={tp}: needs {int(n[i]):,} replicas, above the limit of {max_replicas:,}")
            continue
        per_host = gpus_per_host // tp
        cand = {"tp": tp, "batch": int(bs[i]), "replicas": int(n[i]), "gpus": int(gpus[i]),
                "hosts": math.ceil(int(n[i]) / per_host), "replicas_per_host": per_host, "r": r, "i": i, "ab": ab,
                "ttft_p95_s": float(q[i, first[i]])}
        if best is None or (cand["gpus"], cand["hosts"]) < (best["gpus"], best["hosts"]):
            best = cand
    base = {"model": llm.name, "gpu": gpu.name, "precision": wl.precision, "tokens_in": wl.tokens_in,
            "tokens_out": wl.tokens_out, "target_tokens_per_s": tokens_per_s, "requests_per_s": lam,
            "ttft_p95_bound_s": ttft_s, "tpot_bound_s": tpot_s, "gpus_per_host": gpus_per_host,
            "efficiencies": {"bandwidth": wl.bw_efficiency, "compute": wl.compute_efficiency, "memory_util": wl.mem_util},
            "kv_read": wl.kv_read, "kv_read_factor": read_factor}
    if best is None:
        return base | {"feasible": False, "reasons": reasons}
    r, ab, i = best.pop("r"), best.pop("ab"), best.pop("i")
    slots = best["replicas"] * best["batch"]
    util = lam * float(ab["round_s"][i]) / slots
    from densim.models.queueing import erlang_c

    pw = float(erlang_c(slots, lam * float(ab["round_s"][i])))
    mean_wait = pw * float(ab["round_s"][i]) / (slots - lam * float(ab["round_s"][i]))
    limited = "kv-cache memory" if best["batch"] == r["batch_max"] else "tpot bound" if best["batch"] < r["batch_max"] and (
        float(at_batch(r, llm, wl, best["batch"] + 1)["tpot_s"]) > tpot_s) else "ttft bound (queue)"
    return base | best | {
        "feasible": True,
        "weights_gib": r["weights_bytes"] / 2**30,
        "kv_gib_per_replica": best["batch"] * r["context_tokens"] * r["kv_bytes_per_token"] / 2**30,
        "kv_bytes_per_token": r["kv_bytes_per_token"],
        "batch_max": r["batch_max"],
        "batch_limited_by": limited,
        "decode_step_s": float(ab["decode_step_s"][i]),
        "decode_bound": str(ab["decode_bound"][i]),
        "decode_allreduce_s": float(ab["allreduce_s"][i]),
        "prefill_s": r["prefill_s"],
        "prefill_allreduce_s": r["prefill_allreduce_s"],
        "prefill_bound": r["prefill_bound"],
        "tpot_s": float(ab["tpot_s"][i]),
        "tokens_per_s_per_replica": float(ab["tokens_per_s"][i]),
        "tokens_per_s_per_gpu": float(ab["tokens_per_s"][i]) / best["tp"],
        "capacity_tokens_per_s": float(ab["tokens_per_s"][i]) * best["replicas"],
        "slot_utilisation": util,
        "ttft_mean_s": r["prefill_s"] + mean_wait,
        "reasons_other_widths": reasons,
    }


def llm_models(catalog) -> dict[str, LlmSpec]:
    return {m.name: m for m in catalog.all("llm_models", LlmSpec)}


__all__ = ["ACT_BYTES", "LlmSpec", "Workload", "allreduce_s", "at_batch", "decode_allreduce_s", "decode_bytes",
           "decode_step_s", "kv_read_factor", "llm_models", "replica", "size", "tp_comm_coefficients", "ttft_quantile_s"]
