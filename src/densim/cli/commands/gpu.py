"""``densim gpu size``: how many GPUs and hosts serve an LLM at a target token rate within latency bounds
(:func:`densim.models.inference.size`; docs/background/gpus.md, "LLM inference sizing")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from densim.cli.common import JsonOpt, Printer, QuietOpt
from densim.cli.common import run_guarded as _guard


ARCH = {"--params-b": "params_b", "--layers": "layers", "--kv-heads": "kv_heads", "--head-dim": "head_dim"}
#: optional architecture figures: without --hidden-size a custom model is sized at tp = 1 only (no all-reduce width)
ARCH_OPTIONAL = {"--hidden-size": "hidden_size", "--attention-heads": "attention_heads"}


def _llm(cat, model: str | None, arch: dict):
    """The catalog model ``model``, or one built from ``--params-b/--layers/--kv-heads/--head-dim`` (all four)."""
    from pydantic import ValidationError

    from densim.catalog.core import CatalogError
    from densim.errors import InputError
    from densim.models.inference import LlmSpec

    given = {k: v for k, v in arch.items() if v is not None}
    if model is not None:
        if given:
            raise InputError(next(iter(given)), "", "give --model (a catalog LLM) or its architecture "
                             "(--params-b, --layers, --kv-heads, --head-dim), not both")
        try:
            return cat.get("llm_models", model, LlmSpec)
        except CatalogError as exc:
            raise InputError("--model", "", str(exc.args[0]).strip("'\"")) from None
    missing = [k for k in ARCH if k not in given]
    if len(missing) == len(ARCH) and not given:
        raise InputError("--model", "", "give a catalog LLM (--model) or its architecture (--params-b, --layers, "
                         "--kv-heads, --head-dim)")
    if missing:
        raise InputError(missing[0], "", f"a model given by its architecture needs {', '.join(ARCH)}; missing "
                         f"{', '.join(missing)}")
    try:
        return LlmSpec(name="custom", **{(ARCH | ARCH_OPTIONAL)[k]: v for k, v in given.items()})
    except ValidationError as exc:
        e = exc.errors()[0]
        opt = next(k for k, f in (ARCH | ARCH_OPTIONAL).items() if f == e["loc"][0])
        raise InputError(opt, "", e["msg"]) from None


def run_gpu_size(*, model: str | None, gpu: str, tokens_in: int, tokens_out: int, tokens_per_s: float | None, ttft: str,
                 tpot: str, gpus_per_host: int, precision: str, kv_precision: str | None, bw_efficiency: float | None,
                 compute_efficiency: float | None, requests_per_s: float | None = None,
                 arch: dict | None = None, kv_read: str = "per-kv-head") -> dict:
    """The sizing answer as a plain dict; bad names and values are one-line InputErrors naming the option.
    The load is ``tokens_per_s`` output tokens/s or ``requests_per_s`` (x ``tokens_out``), not both."""
    from pydantic import ValidationError

    from densim.catalog.core import CatalogError, builtin_catalog
    from densim.errors import InputError
    from densim.models.gpu import GpuSpec
    from densim.models.inference import Workload, kv_read_factor, size, tflops
    from densim.units import UnitError, parse

    cat = builtin_catalog()
    llm = _llm(cat, model, arch or dict.fromkeys(ARCH | ARCH_OPTIONAL))
    if (tokens_per_s is None) == (requests_per_s is None):
        raise InputError("--tokens-per-s" if tokens_per_s is not None else "--requests-per-s", "",
                         "give the load once: --tokens-per-s (output tokens) or --requests-per-s, not both"
                         if tokens_per_s is not None else "give the load: --tokens-per-s (output tokens) or --requests-per-s")
    if tokens_per_s is None:
        tokens_per_s = requests_per_s * tokens_out
    try:
        card = cat.get("gpus", gpu, GpuSpec)
    except CatalogError as exc:
        raise InputError("--gpu", "", str(exc.args[0]).strip("'\"")) from None
    bounds = {}
    for opt, text in (("--ttft", ttft), ("--tpot", tpot)):
        try:
            bounds[opt] = parse(text, "s")
        except (UnitError, ValueError) as exc:
            raise InputError(opt, "", str(exc).splitlines()[0]) from None
        if bounds[opt] <= 0:
            raise InputError(opt, "", f"must be a positive time, got {text!r}")
    extra = {k: v for k, v in (("bw_efficiency", bw_efficiency), ("compute_efficiency", compute_efficiency)) if v is not None}
    try:
        wl = Workload(tokens_in=tokens_in, tokens_out=tokens_out, precision=precision, kv_precision=kv_precision,
                      kv_read=kv_read, **extra)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise InputError("--" + str(e["loc"][0]).replace("_", "-"), "", e["msg"]) from None
    try:
        tflops(card, wl.precision)
    except ValueError as exc:
        raise InputError("--precision", "", str(exc)) from None
    try:
        kv_read_factor(llm, wl)
    except ValueError as exc:
        raise InputError("--kv-read", "", f"{exc} (--attention-heads for a model given by its architecture)") from None
    return size(llm, card, wl, tokens_per_s=tokens_per_s, gpus_per_host=gpus_per_host, ttft_s=bounds["--ttft"],
                tpot_s=bounds["--tpot"])


def _print(out: dict, pr: Printer) -> None:
    from rich.table import Table

    head = (f"densim gpu size: {out['model']} ({out['precision']}) on {out['gpu']}, {out['tokens_in']} tokens in / "
            f"{out['tokens_out']} out, {out['target_tokens_per_s']:,.0f} output tokens/s, p95 TTFT <= "
            f"{out['ttft_p95_bound_s']:g} s, TPOT <= {out['tpot_bound_s'] * 1e3:g} ms")
    pr.line(head)
    if not out["feasible"]:
        pr.line("no tensor-parallel width and batch meets the bounds:")
        for r in out["reasons"]:
            pr.line(f"  {r}")
        return
    tab = Table(title="answer", show_header=False)
    tab.add_row("buy", f"{out['hosts']} host(s) x {out['gpus_per_host']} GPUs ({out['gpus']} GPUs used: "
                f"{out['replicas']} replica(s) x tp {out['tp']})")
    tab.add_row("limiting factor", f"GPU: batch {out['batch']} per replica, limited by {out['batch_limited_by']}")
    tab.add_row("memory per replica", f"weights {out['weights_gib']:.1f} GiB + KV cache {out['kv_gib_per_replica']:.1f} GiB")
    ar_d = f", {out['decode_allreduce_s'] * 1e3:.2f} ms of it all-reduce" if out["tp"] > 1 else ""
    ar_p = f", {out['prefill_allreduce_s'] * 1e3:.2f} ms of it all-reduce" if out["tp"] > 1 else ""
    tab.add_row("decode step", f"{out['decode_step_s'] * 1e3:.2f} ms ({out['decode_bound']}-bound{ar_d})")
    tab.add_row("prefill", f"{out['prefill_s'] * 1e3:.2f} ms per request ({out['prefill_bound']}-bound{ar_p})")
    tab.add_row("TPOT", f"{out['tpot_s'] * 1e3:.1f} ms")
    tab.add_row("TTFT mean / p95", f"{out['ttft_mean_s'] * 1e3:.0f} ms / {out['ttft_p95_s'] * 1e3:.0f} ms")
    tab.add_row("throughput", f"{out['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU; capacity "
                f"{out['capacity_tokens_per_s']:,.0f} tokens/s at {100 * out['slot_utilisation']:.1f} % of the slots")
    pr.table(tab)


def register(app: typer.Typer) -> None:
    gpu_app = typer.Typer(help="GPU sizing: LLM inference (roofline + queue).", no_args_is_help=True, add_completion=False)

    @gpu_app.command("size")
    def size_cmd(
        gpu: Annotated[str, typer.Option("--gpu", "-g", help="GPU in the catalog (section gpus, e.g. nvidia-h100-sxm)")],
        model: Annotated[Optional[str], typer.Option("--model", "-m", help="LLM in the catalog (section llm_models, "
                                                     "e.g. llama-2-70b); or give --params-b, --layers, --kv-heads, --head-dim")] = None,
        tokens_per_s: Annotated[Optional[float], typer.Option("--tokens-per-s", min=1e-9, help="target output tokens per second")] = None,
        requests_per_s: Annotated[Optional[float], typer.Option("--requests-per-s", min=1e-9, help="target requests per second "
                                                                "(instead of --tokens-per-s: x --tokens-out)")] = None,
        params_b: Annotated[Optional[float], typer.Option("--params-b", help="a model not in the catalog: parameters, billions")] = None,
        layers: Annotated[Optional[int], typer.Option("--layers", help="... its transformer layers")] = None,
        kv_heads: Annotated[Optional[int], typer.Option("--kv-heads", help="... its key/value heads")] = None,
        head_dim: Annotated[Optional[int], typer.Option("--head-dim", help="... its head dimension")] = None,
        hidden_size: Annotated[Optional[int], typer.Option("--hidden-size", help="... its hidden size (needed for "
                                                           "tensor parallel's all-reduce; without it tp = 1 only)")] = None,
        attention_heads: Annotated[Optional[int], typer.Option("--attention-heads", help="... its query heads (needed "
                                                               "for --kv-read per-query-head)")] = None,
        kv_read: Annotated[str, typer.Option("--kv-read", help="how the decode attention kernel reads the KV cache: "
                                             "per-kv-head (GQA-aware kernels, e.g. TensorRT-LLM XQA from v0.8) or "
                                             "per-query-head (one thread block per query head: older kernels read a "
                                             "GQA model's cache query-heads / kv-heads times)")] = "per-kv-head",
        tokens_in: Annotated[int, typer.Option("--tokens-in", min=1, help="mean prompt tokens per request")] = 1024,
        tokens_out: Annotated[int, typer.Option("--tokens-out", min=1, help="mean output tokens per request")] = 256,
        ttft: Annotated[str, typer.Option("--ttft", help="bound on the p95 time to first token, e.g. '2 s'")] = "2 s",
        tpot: Annotated[str, typer.Option("--tpot", help="bound on the time per output token, e.g. '200 ms'")] = "200 ms",
        gpus_per_host: Annotated[int, typer.Option("--gpus-per-host", min=1, max=64, help="GPUs in one host")] = 8,
        precision: Annotated[str, typer.Option("--precision", help="weights and compute: fp16 or fp8")] = "fp16",
        kv_precision: Annotated[Optional[str], typer.Option("--kv-precision", help="KV cache: fp16 or fp8 (default: --precision)")] = None,
        bw_efficiency: Annotated[Optional[float], typer.Option("--bw-efficiency", help="achieved share of peak memory bandwidth (default 0.8, an estimate)")] = None,
        compute_efficiency: Annotated[Optional[float], typer.Option("--compute-efficiency", help="achieved share of peak tensor FLOP/s (default 0.6, an estimate)")] = None,
        json_out: JsonOpt = False,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="also write the answer to OUT/summary.json (a folder)")] = None,
        quiet: QuietOpt = False,
    ) -> None:
        """How many GPUs and hosts serve an LLM at a target output token rate, within p95 TTFT and TPOT bounds.

        Weights + KV cache decide the batch a replica holds; a roofline (decode memory-bound, prefill compute-bound)
        its speed; an M/M/c queue over the replicas' batch slots the time to first token."""
        from densim.cli.common import out_folder, write_result

        pr = Printer(as_json=json_out, quiet=quiet)
        folder = _guard(out_folder, out) if out is not None else None
        res = _guard(run_gpu_size, model=model, gpu=gpu, tokens_in=tokens_in, tokens_out=tokens_out,
                     tokens_per_s=tokens_per_s, ttft=ttft, tpot=tpot, gpus_per_host=gpus_per_host, precision=precision,
                     kv_precision=kv_precision, bw_efficiency=bw_efficiency, compute_efficiency=compute_efficiency,
                     requests_per_s=requests_per_s, kv_read=kv_read,
                     arch={"--params-b": params_b, "--layers": layers, "--kv-heads": kv_heads, "--head-dim": head_dim,
                           "--hidden-size": hidden_size, "--attention-heads": attention_heads})
        if folder is not None:
            _guard(write_result, folder, res)
        pr.json(res)
        _print(res, pr)

    app.add_typer(gpu_app, name="gpu")
