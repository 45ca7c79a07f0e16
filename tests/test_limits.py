"""The time limit on SymPy calls that user input reaches: in the main thread and in any other."""

from __future__ import annotations

import threading
import time

import pytest
import sympy as sp

from scalemath.errors import ScalemathError
from scalemath.limits import TimeLimitError, run_limited


def _spin(seconds: float) -> str:
    # the spinning thread's own CPU: other threads of the test process (XLA's pools) must not shorten it
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    return "finished"


def _fail() -> None:
    raise ScalemathError("the function's own error")


def _in_thread(fn, *args, **kwargs):
    out: dict = {}

    def target():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed back to the test
            out["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    assert not t.is_alive()
    return out


@pytest.mark.parametrize("where", ["main-thread", "worker-thread"])
@pytest.mark.parametrize("fn,args,expected", [
    (_spin, (0.0,), "finished"),
    (sp.simplify, (sp.sin(sp.Symbol("x")) ** 2 + sp.cos(sp.Symbol("x")) ** 2,), sp.Integer(1)),
], ids=["returns", "sympy-result"])
def test_a_quick_call_returns_its_value(where, fn, args, expected):
    if where == "main-thread":
        assert run_limited(fn, *args, seconds=20, what="x") == expected
    else:
        assert _in_thread(run_limited, fn, *args, seconds=20, what="x") == {"value": expected}


@pytest.mark.parametrize("where", ["main-thread", "worker-thread"])
def test_a_slow_call_is_stopped_with_a_clear_error(where):
    if where == "main-thread":
        with pytest.raises(TimeLimitError, match="spinning did not finish within 0.2 s"):
            run_limited(_spin, 30.0, seconds=0.2, what="spinning")
    else:
        out = _in_thread(run_limited, _spin, 30.0, seconds=0.2, what="spinning")
        assert isinstance(out.get("error"), TimeLimitError), out


@pytest.mark.parametrize("where", ["main-thread", "worker-thread"])
def test_the_calls_own_error_reaches_the_caller(where):
    if where == "main-thread":
        with pytest.raises(ScalemathError, match="own error"):
            run_limited(_fail, seconds=20, what="x")
    else:
        out = _in_thread(run_limited, _fail, seconds=20, what="x")
        assert "own error" in str(out.get("error")), out
