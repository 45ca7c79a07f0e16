"""Streaming a sharded model's weights out of HBM once (tpus.md, worked problem 1)."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import ask, pick, pick_chip
from ..registry import Generator, register, reject_if

#: Parameter counts of real dense models (7B ... 405B).
PARAMS = (7 * 10**9, 8 * 10**9, 13 * 10**9, 27 * 10**9, 34 * 10**9, 70 * 10**9,
          175 * 10**9, 200 * 10**9, 405 * 10**9)
DTYPES = ("bf16", "int8", "int4")
DEVICES = (4, 8, 16, 32, 64, 128, 256)


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=["pod_shape"])
    dtype = pick(rng, DTYPES)
    n_params = pick(rng, PARAMS)
    n_dev = pick(rng, DEVICES)
    reject_if(n_dev > chip.pod_chips, "more chips than the pod has")
    share = Fraction(n_params) * {"bf16": 2, "int8": 1, "int4": Fraction(1, 2)}[dtype] / n_dev
    reject_if(share > chip.hbm_bytes, "each chip's share of the weights must fit in its HBM")
    reject_if(share * 20 < chip.hbm_bytes, "far more chips than the weights need")
    return {"chip": chip.key, "dtype": dtype, "params": n_params, "n_dev": n_dev}


def solve(p):
    return [ask("load_time", "time to read every weight from HBM once", "hbm.weights_load_time",
                chip=p["chip"], weight_dtype=p["dtype"], given={"P": p["params"], "n_dev": p["n_dev"]})]


def check(p):
    chip = get_chip(p["chip"])
    bytes_per_param = {"bf16": Fraction(2), "int8": Fraction(1), "int4": Fraction(1, 2)}[p["dtype"]]
    total = p["params"] * bytes_per_param
    return {"load_time": total / p["n_dev"] / chip.hbm_bytes_per_s}


register(Generator("tpu_weights_load", "tpu", "Streaming sharded weights from HBM",
                   "tpus.md, 'Worked Problems' (Q1)", draw, solve, check))
