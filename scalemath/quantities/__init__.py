"""The registry of named quantities: the bridge between the engine and its users.

Each :class:`Quantity` has a dotted name, a unit, the engine function that
derives it, and its parameters; a parameter may be bound from the chosen chip,
dtype and level (``--chip``, ``--dtype``, ``--weight-dtype``, ``--level``). The
CLI's ``derive``/``solve``, the problem generators and ``scalemath quantities``
all go through :func:`get` and :func:`evaluate`.

>>> q = get("roofline.critical_intensity")
>>> evaluate(q, Context(chip="tpu-v5e", dtype="bf16")).value
9850/41
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Callable, Mapping

import sympy as sp

from ..catalog import hardware
from ..errors import BadValueError, UnknownNameError
from ..symbolic import collectives as coll
from ..symbolic import inference as inf
from ..symbolic import jax_collectives as jc
from ..symbolic import parallelism as par
from ..symbolic import roofline as rl
from ..symbolic import tpu
from ..symbolic import training_config as tcfg
from ..symbolic import transformer as tf
from ..symbolic.derivation import Derivation, Evaluated
from ..symbolic.symbols import SYMBOLS

__all__ = ["Context", "Param", "Quantity", "QUANTITIES", "get", "bind", "evaluate"]


@dataclass(frozen=True)
class Context:
    """What the user chose: a chip, dtypes, a level and their own values."""

    chip: str | None = None
    dtype: str | None = None
    weight_dtype: str | None = None
    level: str = "hbm"
    catalog: hardware.Catalog | None = field(default=None, compare=False)
    model: str | None = None
    model_catalog: object | None = field(default=None, compare=False)
    kv_dtype: str | None = None  # the KV cache's dtype; the activations' (--dtype) when None

    def get_model(self):
        if self.model is None:
            return None
        from ..catalog import models

        return models.get_model(self.model, self.model_catalog)

    def get_chip(self) -> hardware.Chip | None:
        return None if self.chip is None else hardware.get_chip(self.chip, self.catalog)

    @property
    def compute_dtype(self) -> str | None:
        if self.dtype is None and self.chip is None and self.weight_dtype is None and self.model is None:
            return None  # nothing chosen: byte sizes stay symbolic
        return self.dtype or "bf16"

    @property
    def act_dtype(self) -> str | None:
        return self.compute_dtype

    @property
    def cache_dtype(self) -> str | None:
        return self.kv_dtype or self.act_dtype


Binder = Callable[[Context], "int | Fraction | None"]


def _chip_value(get_value: Callable[[hardware.Chip, Context], object]) -> Binder:
    def bind_from(ctx: Context):
        chip = ctx.get_chip()
        return None if chip is None else get_value(chip, ctx)
    return bind_from


def _attr(name: str) -> Binder:
    def get_value(chip: hardware.Chip, ctx: Context):
        value = getattr(chip, name)
        if value is None:
            raise BadValueError(f"{chip.key} has no {name} in the catalog; give it with --set")
        return value
    return _chip_value(get_value)


def _axis(i: int) -> Binder:
    def get_value(chip: hardware.Chip, ctx: Context):
        if chip.pod_shape is None:
            return None  # a GPU (no torus): X, Y, Z are the user's to give with --set
        return chip.pod_shape[i] if i < len(chip.pod_shape) else 1
    return _chip_value(get_value)


def _dtype_bytes(which: str) -> Binder:
    def bind_from(ctx: Context):
        dtype = ctx.weight_dtype if which == "w" and ctx.weight_dtype else ctx.act_dtype
        return None if dtype is None else hardware.dtype_bytes(dtype)
    return bind_from


FLOPS_RATE = _chip_value(lambda chip, ctx: chip.flops(ctx.compute_dtype))
BANDWIDTH = _chip_value(lambda chip, ctx: chip.bandwidth(ctx.level))
LINK = _chip_value(lambda chip, ctx: chip.bandwidth("ici-link"))
HOP = _chip_value(lambda chip, ctx: chip.hop_latency_s)
MXUS = _chip_value(lambda chip, ctx: (chip.cores_per_chip or 1) * chip.mxus_per_core
                   if chip.mxus_per_core else None)
ICI_AXIS = _chip_value(lambda chip, ctx: chip.bandwidth("ici"))


def _node_egress(chip: hardware.Chip, ctx: Context):
    if chip.nic_bytes_per_s is None or chip.nvlink_domain is None:
        raise BadValueError(f"{chip.key} has no NIC bandwidth or NVLink domain size in the catalog; "
                            "give W_node with --set")
    return chip.nic_bytes_per_s * chip.nvlink_domain


NODE_EGRESS = _chip_value(_node_egress)

def _model_field(name: str) -> Binder:
    def bind_from(ctx: Context):
        model = ctx.get_model()
        if model is not None and name in ("K", "H") and model.is_mla:
            raise BadValueError(
                f"{model.key} uses multi-head latent attention: the book's forms in K and H do not describe "
                f"its attention weights or its KV cache ({model.kv_elements_per_token()} cached elements per "
                f"token); 'serve' and inference.memory.* use the model's own cache size")
        return None if model is None else getattr(model, name)
    return bind_from


def _kv_bytes_per_element(ctx: Context):
    dtype = ctx.cache_dtype
    return None if dtype is None else hardware.dtype_bytes(dtype)


def _kv_bytes_per_token(ctx: Context):
    """The model's cached elements per token (latent attention included) times the cache dtype's bytes."""
    model, per_element = ctx.get_model(), _kv_bytes_per_element(ctx)
    return None if model is None or per_element is None else model.kv_elements_per_token() * per_element


def _model_params(ctx: Context):
    model = ctx.get_model()
    return None if model is None else model.param_count()


def _model_active_params(ctx: Context):
    model = ctx.get_model()
    return None if model is None else model.param_count(active=True)


def _architecture(value_of: Callable[[object], int], book: int) -> Binder:
    """A symbol for a piece of architecture: the model's value, or the book's without a model."""
    def bind_from(ctx: Context):
        model = ctx.get_model()
        return book if model is None else value_of(model)
    return bind_from


def _extra_params(form: str) -> Binder:
    """Per-layer parameters besides the matrices and two norms, from the model's fields: biases,
    QK-norm scales, attention sinks, extra norms; ``form`` is "dense", "total" or "active"."""
    def bind_from(ctx: Context):
        m = ctx.get_model()
        if m is None:
            return 0
        attention = (m.qkv_bias * (m.N + 2 * m.K) * m.H + m.o_bias * m.D + m.attention_sinks * m.N
                     + m.qk_norm * 2 * m.H)
        norms = (m.norms_per_layer - 2) * m.D
        mlp_bias = m.mlp_bias * (((3 if m.gated else 2) - 1) * m.F + m.D)  # every matrix's bias, per MLP
        experts = {"dense": 1, "total": m.E, "active": m.k}[form] if m.is_moe else 1
        return attention + norms + experts * mlp_bias + (m.router_bias * m.E if m.is_moe else 0)
    return bind_from


#: Names of the dense forms' MoE counterparts, for the error that refuses an MoE model.
MOE_COUNTERPARTS: Mapping[str, str] = MappingProxyType({
    "transformer.params": "transformer.moe_params (all experts) or transformer.active_params (k per token)",
    "transformer.params_per_layer": "transformer.moe_params or transformer.active_params",
    "transformer.mlp_params": "transformer.moe_mlp_params or transformer.moe_active_mlp_params",
    "transformer.flops_per_token": "transformer.moe_flops_per_token",
    "transformer.forward_flops_per_token": "transformer.moe_forward_flops_per_token",
    "transformer.matmul_flops_per_token": "transformer.moe_flops_per_token",
    "transformer.mlp_flops": "transformer.moe_flops_per_token",
})


def _mlp_width(quantity: str, moe_form: bool, in_result: bool) -> Binder:
    """F from the model, refused where the quantity's form does not describe the model's MLPs."""
    def bind_from(ctx: Context):
        model = ctx.get_model()
        if model is None:
            return None
        if model.is_moe and not moe_form:
            other = MOE_COUNTERPARTS.get(quantity)
            hint = f"use {other}" if other else "this form has one dense MLP per layer"
            raise BadValueError(f"{model.key} is a mixture of experts (E = {model.E}, k = {model.k}): {quantity} "
                                f"counts one dense MLP per layer; {hint}")
        if model.is_moe and in_result and not model.is_mla and (model.dense_layers or model.shared_experts):
            raise BadValueError(
                f"{model.key} has {model.dense_layers} dense leading layers and {model.shared_experts} shared "
                f"experts, which {quantity}'s closed form has no term for; its counts come from the model's own "
                f"accounting ('scalemath models show {model.key}': {model.param_count():,} parameters, "
                f"{model.param_count(active=True):,} active), which P and P_active carry")
        return model.F
    return bind_from


def _field(name: str) -> Binder:
    """A catalog field of the chip; an error naming the chip and the field when it is missing."""
    return _chip_value(lambda chip, ctx: chip.require(name))


def _switch(which: str, attr: str) -> Binder:
    """A field of the chip's NVLink (``which="nvlink"``) or scale-out (``"scaleout"``) switch."""
    return _chip_value(lambda chip, ctx: getattr(
        (ctx.catalog or hardware.default_catalog()).chip_switch(chip, which), attr))


