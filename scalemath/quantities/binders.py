"""Binders: how a parameter takes its value from the :class:`~scalemath.quantities.context.Context` (the chip's
catalog fields and switches, the dtypes' byte sizes, the model's architecture and counts) when the user does not
give it with ``--set``. :data:`DEFAULT_BINDERS` names the binder of each symbol; a quantity's own
``Quantity._binder`` adds the few that depend on the quantity (a pod's torus axes, ``P_extra``, a transformer's F).

>>> ctx = Context(dtype="bf16", weight_dtype="int8")
>>> DEFAULT_BINDERS["b_x"](ctx), DEFAULT_BINDERS["b_w"](ctx)
(Fraction(2, 1), Fraction(1, 1))
"""

from __future__ import annotations

from fractions import Fraction
from types import MappingProxyType
from typing import Callable, Mapping

from ..catalog import hardware
from ..catalog.efficiency import under_efficiency
from ..errors import BadValueError
from .context import Context

__all__ = ["Binder", "BANDWIDTH", "DEFAULT_BINDERS", "FLOPS_RATE", "HARDWARE_BINDERS", "HOP", "ICI_AXIS", "LINK",
           "MOE_COUNTERPARTS", "MXUS", "NODE_EGRESS", "extra_params", "mlp_width"]


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
#: What a chip achieves (the catalog's measured figures, or its stated default share of the peak)
MATMUL_ACHIEVED = _chip_value(lambda chip, ctx: under_efficiency(
    chip, chip.achievable_flops(ctx.compute_dtype), ctx.conventions["efficiency"]).value)
ATTENTION_ACHIEVED = _chip_value(lambda chip, ctx: under_efficiency(
    chip, chip.achievable_attention_flops(ctx.compute_dtype), ctx.conventions["efficiency"]).value)


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
    """The parameters one token uses under the active_params convention (the input embedding counted or not)."""
    model = ctx.get_model()
    return None if model is None else model.active_param_count(ctx.conventions["active_params"])


def _architecture(value_of: Callable[[object], int], book: int) -> Binder:
    """A symbol for a piece of architecture: the model's value, or the book's without a model."""
    def bind_from(ctx: Context):
        model = ctx.get_model()
        return book if model is None else value_of(model)
    return bind_from


def extra_params(form: str) -> Binder:
    """Per-layer parameters besides the matrices and two norms, from the model's fields: biases,
    QK-norm scales, attention sinks, norms beyond two and norm biases (``Model.extra_params_per_layer``);
    ``form`` is "dense", "total" or "active"."""
    def bind_from(ctx: Context):
        m = ctx.get_model()
        return 0 if m is None else m.extra_params_per_layer(form)
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


def mlp_width(quantity: str, moe_form: bool, in_result: bool) -> Binder:
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
    "W_pcie": _field("pcie_bytes_per_s"), "M_vmem": _field("vmem_bytes"),
    "W_host": _field("pcie_bytes_per_s"),
})


def _attention_head(model) -> object:
    """Head dimension of attention's dot products: (query-key + value)/2 with latent attention, else H."""
    if not model.is_mla:
        return model.H
    return Fraction(model.qk_nope_head_dim + model.qk_rope_head_dim + model.H, 2)


def _kv_passed(model) -> object:
    """Keys and values per token and layer as attention uses them (the latent decompressed per head)."""
    if not model.is_mla:
        return 2 * model.K * model.H
    return model.N * (model.qk_nope_head_dim + model.qk_rope_head_dim + model.H)


DEFAULT_BINDERS: Mapping[str, Binder] = MappingProxyType({
    "P": _model_params, "P_active": _model_active_params,
    "P_out": lambda ctx: None if ctx.get_model() is None else ctx.get_model().outside_layers_params(),
    "P_pos": lambda ctx: None if ctx.get_model() is None else ctx.get_model().learned_positions * ctx.get_model().D,
    "P_exp": lambda ctx: None if ctx.get_model() is None else ctx.get_model().expert_param_count(),
    "L_moe": lambda ctx: None if ctx.get_model() is None else ctx.get_model().moe_layers,
    # local attention: how many layers use a window, and the window (unbound for a model without one)
    "L_loc": lambda ctx: None if ctx.get_model() is None else ctx.get_model().local_layers,
    "w_win": lambda ctx: None if ctx.get_model() is None else ctx.get_model().sliding_window,
    "n_mlp": _architecture(lambda m: 3 if m.gated else 2, 3),
    "n_emb": _architecture(lambda m: 1 if m.tied else 2, 2),
    "H_att": lambda ctx: None if ctx.get_model() is None else _attention_head(ctx.get_model()),
    "kv_cp": lambda ctx: None if ctx.get_model() is None else _kv_passed(ctx.get_model()),
    **{sym_name: _model_field(f) for sym_name, f in {"D": "D", "F": "F", "N": "N", "K": "K", "H": "H", "L": "L",
                                                      "V_vocab": "V", "E": "E", "k": "k"}.items()},
    "C": FLOPS_RATE, "C_mm": MATMUL_ACHIEVED, "C_attn": ATTENTION_ACHIEVED, "W": BANDWIDTH, "W_link": LINK, "t_hop": HOP,
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
