"""Every command that takes a model reports the same counts for it: derive, check, plan, serve.

The parameter count a user sees must not depend on the door they came in by. The model's own
accounting (``Model.param_count``) is held against the published figures in test_model_catalog;
here the closed forms (where they describe the model), ``check``, ``plan`` and ``serve`` must all
agree with it, and the closed forms must refuse where they do not describe the model.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.catalog import hardware, models
from scalemath.search import plan
from scalemath.search import serve
from scalemath.cli import main
from scalemath.errors import BadValueError
from scalemath.quantities import Context, evaluate, get
from scalemath.search.train_space import Options
from scalemath.symbolic.symbols import sym

CATALOG = models.default_models()


def _closed_form_describes(m) -> bool:
    return not (m.is_mla or m.shared_experts or m.dense_layers)


def _params_quantity(m, active=False) -> str:
    if m.is_moe:
        return "transformer.active_params" if active else "transformer.moe_params"
    return "transformer.params"


def _routers(m) -> int:
    # the book's MoE form leaves each MoE layer's router (E·D) out; the model's own count keeps it
    return m.moe_layers * m.E * m.D


@pytest.mark.parametrize("key", [m.key for m in CATALOG])
def test_derive_equals_the_models_count_or_refuses(key):
    m = CATALOG[key]
    for active in (False, True):
        name = _params_quantity(m, active)
        if not _closed_form_describes(m):
            with pytest.raises(BadValueError):
                evaluate(get(name), Context(model=key))
            continue
        closed = evaluate(get(name), Context(model=key)).value
        assert int(closed) + _routers(m) == m.param_count(active=active), name


@pytest.mark.parametrize("key", [m.key for m in CATALOG if _closed_form_describes(m) and not m.is_moe])
def test_check_accepts_the_models_count_and_names_the_architecture(key):
    m = CATALOG[key]
    result = CliRunner().invoke(main, ["check", "transformer.params", "--model", key, str(m.param_count())])
    assert result.exit_code == 0, result.output
    assert "right" in result.output
    derived = CliRunner().invoke(main, ["derive", "transformer.params", "--model", key])
    words = ("gated MLP" if m.gated else "plain (ungated) MLP", "tied" if m.tied else "untied")
    assert all(w in derived.output for w in words), derived.output


@pytest.mark.parametrize("key", [m.key for m in CATALOG])
def test_plan_reports_the_models_counts(key):
    m = CATALOG[key]
    catalog = hardware.default_catalog()
    seq_len = min(4096, m.max_context or 4096)
    report = plan.plan(m, catalog["h100"], Options(chips=1024, batch=4096 * seq_len, seq_len=seq_len, mfu=Fraction(1)))
    assert report["params"] == m.param_count() and report["active_params"] == m.param_count(active=True)
    # the search prices compute with the active parameters and stores every one
    best = report["best"] or report["families"][0]
    assert best.step.given[sym("P_active")] == m.param_count(active=True)
    assert best.memory.given[sym("P")] == m.param_count()


@pytest.mark.parametrize("key", [m.key for m in CATALOG])
def test_serve_loads_every_weight(key):
    m = CATALOG[key]
    ctx = Context(chip="h200", dtype="bf16", weight_dtype="fp8", kv_dtype="fp8", model=key)
    report = serve.serve(ctx, 1, min(2048, m.max_context or 2048), 128, 64, None, 1)
    weights = report["min_chips"].steps[0].value
    assert weights == m.param_count()  # fp8: one byte per parameter, every expert stored


@pytest.mark.parametrize("key", [m.key for m in CATALOG if _closed_form_describes(m) and not m.is_moe])
def test_table_shows_the_same_count(key):
    from scalemath.values import printing as formatting

    m = CATALOG[key]
    result = CliRunner().invoke(main, ["table", "transformer.params", "--model", key, "--chip", "h100"])
    assert result.exit_code == 0, result.output
    row = [line for line in result.output.splitlines() if line.startswith("| H100")][0]
    assert row.rstrip(" |").split("|")[-1].strip() == formatting.decimal(m.param_count())