def _tensor_cores_per_sm(chip: hardware.Chip, ctx: Context):
    return Fraction(chip.require("tensor_cores"), chip.require("sms"))


#: Symbols of the chip's inside and surroundings (SMs, registers, Tensor and CUDA cores, the TPU's vector
#: unit, links, switches, racks, scalable units), bound from --chip for every quantity that uses them.
#: W_link is one ICI link of a TPU (DEFAULT_BINDERS binds it from the ici-link level); W_nvl is one NVLink link.
HARDWARE_BINDERS: Mapping[str, Binder] = MappingProxyType({
    "n_sm": _field("sms"), "n_sub": _field("subpartitions_per_sm"),
    "n_lane": _field("cuda_cores_per_subpartition"), "n_tc": _chip_value(_tensor_cores_per_sm),
    "n_reg": _field("registers_per_subpartition"), "b_reg": lambda ctx: 4,
    "r_thread": _field("max_registers_per_thread"), "n_warp": _field("max_warps_per_sm"),
    "M_smem": _field("smem_bytes"), "M_l2": _field("l2_bytes"), "W_l2": _field("l2_bytes_per_s"),
    "f_boost": _field("boost_clock_hz"), "F_tc": _field("tensor_core_flops_per_cycle"),
    "C_vec": _chip_value(lambda chip, ctx: chip.flops("fp32")),
    "n_sublane": _field("vpu_sublanes"), "n_vlane": _field("vpu_lanes"), "n_alu": _field("vpu_alus_per_lane"),
    "n_ici": _field("ici_links"), "n_nvl": _field("nvlink_links"), "W_nvl": _field("nvlink_link_bytes_per_s"),
    "W_nic": _field("nic_bytes_per_s"),
    "n_nvs": _field("nvswitches"), "k_nvs": _switch("nvlink", "ports"),
    "k_sw": _switch("scaleout", "ports"), "W_port": _switch("scaleout", "port_bytes_per_s"),
    "n_rack": _field("rack_chips"), "D_leaf": _field("su_nodes"),
    "W_hbm": _field("hbm_bytes_per_s"), "W_vmem": _field("vmem_bytes_per_s"),
    "W_pcie": _field("pcie_bytes_per_s"),
})


DEFAULT_BINDERS: Mapping[str, Binder] = MappingProxyType({
    "P": _model_params, "P_active": _model_active_params,
    "P_exp": lambda ctx: None if ctx.get_model() is None else ctx.get_model().expert_param_count(),
    "L_moe": lambda ctx: None if ctx.get_model() is None else ctx.get_model().moe_layers,
    "n_mlp": _architecture(lambda m: 3 if m.gated else 2, 3),
    "n_emb": _architecture(lambda m: 1 if m.tied else 2, 2),
    **{sym_name: _model_field(f) for sym_name, f in {"D": "D", "F": "F", "N": "N", "K": "K", "H": "H", "L": "L",
                                                      "V_vocab": "V", "E": "E", "k": "k"}.items()},
    "C": FLOPS_RATE, "W": BANDWIDTH, "W_link": LINK, "t_hop": HOP,
    "b_x": _dtype_bytes("x"), "b_o": _dtype_bytes("x"), "b_w": _dtype_bytes("w"),
    "X": _axis(0), "Y": _axis(1), "Z": _axis(2),
    "host": _attr("host_chips"), "cores": _attr("cores_per_chip"), "H_chip": _attr("hbm_bytes"),
    "s_mxu": _attr("mxu_side"), "n_mxu": MXUS, "f_clk": _attr("clock_hz"),
    # collectives: ICI per axis (both directions), NVLink per GPU, scale-out per node
    "W_ici": ICI_AXIS, "W_gpu": _attr("nvlink_bytes_per_s"), "W_node": NODE_EGRESS,
    "D_node": _attr("nvlink_domain"),
    # parallelism across pods: DCN egress per chip (a GPU's scale-out NIC)
    "W_dcn": _chip_value(lambda chip, ctx: chip.bandwidth("dcn")),
    # serving: the KV cache in its own dtype (Context.kv_dtype, else --dtype), the chip's hourly price
    "b_kv": _kv_bytes_per_element, "kv_token": _kv_bytes_per_token,
    "price": _attr("price_cents_per_hour"), "t_hour": lambda ctx: 3600,
    **HARDWARE_BINDERS,
})


