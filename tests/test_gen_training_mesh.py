"""training_mesh_round: the FSDP x TP optimum rounded to a power-of-two mesh, against the book's LLaMA-3 70B
answer (training.md, 'Some Problems to Work': X_opt about 1618, 2048-way FSDP x 4-way TP on 8192 of 8960 chips)."""

import math

import pytest

from scalemath.problems.generators import training_mesh_round as g
from scalemath.problems.generators.inference_common import model_fields


def test_book_llama3_70b():
    p = model_fields("llama3-70b") | {"chip": "tpu-v5p", "dtype": "bf16", "batch": 2**22, "n": 8960}
    a = {x.name: x.value for x in g.solve(p)}
    assert float(a["x_opt"]) == pytest.approx(1618, rel=0.002)  # the book's 1618 (4.19e6 rounded)
    assert (a["x_mesh"], a["y_mesh"], a["chips"]) == (2048, 4, 8192)
    assert 8960 - a["chips"] == 768  # the book: 768 of the 8960 left unused
    second = g.check(p)
    assert (second["x_mesh"], second["y_mesh"], second["chips"]) == (2048, 4, 8192)


@pytest.mark.parametrize("n", g.CHIPS)
@pytest.mark.parametrize("batch", g.BATCHES)
def test_penalty_within_sqrt2(n, batch):
    p = model_fields("llama3-8b") | {"chip": "tpu-v5p", "dtype": "bf16", "batch": batch, "n": n}
    x_opt = math.sqrt(batch * 2 * n / p["F"])
    if not 2 <= x_opt <= n / 2:
        pytest.skip("outside the generator's domain")
    a = {x.name: x.value for x in g.solve(p)}
    assert 1 <= float(a["penalty"]) <= math.sqrt(2) + 1e-12
    assert a["x_mesh"] & (a["x_mesh"] - 1) == 0 and a["x_mesh"] * a["y_mesh"] <= n
