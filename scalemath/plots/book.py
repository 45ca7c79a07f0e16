"""The book's figures that plot a formula, redrawn by the engine from the catalog (``scalemath plot
--book-figure NAME``; ``--chip`` redraws one for another chip). Each entry names its chapter and section,
what it shows, and the settings the book used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import quantities as Q
from ..errors import BadValueError, UnknownNameError
from .common import Figure

__all__ = ["BookFigure", "FIGURES", "get", "make"]


@dataclass(frozen=True)
class BookFigure:
    name: str
    chapter: str
    shows: str
    chip: str  # the book's chip; --chip replaces it
    build: Callable[[list[str], object, object], Figure]  # (chips, hardware catalog, model catalog)


def _roofline(chips, catalog, _models):
    from . import roofline

    return roofline.data([Q.Context(chip=c, dtype="bf16", catalog=catalog) for c in chips])


def _matmul_batch(chips, catalog, _models):
    from . import roofline

    return roofline.batch_data(Q.Context(chip=chips[0], dtype="bf16", weight_dtype="int8", catalog=catalog),
                               [(4096, 4096), (1024, 1024)])


def _training(chips, catalog, _models):
    from . import training

    return training.data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog), 4096,
                         ["dp", "fsdp", "tp", "fsdp_tp"], {"D": 8192, "F": 4 * 8192})


def _decode(chips, catalog, models):
    from . import decode

    ctx = Q.Context(chip=chips[0], dtype="bf16", weight_dtype="int8", kv_dtype="int8", catalog=catalog,
                    model="llama3-70b", model_catalog=models)
    return decode.data(ctx, 16, [2048, 4096, 8192, 16384, 32768])


def _allgather(chips, catalog, _models):
    from . import collective

    return collective.data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog), "all-gather", 16)


def _gpu_allreduce(chips, catalog, _models):
    from . import gpu_collective

    return gpu_collective.data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog), "all-reduce")


def _sharp(chips, catalog, _models):
    from . import gpu_collective

    return gpu_collective.sharp_data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog))


def _ragged(chips, catalog, _models):
    from . import gpu_collective

    return gpu_collective.ragged_data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog))


def _serving(chips, catalog, models):
    from . import serving

    ctx = Q.Context(chip=chips[0], dtype="bf16", weight_dtype="int8", kv_dtype="int8", catalog=catalog,
                    model="llama3-70b", model_catalog=models)
    return serving.breakdown_data(ctx, 16, 8192)


def _pareto(chips, catalog, models):
    from . import pareto

    ctx = Q.Context(chip=chips[0], dtype="bf16", weight_dtype="int8", kv_dtype="int8", catalog=catalog,
                    model="llama3-70b", model_catalog=models)
    dims = ctx.get_chip().torus_dims or 2
    slices = ("4x4", "4x8", "8x8", "8x16") if dims == 2 else ("2x2x4", "2x4x4", "4x4x4", "4x4x8")
    return pareto.slices(ctx, list(slices), 8192)


def _layer_batch(chips, catalog, _models):
    from . import roofline

    return roofline.layer_batch_data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog), 8192, 32768, 4)


def _pop_quiz_3(chips, catalog, _models):
    from . import gpu_sharded

    return gpu_sharded.data(Q.Context(chip=chips[0], dtype="bf16", catalog=catalog))


FIGURES = {f.name: f for f in (
    BookFigure("roofline", "roofline.md, 'Visualizing rooflines'",
               "attainable FLOPs/s against arithmetic intensity, min(C, W_hbm·AI), the ridge at C / W_hbm "
               "(240 FLOP/byte on TPU v5e)", "tpu-v5e", _roofline),
    BookFigure("roofline-int8-matmul", "roofline.md, 'Worked problems' (question 3)",
               "FLOPs/s of an int8-weight, bf16-activation matmul against batch for D = F = 4096 and 1024; "
               "compute-bound from B* = 136 and 226 on TPU v5e", "tpu-v5e", _matmul_batch),
    BookFigure("training-comms", "training.md, 'Combining FSDP and Tensor Parallelism'",
               "compute against communication time for DP, FSDP, TP and FSDP + TP over the batch, on 4096 chips "
               "(TPU v5p 16x16x16) with D = 8192, F = 4D", "tpu-v5p", _training),
    BookFigure("inference-latency-throughput", "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'",
               "LLaMA 3-70B on 16 chips with int8 weights and KV cache, bf16 FLOPs: step time and throughput per "
               "chip against batch, for contexts 2k to 32k", "tpu-v5e", _decode),
    BookFigure("inference-pareto", "inference.md, 'Theoretical estimates for LLM latency and throughput' "
               "(the PaLM Pareto frontier)", "LLaMA 3-70B, int8 weights and KV cache, context 8192, on four slices under 1D "
               "tensor parallelism: throughput per chip against step time at every batch that fits, and the front "
               "(the book's figure is PaLM's, measured)",
               "tpu-v5e", _pareto),
    BookFigure("inference-batch-scaling", "inference.md, 'Appendix A: How real is the batch size > 240 rule?'",
               "a layer of D = 8192, F = 32768 sharded 4 ways: time and throughput against batch, flat on the weights' "
               "loading up to the critical batch (C/W = 240 on TPU v5e in bf16; 255 with the activations' "
               "bytes), then linear; the model behind the appendix's measured curves", "tpu-v5e", _layer_batch),
    BookFigure("sharding-allgather-latency", "sharding.md, the AllGather's cost on a ring (its latency-aware form)",
               "an AllGather's time and bandwidth against message size on a ring of 16 chips (the formula behind "
               "the chapter's measured v5e AllGather curve), latency-bound below N·t_hop·W_ici/2", "tpu-v5e",
               _allgather),
    BookFigure("gpu-allreduce-bandwidth", "gpus.md, 'Intra-node collectives' (the 8 x H100 AllReduce figure)",
               "an AllReduce over the GPUs of one NVLink node and across nodes against message size, at least the "
               "catalog's collective latency; the model behind the measured curve (SHARP off)", "h100",
               _gpu_allreduce),
    BookFigure("gpu-sharp-allreduce", "gpus.md, 'Intra-node collectives' (in-network reduction)",
               "AllReduce in one NVLink node as a ring and with SHARP against message size: 2(N-1)/N faster for "
               "large messages", "h100", _sharp),
    BookFigure("ragged-all-to-all", "gpus.md, 'Appendix B: More networking details'",
               "a ragged (top-k) AllToAll over 8 GPUs against k: the book's min(k/N, 1) approximation against the "
               "expected cost with random destinations", "h100", _ragged),
    BookFigure("gpu-pop-quiz-3", "gpus.md, 'Cross-node collectives' (Pop Quiz 3)",
               "a collective over X of bf16[8192_X, 32768_Y] within one scalable unit against the inner degree Y: "
               "flat up to the node's 8 GPUs, then 2DF / (Y x 50 GB/s)", "h100", _pop_quiz_3),
    BookFigure("serving-latency-breakdown", "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'",
               "LLaMA 3-70B on 16 chips, int8 weights and KV cache, context 8192: a decode step's time split into "
               "parameters, KV caches and FLOPs against batch (about 5.4 ms at batch 1, 20 ms at the largest)",
               "tpu-v5e", _serving),
)}


def get(name: str) -> BookFigure:
    try:
        return FIGURES[name]
    except KeyError:
        raise UnknownNameError("book figure", name, FIGURES, hint="'scalemath plot --list' lists them") from None


def make(name: str, chips: list[str] | None, catalog, models) -> Figure:
    """Book figure ``name`` on its own chip, or on ``chips``; a title that says which chapter it is from."""
    fig = get(name)
    chips = chips or [fig.chip]
    for chip in chips:
        catalog[chip]
    if len(chips) > 1 and name != "roofline":
        raise BadValueError(f"--book-figure {name} draws one chip; give one --chip (only 'roofline' takes several)")
    figure = fig.build(chips, catalog, models)
    import dataclasses

    return dataclasses.replace(figure, note=f"{fig.chapter}. {figure.note}")