@dataclass(frozen=True)
class Param:
    name: str
    binder: Binder | None = None

    @property
    def symbol(self) -> sp.Symbol:
        return SYMBOLS[self.name].symbol

    @property
    def info(self):
        return SYMBOLS[self.name]


@dataclass(frozen=True)
class Quantity:
    name: str
    build: Callable[[], Derivation]
    topic: str
    uses_level: bool = False

    @property
    def derivation(self) -> Derivation:
        return _derivation(self)

    @property
    def title(self) -> str:
        return self.derivation.title

    @property
    def unit(self) -> str:
        return self.derivation.unit

    @property
    def source(self) -> str:
        return self.derivation.source

    @property
    def params(self) -> tuple[Param, ...]:
        return _params_of(self)

    def _binder(self, name: str) -> Binder | None:
        # X, Y, Z are a pod's torus axes only for the pod quantities; elsewhere they are mesh or
        # parallelism degrees that the user chooses
        if name in ("X", "Y", "Z") and self.topic != "tpu":
            return None
        if name == "P_extra":
            symbols = {s.name for s in self.derivation.symbols}
            return _extra_params("total" if "E" in symbols else "active" if "k" in symbols else "dense")
        if name == "F" and self.topic == "transformer":
            symbols = {s.name for s in self.derivation.symbols}
            in_result = any(s.name == "F" for s in self.derivation.expr.free_symbols)
            return _mlp_width(self.name, moe_form=bool(symbols & {"E", "k"}), in_result=in_result)
        return DEFAULT_BINDERS.get(name)


@functools.cache
def _derivation(q: Quantity) -> Derivation:
    """``q.build()``, built once per process and kept between runs in scalemath's cache folder (keyed by the
    package's files, see :mod:`scalemath.cache`): building the derivations a command uses was most of a
    cold run. Read back, a derivation is the same SymPy objects, so the output does not change."""
    from .. import cache

    if QUANTITIES.get(q.name) is not q:  # not the registered quantity of that name: nothing to share
        return q.build()
    return cache.kept("derivation", q.name, q.build, Derivation)


@functools.cache
def _params_of(q: Quantity) -> tuple[Param, ...]:
    names = sorted(s.name for s in q.derivation.symbols)
    return tuple(Param(n, q._binder(n)) for n in names)


def _q(name: str, build: Callable[[], Derivation], topic: str, *, level: bool = False) -> tuple[str, Quantity]:
    return name, Quantity(name, build, topic, level)


def _parallel_layer_costs() -> list[tuple[str, Quantity]]:
    """Per-layer compute and communication of each parallelism scheme, forward and backward, and per step."""
    out = []
    for name, key, tail in (("dp", "dp", ""), ("fsdp", "fsdp", ""), ("tp", "tp", ""), ("fsdp_tp", "fsdp_tp", ""),
                            ("fsdp_tp", "fsdp_tp_sum", "_sum_policy"), ("dcn", "dcn", "")):
        scheme = par.SCHEMES[key]
        for phase in par.PHASES:
            ph = getattr(scheme, phase)
            if ph is None:
                continue
            if not tail:
                out.append(_q(f"parallel.{name}.t_math_{phase}", (lambda k=key, p=phase: par.t_math(k, p)),
                              "parallelism"))
            if ph.comms:
                out.append(_q(f"parallel.{name}.t_comms_{phase}{tail}", (lambda k=key, p=phase: par.t_comms(k, p)),
                              "parallelism"))
        if scheme.fwd is not None and scheme.bwd is not None:
            out.append(_q(f"parallel.{name}.t_step{tail}", (lambda k=key: par.t_step(k)), "parallelism"))
    return out


def _inference_quantities() -> list[tuple[str, Quantity]]:
    """Serving: KV cache, memory, decode and prefill bounds, model parallelism, disaggregation, cost."""
    from ..symbolic import decode_comms as dc

    def q(name, build, level=False):
        return _q(f"inference.{name}", build, "inference", level=level)
    return [
        q("kv_cache.bytes_per_token", inf.kv_cache_bytes_per_token),
        q("kv_cache.bytes_per_sequence", inf.kv_cache_bytes_per_sequence),
        q("kv_cache.bytes_per_batch", inf.kv_cache_bytes_per_batch),
        q("kv_cache.bytes_per_chip", inf.kv_cache_bytes_per_chip),
        q("memory.kv_budget", inf.kv_budget),
        q("memory.max_batch", inf.max_batch),
        q("memory.min_chips", inf.min_chips),
        q("memory.min_chips_weights", inf.min_chips_weights),
        q("decode.flops", inf.decode_flops),
        q("decode.bytes", inf.decode_bytes),
        q("decode.t_math", inf.decode_t_math),
        q("decode.t_weights", inf.decode_t_weights, level=True),
        q("decode.t_kv", inf.decode_t_kv, level=True),
        q("decode.step_time", inf.decode_step_time, level=True),
        q("decode.step_time_memory_bound", inf.decode_step_time_memory_bound, level=True),
        q("decode.step_time_full_hbm", inf.decode_step_time_full_hbm, level=True),
        q("decode.token_latency", inf.decode_token_latency, level=True),
        q("decode.throughput", inf.decode_throughput, level=True),
        q("decode.throughput_per_chip", inf.decode_throughput_per_chip, level=True),
        q("decode.throughput_memory_bound", inf.decode_throughput_memory_bound, level=True),
        q("decode.critical_batch", inf.decode_critical_batch, level=True),
        q("decode.critical_batch_moe", inf.decode_critical_batch_moe, level=True),
        q("moe.experts_touched", inf.moe_experts_touched),
        q("moe.expert_bytes_loaded", inf.moe_weight_bytes_loaded),
        q("decode.kv_weights_batch", inf.decode_kv_weights_batch),
        q("decode.kv_math_context", inf.decode_kv_math_context, level=True),
        q("decode.generation_time", inf.generation_time),
        q("decode.queries_per_s_per_chip", inf.queries_per_s_per_chip),
        q("prefill.flops", inf.prefill_flops),
        q("prefill.flops_with_attention", inf.prefill_flops_with_attention),
        q("prefill.bytes", inf.prefill_bytes),
        q("prefill.t_math", inf.prefill_t_math),
        q("prefill.t_lower", inf.prefill_t_lower, level=True),
        q("prefill.time", inf.prefill_time),
        q("prefill.critical_tokens", inf.prefill_critical_tokens, level=True),
        q("prefill.activation_bytes", inf.prefill_activation_bytes),
        q("attention.intensity", inf.attention_intensity),
        q("attention.intensity_prefill", inf.attention_intensity_prefill),
        q("attention.intensity_decode", inf.attention_intensity_decode),
        q("attention.prefill_critical_T", inf.attention_prefill_critical_T, level=True),
        q("tp.t_math", inf.tp_t_math),
        q("tp.t_weights", inf.tp_t_weights, level=True),
        q("tp.t_ici", inf.tp_t_ici),
        q("tp.t_ici_latency_aware", inf.tp_t_ici_latency_aware),
        q("tp.max_degree_memory_bound", inf.tp_max_degree_memory_bound, level=True),
        q("tp.max_degree_compute_bound", inf.tp_max_degree_compute_bound),
        q("tp.t_comms_1d", inf.tp_t_comms_1d),
        q("tp.latency_bound_bytes", inf.tp_latency_bound_bytes),
        q("tp.latency_bound_degree", inf.tp_latency_bound_degree),
        q("ws2d.t_math", inf.ws2d_t_math),
        q("ws2d.t_comms", inf.ws2d_t_comms),
        q("ws2d.x_opt", inf.ws2d_x_opt),
        q("ws2d.t_comms_opt", inf.ws2d_t_comms_opt),
        q("ws2d.min_chips", inf.ws2d_min_chips),
        q("serving.prefill_to_generate_ratio", inf.prefill_to_generate_ratio),
        q("serving.tokens_freed_per_step", inf.tokens_freed_per_step),
        q("cost.per_million_tokens", inf.cost_per_million_tokens),
        q("cost.flops_per_dollar", inf.flops_per_dollar),
        q("decode.t_comms", dc.decode_t_comms),
        q("decode.t_comms_gpu", dc.decode_t_comms_gpu),
        q("decode.t_comms_2d", dc.decode_t_comms_2d),
        q("decode.t_comms_ep", dc.decode_t_comms_ep),
        q("decode.t_comms_ep_gpu", dc.decode_t_comms_ep_gpu),
        q("decode.step_time_comms", dc.decode_step_time_comms, level=True),
        q("decode.step_time_overlap", dc.decode_step_time_overlap, level=True),
        q("serving.prefill_servers", dc.prefill_servers),
        q("cost.per_million_tokens_disaggregated", dc.cost_per_million_tokens_disaggregated),
        q("speculative.speedup", inf.speculative_speedup_measured),
        *(q(f"speculative.speedup_draft{g}", (lambda g=g: inf.speculative_speedup(g)))
          for g in inf.SPECULATIVE_DRAFTS),
    ]


def _hardware_quantities() -> list[tuple[str, Quantity]]:
    """Inside a chip (SMs, registers, Tensor and CUDA cores; the TPU's vector unit), ratios between levels, the
    NVLink node and the scale-out fat tree (gpus.md, tpus.md): their symbols are bound from the chip's catalog
    fields and switches by DEFAULT_BINDERS (HARDWARE_BINDERS); a missing field is an error naming the chip and
    the field."""
    from ..symbolic import chip_internals as ci
    from ..symbolic import topology as topo

    def q(name, build, topic):
        return _q(name, build, topic)

    gpu = [
        q("gpu.sm.cuda_cores", ci.sm_cuda_cores, "gpu"),
        q("gpu.cuda_cores", ci.cuda_cores, "gpu"),
        q("gpu.warp_schedulers", ci.warp_schedulers, "gpu"),
        q("gpu.tensor_cores", ci.tensor_cores, "gpu"),
        q("gpu.sm.register_bytes", ci.sm_register_bytes, "gpu"),
        q("gpu.register_bytes", ci.register_bytes, "gpu"),
        q("gpu.smem_bytes", ci.smem_bytes, "gpu"),
        q("gpu.onchip_bytes", ci.onchip_bytes, "gpu"),
        q("gpu.sm.l2_bytes", ci.sm_l2_bytes, "gpu"),
        q("gpu.sm.resident_warps", ci.resident_warps, "gpu"),
        q("gpu.sm.tensor_flops_per_s", ci.sm_tensor_flops, "gpu"),
        q("gpu.tensor_core.flops_per_cycle", ci.tensor_core_flops_per_cycle, "gpu"),
        q("gpu.tensor_core.implied_clock", ci.tensor_core_implied_clock, "gpu"),
        q("gpu.vector.flops_per_s", ci.vector_flops, "gpu"),
        q("gpu.vector.flops_per_s_boost", lambda: ci.vector_flops("boost"), "gpu"),
        q("gpu.vector.fma_flops_per_s", lambda: ci.vector_flops("boost", fma=True), "gpu"),
        q("gpu.vector.fma_flops_per_s_base", lambda: ci.vector_flops("base", fma=True), "gpu"),
        q("gpu.vector.implied_clock", ci.vector_implied_clock, "gpu"),
        q("gpu.vector.tensor_ratio", ci.tensor_to_vector_ratio, "gpu"),
        q("gpu.vector.tensor_ratio_no_fma", ci.tensor_to_vector_ratio_no_fma, "gpu"),
        q("gpu.vector.hbm_intensity_no_fma", ci.vector_critical_intensity_no_fma, "gpu"),
        *(q(f"gpu.ratio.{r}", (lambda r=r: ci.bandwidth_ratio(r)), "gpu")
          for r in ("l2_to_hbm", "hbm_to_nvlink", "nvlink_to_nic")),
        # the NVLink node
        q("gpu.nvlink.egress", topo.nvlink_egress, "gpu"),
        q("gpu.node.gpu_links", topo.node_gpu_links, "gpu"),
        q("gpu.node.switch_ports", topo.node_switch_ports, "gpu"),
        q("gpu.node.switch_capacity", topo.node_switch_capacity, "gpu"),
        q("gpu.node.gpu_capacity", topo.node_gpu_capacity, "gpu"),
        q("gpu.node.capacity", topo.node_capacity, "gpu"),
        q("gpu.node.bisection", topo.node_bisection, "gpu"),
        q("gpu.node.egress", topo.node_egress, "gpu"),
        # the scale-out fat tree
        q("gpu.cluster.nodes", topo.cluster_nodes, "gpu"),
        q("cluster.racks", topo.cluster_racks, "gpu"),
        q("gpu.su.gpus", topo.su_gpus, "gpu"),
        q("gpu.su.leaf_switches", topo.su_leaf_switches, "gpu"),
        q("gpu.su.node_capacity", topo.su_node_capacity, "gpu"),
        q("gpu.su.leaf_capacity", topo.su_leaf_capacity, "gpu"),
        q("gpu.su.uplink", topo.su_uplink, "gpu"),
        q("gpu.cluster.units", topo.scalable_units, "gpu"),
        q("gpu.cluster.leaf_switches", topo.leaf_switches, "gpu"),
        q("gpu.cluster.spine_switches", topo.spine_switches, "gpu"),
        q("gpu.cluster.cables_per_leaf_spine", topo.cables_per_leaf_spine, "gpu"),
        q("gpu.cluster.switches", topo.switches_total, "gpu"),
        q("gpu.cluster.max_gpus_two_level", topo.max_gpus_two_level, "gpu"),
        q("gpu.cluster.spine_switches_three_level", topo.three_level_spine_switches, "gpu"),
        q("gpu.cluster.core_switches_three_level", topo.three_level_core_switches, "gpu"),
        q("gpu.switch.capacity", topo.switch_capacity, "gpu"),
        q("gpu.cluster.spine_capacity", topo.spine_capacity, "gpu"),
        q("gpu.cluster.spine_capacity_per_node", topo.spine_capacity_per_node, "gpu"),
        q("gpu.dp.effective_bandwidth", topo.dp_effective_bandwidth, "gpu"),
        q("gpu.sharp.bytes_per_gpu", topo.sharp_bytes_per_gpu, "gpu"),
        q("gpu.sharp.switch_bytes", topo.sharp_switch_bytes, "gpu"),
        q("gpu.sharp.sharded_switch_bytes", topo.sharp_sharded_switch_bytes, "gpu"),
        q("gpu.sharp.sharded_time", topo.sharp_sharded_time, "gpu"),
    ]
    tpu_side = [
        q("tpu.vpu.alus_per_core", ci.vpu_alus_per_core, "tpu"),
        q("tpu.vpu.alus", ci.vpu_alus, "tpu"),
        q("tpu.vpu.flops_per_s_per_core", ci.vpu_flops_per_core, "tpu"),
        q("tpu.vpu.flops_per_s", ci.vpu_flops, "tpu"),
        q("tpu.vpu.mxu_ratio", ci.vpu_mxu_ratio, "tpu"),
        q("tpu.ici.egress", ci.ici_egress, "tpu"),
        q("pod.hbm_bytes_per_s", ci.slice_hbm_bandwidth, "tpu"),
        *(q(f"tpu.ratio.{r}", (lambda r=r: ci.bandwidth_ratio(r)), "tpu")
          for r in ("vmem_to_hbm", "hbm_to_ici", "hbm_to_ici_egress", "ici_to_dcn", "ici_to_pcie")),
    ]
    return gpu + tpu_side


QUANTITIES: Mapping[str, Quantity] = MappingProxyType(dict([
    _q("roofline.t_math", rl.t_math, "roofline"),
    _q("roofline.t_comms", rl.t_comms, "roofline", level=True),
    _q("roofline.t_lower", rl.t_lower, "roofline", level=True),
    _q("roofline.t_upper", rl.t_upper, "roofline", level=True),
    _q("roofline.intensity", rl.intensity, "roofline"),
    _q("roofline.critical_intensity", rl.critical_intensity, "roofline", level=True),
    _q("roofline.attainable_flops", rl.attainable, "roofline", level=True),
    _q("dot.flops", rl.dot_flops, "roofline"),
    _q("dot.bytes", rl.dot_bytes, "roofline"),
    _q("dot.intensity", rl.dot_intensity, "roofline"),
    _q("dot.intensity_limit", rl.dot_intensity_limit, "roofline"),
    _q("matmul.flops", rl.matmul_flops, "roofline"),
    _q("matmul.bytes", rl.matmul_bytes, "roofline"),
    _q("matmul.bytes_loaded", rl.matmul_bytes_loaded, "roofline"),
    _q("matmul.bytes_stored", rl.matmul_bytes_stored, "roofline"),
    _q("matmul.tiled.bytes", rl.tiled_matmul_bytes, "roofline"),
    _q("matmul.tiled.intensity", rl.tiled_matmul_intensity, "roofline"),
    _q("matmul.intensity", rl.matmul_intensity, "roofline"),
    _q("matmul.intensity_approx", rl.matmul_intensity_approx, "roofline"),
    _q("matmul.t_math", rl.matmul_t_math, "roofline"),
    _q("matmul.t_comms", rl.matmul_t_comms, "roofline", level=True),
    _q("matmul.t_lower", rl.matmul_t_lower, "roofline", level=True),
    _q("matmul.t_upper", rl.matmul_t_upper, "roofline", level=True),
    _q("matmul.critical_batch", rl.matmul_critical_batch, "roofline", level=True),
    _q("matmul.critical_batch_approx", rl.matmul_critical_batch_approx, "roofline", level=True),
    _q("matmul.batched_weights_intensity", rl.batched_weights_intensity, "roofline"),
    _q("matmul.tile_intensity", rl.tile_intensity, "roofline"),
    _q("network.split_matmul.t_math", rl.split_matmul_t_math, "roofline"),
    _q("network.split_matmul.t_comms", rl.split_matmul_t_comms, "roofline"),
    _q("network.split_matmul.critical_d", rl.split_matmul_critical_d, "roofline"),
    _q("batch.total_tokens", tpu.token_batch_total, "roofline"),
    _q("batch.local_tokens", tpu.token_batch_local, "roofline"),
    _q("torus.max_hops_wraparound", lambda: tpu.ring_hops(True), "tpu"),
    _q("torus.max_hops_no_wraparound", lambda: tpu.ring_hops(False), "tpu"),
    _q("pod.chips", tpu.pod_chips, "tpu"),
    _q("pod.hosts", tpu.pod_hosts, "tpu"),
    _q("pod.cores", tpu.pod_cores, "tpu"),
    _q("pod.flops_per_s", tpu.pod_flops, "tpu"),
    _q("pod.hbm_bytes", tpu.pod_hbm, "tpu"),
    _q("transfer.time", tpu.transfer_time, "tpu", level=True),
    _q("ici.p2p_time", tpu.p2p_time, "tpu"),
    _q("mxu.flops_per_cycle", tpu.mxu_flops_per_cycle, "tpu"),
    _q("mxu.peak_flops_per_s", tpu.mxu_peak, "tpu"),
    _q("hbm.weights_load_time", tpu.weights_load_time, "tpu", level=True),
    # collectives on TPU rings and tori (sharding.md)
    _q("collective.all_gather.time", coll.all_gather_time, "collectives"),
    _q("collective.all_gather.time_approx", coll.all_gather_time_approx, "collectives"),
    _q("collective.all_gather.time_multi_axis", coll.all_gather_time_multi_axis, "collectives"),
    _q("collective.all_gather.time_no_wraparound", coll.all_gather_time_no_wraparound, "collectives"),
    _q("collective.all_gather.time_unidirectional", coll.all_gather_time_unidirectional, "collectives"),
    _q("collective.all_gather.latency_aware", coll.all_gather_latency_aware, "collectives"),
    _q("collective.all_gather.latency_aware_xy", lambda: coll.all_gather_latency_aware_axes(2), "collectives"),
    _q("collective.all_gather.latency_aware_xyz", lambda: coll.all_gather_latency_aware_axes(3), "collectives"),
    _q("collective.all_gather.latency_aware_no_wraparound", coll.all_gather_latency_aware_no_wraparound,
       "collectives"),
    _q("collective.reduce_scatter.time", coll.reduce_scatter_time, "collectives"),
    _q("collective.reduce_scatter.time_approx", coll.reduce_scatter_time_approx, "collectives"),
    _q("collective.reduce_scatter.time_multi_axis", coll.reduce_scatter_time_multi_axis, "collectives"),
    _q("collective.reduce_scatter.time_no_wraparound", coll.reduce_scatter_time_no_wraparound, "collectives"),
    _q("collective.reduce_scatter.time_unidirectional", coll.reduce_scatter_time_unidirectional, "collectives"),
    _q("collective.all_reduce.time", coll.all_reduce_time, "collectives"),
    _q("collective.all_reduce.time_approx", coll.all_reduce_time_approx, "collectives"),
    _q("collective.all_reduce.time_multi_axis", coll.all_reduce_time_multi_axis, "collectives"),
    _q("collective.all_reduce.time_no_wraparound", coll.all_reduce_time_no_wraparound, "collectives"),
    _q("collective.all_reduce.time_unidirectional", coll.all_reduce_time_unidirectional, "collectives"),
    _q("collective.all_to_all.time", coll.all_to_all_time, "collectives"),
    _q("collective.all_to_all.time_approx", coll.all_to_all_time_approx, "collectives"),
    _q("collective.all_to_all.time_torus", coll.all_to_all_time_torus, "collectives"),
    _q("collective.all_to_all.time_unidirectional", coll.all_to_all_time_unidirectional, "collectives"),
    _q("collective.latency_threshold", coll.latency_threshold, "collectives"),
    _q("collective.all_gather.bidirectional_speedup", coll.all_gather_bidirectional_speedup, "collectives"),
    _q("collective.all_to_all.bidirectional_speedup", coll.all_to_all_bidirectional_speedup, "collectives"),
    # the JAX chapter (jax-stuff.md): shard_map's collectives under their jax.lax names, the collective matmul
    *(_q(f"jax.{name}.{form}", getattr(jc, f"{name}_{fn}"), "jax")
      for name in ("psum", "all_gather", "psum_scatter", "all_to_all")
      for form, fn in (("time", "time"), ("time_exact", "time_exact"))),
    _q("jax.ppermute.time", jc.ppermute_time, "jax"),
    _q("jax.ppermute.time_latency", jc.ppermute_time_latency, "jax"),
    _q("jax.collective_matmul.flops", jc.collective_matmul_flops, "jax"),
    _q("jax.collective_matmul.t_chunk", jc.collective_matmul_chunk_math, "jax"),
    _q("jax.collective_matmul.t_ppermute", jc.collective_matmul_chunk_comms, "jax"),
    _q("jax.collective_matmul.time", jc.collective_matmul_time, "jax"),
    _q("jax.collective_matmul.time_bidirectional", jc.collective_matmul_time_bidirectional, "jax"),
    _q("jax.collective_matmul.time_naive", jc.collective_matmul_time_naive, "jax"),
    _q("jax.collective_matmul.speedup", jc.collective_matmul_speedup, "jax"),
    _q("jax.collective_matmul.critical_f", jc.collective_matmul_critical_f, "jax"),
    _q("jax.collective_matmul.critical_f_bidirectional", jc.collective_matmul_critical_f_bidirectional, "jax"),
    # collectives on GPUs: NVLink nodes and fat trees (gpus.md)
    _q("gpu.all_gather.time", coll.gpu_all_gather_time, "gpu"),
    _q("gpu.all_gather.time_approx", coll.gpu_all_gather_time_approx, "gpu"),
    _q("gpu.reduce_scatter.time", coll.gpu_reduce_scatter_time, "gpu"),
    _q("gpu.all_reduce.time", coll.gpu_all_reduce_time, "gpu"),
    _q("gpu.all_reduce.sharp_time", coll.gpu_all_reduce_sharp_time, "gpu"),
    _q("gpu.all_reduce.sharp_speedup", coll.gpu_sharp_speedup, "gpu"),
    _q("gpu.all_reduce.time_measured", coll.gpu_all_reduce_time_measured, "gpu"),
    _q("gpu.all_reduce.bus_bandwidth", coll.gpu_all_reduce_bus_bandwidth, "gpu"),
    _q("gpu.all_gather.bus_bandwidth", coll.gpu_all_gather_bus_bandwidth, "gpu"),
    _q("gpu.all_to_all.time", coll.gpu_all_to_all_time, "gpu"),
    _q("gpu.all_to_all.ragged_time", coll.gpu_ragged_all_to_all_time, "gpu"),
    _q("gpu.all_to_all.ragged_time_exact", coll.gpu_ragged_all_to_all_time_exact, "gpu"),
    _q("gpu.all_gather.cross_node_time", coll.gpu_all_gather_cross_node_time, "gpu"),
    _q("gpu.reduce_scatter.cross_node_time", coll.gpu_reduce_scatter_cross_node_time, "gpu"),
    _q("gpu.all_reduce.cross_node_time", coll.gpu_all_reduce_cross_node_time, "gpu"),
    _q("gpu.fat_tree.time", coll.gpu_fat_tree_time, "gpu"),
    _q("gpu.fat_tree.bandwidth", coll.gpu_fat_tree_bandwidth, "gpu"),
    _q("gpu.all_to_all.cross_node_time", coll.gpu_all_to_all_cross_node_time, "gpu"),
    _q("gpu.all_reduce.sharded_inner_time", coll.gpu_all_reduce_sharded_inner_time, "gpu"),
    # transformer accounting (transformers.md): B counts tokens; gated MLP and untied embeddings by default
    _q("transformer.mlp_params", tf.mlp_params, "transformer"),
    _q("transformer.attention_params", tf.attention_params, "transformer"),
    _q("transformer.norm_params", tf.norm_params, "transformer"),
    _q("transformer.embedding_params", tf.embedding_params, "transformer"),
    _q("transformer.params_per_layer", tf.params_per_layer, "transformer"),
    _q("transformer.params", tf.params, "transformer"),
    _q("transformer.moe_mlp_params", tf.moe_mlp_params, "transformer"),
    _q("transformer.moe_active_mlp_params", lambda: tf.moe_mlp_params(active=True), "transformer"),
    _q("transformer.moe_params", lambda: tf.params(experts="total"), "transformer"),
    _q("transformer.moe_forward_flops_per_token", lambda: tf.forward_flops_per_token(experts="active"),
       "transformer"),
    _q("transformer.active_params", lambda: tf.params(experts="active"), "transformer"),
    _q("transformer.mlp_flops", tf.mlp_flops, "transformer"),
    _q("transformer.projection_flops", tf.projection_flops, "transformer"),
    _q("transformer.attention_flops", tf.attention_flops, "transformer"),
    _q("transformer.unembedding_flops", tf.unembedding_flops, "transformer"),
    _q("transformer.flops_per_token", tf.flops_per_token, "transformer"),
    _q("transformer.moe_flops_per_token", lambda: tf.flops_per_token(experts="active"), "transformer"),
    _q("transformer.forward_flops_per_token", tf.forward_flops_per_token, "transformer"),
    _q("transformer.matmul_flops_per_token", tf.matmul_flops_per_token, "transformer"),
    _q("transformer.attention_flops_per_token", tf.attention_flops_per_token, "transformer"),
    _q("transformer.attention_forward_flops_per_token", lambda: tf.attention_flops_per_token(forward=True),
       "transformer"),
    _q("transformer.attention_to_matmul_ratio", tf.attention_to_matmul_ratio, "transformer"),
    _q("transformer.attention_to_matmul_ratio_book", tf.attention_to_matmul_ratio_book, "transformer"),
    _q("transformer.attention_crossover_T", tf.attention_crossover_T, "transformer"),
    _q("transformer.attention_crossover_T_book", tf.attention_crossover_T_book, "transformer"),
    _q("transformer.attention_projection_crossover_T", tf.attention_projection_crossover_T, "transformer"),
    _q("transformer.training_flops", tf.training_flops, "transformer"),
    _q("transformer.training_flops_remat", tf.training_flops_remat, "transformer"),
    _q("transformer.remat_extra_flops", tf.remat_extra_flops, "transformer"),
    _q("transformer.mfu", tf.mfu, "transformer"),
    _q("transformer.weights_bytes", tf.weights_bytes, "transformer"),
    _q("transformer.gradient_bytes", tf.gradient_bytes, "transformer"),
    _q("transformer.optimizer_bytes", tf.optimizer_bytes, "transformer"),
    _q("transformer.training_state_bytes", tf.training_state_bytes, "transformer"),
    _q("transformer.training_state_bytes_with_grads", tf.training_state_bytes_with_grads, "transformer"),
    _q("transformer.activation_bytes", tf.activation_bytes, "transformer"),
    _q("transformer.activation_bytes_no_remat", lambda: tf.activation_bytes("no_remat"), "transformer"),
    _q("transformer.activation_bytes_block_remat", lambda: tf.activation_bytes("block_remat"), "transformer"),
    _q("transformer.activation_bytes_big_matmuls", lambda: tf.activation_bytes("big_matmuls"), "transformer"),
    _q("transformer.activation_bytes_ffw_outputs", tf.activation_bytes_ffw_outputs, "transformer"),
    _q("transformer.kv_cache_bytes_per_token", tf.kv_cache_bytes_per_token, "transformer"),
    _q("transformer.kv_cache_bytes", tf.kv_cache_bytes, "transformer"),
    _q("transformer.moe_critical_batch", tf.moe_critical_batch, "transformer", level=True),
    _q("transformer.attention_intensity", tf.attention_intensity, "transformer"),
    _q("transformer.attention_intensity_prefill", tf.attention_intensity_prefill, "transformer"),
    _q("transformer.attention_intensity_decode", tf.attention_intensity_decode, "transformer"),
    _q("transformer.attention_prefill_critical_T", tf.attention_prefill_critical_T, "transformer", level=True),
    # parallelism for training (training.md, applied-training.md, gpus.md 'Rooflines for LLM Scaling on GPUs')
    *_parallel_layer_costs(),
    _q("parallel.dp.min_batch", par.dp_min_batch, "parallelism"),
    _q("parallel.dp.min_batch_per_device", par.dp_min_batch_per_device, "parallelism"),
    _q("parallel.dp.max_devices", par.dp_max_devices, "parallelism"),
    _q("parallel.dp.max_params", par.dp_max_params, "parallelism"),
    _q("parallel.fsdp.min_batch", par.fsdp_min_batch, "parallelism"),
    _q("parallel.fsdp.min_batch_per_device", par.fsdp_min_batch_per_device, "parallelism"),
    _q("parallel.fsdp.max_devices", par.fsdp_max_devices, "parallelism"),
    _q("parallel.tp.max_degree", par.tp_max_degree, "parallelism"),
    _q("parallel.tp.min_f", par.tp_min_f, "parallelism"),
    _q("parallel.fsdp_tp.x_opt", par.fsdp_tp_x_opt, "parallelism"),
    _q("parallel.fsdp_tp.y_opt", par.fsdp_tp_y_opt, "parallelism"),
    _q("parallel.fsdp_tp.min_batch", par.fsdp_tp_min_batch, "parallelism"),
    _q("parallel.fsdp_tp.min_batch_per_chip", par.fsdp_tp_min_batch_per_chip, "parallelism"),
    _q("parallel.fsdp_tp.max_chips", par.fsdp_tp_max_chips, "parallelism"),
    _q("parallel.fsdp_tp.x_opt_sum_policy", par.fsdp_tp_x_opt_sum_policy, "parallelism"),
    _q("parallel.fsdp_tp.min_batch_sum_policy", par.fsdp_tp_min_batch_sum_policy, "parallelism"),
    _q("parallel.fsdp_tp.min_batch_per_chip_sum_policy", par.fsdp_tp_min_batch_per_chip_sum_policy, "parallelism"),
    _q("parallel.dcn.min_batch", par.dcn_min_batch, "parallelism"),
    _q("parallel.dcn.min_batch_per_slice", par.dcn_min_batch_per_slice, "parallelism"),
    _q("parallel.pipeline.t_comms_hop", par.pipeline_t_comms_hop, "parallelism", level=True),
    _q("parallel.pipeline.t_comms", par.pipeline_t_comms, "parallelism", level=True),
    _q("parallel.gpu.dp.min_batch_per_gpu_in_node", lambda: par.gpu_dp_min_batch_per_gpu("node"), "parallelism"),
    _q("parallel.gpu.dp.min_batch_per_gpu", lambda: par.gpu_dp_min_batch_per_gpu("cross_node"), "parallelism"),
    _q("parallel.gpu.dp.min_batch", par.gpu_dp_min_batch, "parallelism"),
    _q("parallel.gpu.dp.min_batch_per_gpu_moe", par.gpu_dp_min_batch_per_gpu_moe, "parallelism"),
    _q("parallel.gpu.dp.min_batch_per_gpu_few_nodes", par.gpu_dp_min_batch_per_gpu_few_nodes, "parallelism"),
    _q("parallel.gpu.dp.min_batch_per_gpu_model_sharded", par.gpu_dp_min_batch_per_gpu_model_sharded,
       "parallelism"),
    _q("parallel.gpu.tp.max_degree_in_node", lambda: par.gpu_tp_max_degree("node"), "parallelism"),
    _q("parallel.gpu.tp.max_degree", lambda: par.gpu_tp_max_degree("cross_node"), "parallelism"),
    _q("parallel.gpu.tp.max_degree_two_nodes", par.gpu_tp_max_degree_two_nodes, "parallelism"),
    _q("parallel.gpu.ep.t_math", par.gpu_ep_t_math, "parallelism"),
    _q("parallel.gpu.ep.t_comms", par.gpu_ep_t_comms, "parallelism"),
    _q("parallel.gpu.ep.min_f_few_nodes", par.gpu_ep_min_f_few_nodes, "parallelism"),
    _q("parallel.gpu.ep.min_f_many_nodes", par.gpu_ep_min_f_many_nodes, "parallelism"),
    _q("parallel.gpu.ep.min_f_limit", par.gpu_ep_min_f_limit, "parallelism"),
    _q("parallel.step_time", par.step_time, "parallelism"),
    _q("parallel.training_time", par.training_time, "parallelism"),
    _q("parallel.batch_per_device", par.batch_per_device, "parallelism"),
    *(_q(f"parallel.memory_per_device.{key}", (lambda key=key: par.memory_per_device(key)), "parallelism")
      for key in ("dp", "fsdp", "tp", "fsdp_tp", "pipeline")),
    _q("parallel.min_chips_memory", par.min_chips_memory, "parallelism"),
    # one whole training configuration, as scalemath plan searches them
    _q("parallel.config.memory_per_device", tcfg.memory_per_device, "parallelism"),
    _q("parallel.config.step_time", tcfg.step_time, "parallelism"),
    _q("parallel.config.training_time", tcfg.training_time, "parallelism"),
    # serving (inference.md, applied-inference.md): B is the decode batch (sequences, one token each per
    # step), S the context, T a prompt; kv_token is bound from --model and the cache dtype
    *_inference_quantities(),
    *_hardware_quantities(),
]))


def get(name: str) -> Quantity:
    """A quantity by its dotted name, with did-you-mean for a typo."""
    try:
        return QUANTITIES[name]
    except KeyError:
        raise UnknownNameError("quantity", name, QUANTITIES,
                               hint="'scalemath quantities' lists them") from None


def bind(q: Quantity, ctx: Context, given: Mapping[str, object] = MappingProxyType({})) -> dict[sp.Symbol, object]:
    """Values for ``q``'s parameters: bound from the context, overridden by ``given``.

    A name in ``given`` that is not a parameter of ``q`` is an error naming the parameters.
    """
    params = {p.name: p for p in q.params}
    if "P" in given and "P" not in params and "P_active" in params and "P_active" not in given:
        # forms in P_active accept P for a dense model, where the two are the same
        given = {("P_active" if n == "P" else n): v for n, v in given.items()}
    for name in given:
        if name not in params:
            raise UnknownNameError(f"parameter of {q.name}", name, params,
                                   hint=f"{q.name} takes {', '.join(params) or 'no parameters'}")
    values: dict[sp.Symbol, object] = {}
    for p in params.values():
        if p.name in given:
            values[p.symbol] = given[p.name]
        elif p.binder is not None:
            value = p.binder(ctx)
            if value is not None:
                values[p.symbol] = value
    # a dense model's tokens go through every parameter: P_active is P (given or bound)
    active, total = SYMBOLS["P_active"].symbol, SYMBOLS["P"].symbol
    model = ctx.get_model()
    if "P_active" in params and "P_active" not in given and total in values and (model is None or not model.is_moe):
        values[active] = values[total]
    return values


#: Thresholds that hold for a dense model only, and the quantity that holds for a mixture of experts.
DENSE_ONLY: Mapping[str, str] = MappingProxyType({
    "inference.decode.critical_batch": "inference.decode.critical_batch_moe",
    "inference.prefill.critical_tokens": "inference.decode.critical_batch_moe (the same threshold in prompt tokens)",
})


def evaluate(q: Quantity, ctx: Context, given: Mapping[str, object] = MappingProxyType({})) -> Evaluated:
    """``q``'s derivation with the bound and given values substituted."""
    model = ctx.get_model()
    if model is not None and model.is_moe and q.name in DENSE_ONLY:
        raise BadValueError(f"{model.key} is a mixture of experts (E = {model.E}, k = {model.k}): {q.name} is a "
                            f"dense model's threshold; use {DENSE_ONLY[q.name]}")
    values = bind(q, ctx, given)
    if model is not None and model.local_layers:
        _refuse_past_the_window(q, model, values, given)
    return q.derivation.at(values)


def _refuse_past_the_window(q: Quantity, model, values: Mapping[sp.Symbol, object], given: Mapping[str, object]):
    """Forms where every layer attends to (or caches) all tokens are exact only up to a model's window."""
    free = q.derivation.expr.free_symbols
    T, N, S, kv, L, K, H = (SYMBOLS[n].symbol for n in ("T", "N", "S", "kv_token", "L", "K", "H"))
    caches = (kv in free and "kv_token" not in given) or {L, K, H} <= free
    if q.topic == "transformer" and {T, N} <= free and T in values:
        length, what, own = values[T], "attend to all T", f".forward_flops_per_token({values[T]})"
    elif S in free and caches and S in values:
        length, what, own = values[S], "cache all S", f".kv_elements({values[S]})"
    else:
        return
    if sp.sympify(length) > model.sliding_window:
        raise BadValueError(
            f"{model.key}: {model.local_layers} of its {model.L} layers keep only the last {model.sliding_window} "
            f"tokens, and {q.name} has every layer {what} = {length} tokens; it is exact up to "
            f"{model.sliding_window} (the model's own count: scalemath.catalog.models.get_model({model.key!r}){own}; "
            "'scalemath serve' uses it)")
