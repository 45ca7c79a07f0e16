"""Run one of the ``xla`` extra's child programs with jax on simulated CPU devices, apart from this process.

jax fixes its device count when it starts, so every check that needs a mesh of simulated devices runs in a child
(``python -m scalemath.xla.<module>``) with ``XLA_FLAGS`` asking for them: the request goes to its stdin as JSON,
its answer comes back on stdout as JSON, and a child that fails or runs out of time becomes one clear error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from ..errors import BadValueError

__all__ = ["jax_available", "run_child"]


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def run_child(module: str, request: dict, devices: int, timeout: float = 120, what: str = "the program",
              hint: str = "") -> dict:
    """``python -m scalemath.xla.<module>`` on ``devices`` simulated CPU devices; its JSON answer (``hint``
    follows the message when it runs out of time)."""
    if not jax_available():
        raise BadValueError("--xla needs jax: pip install -e '.[xla]'")
    env = dict(os.environ)
    flags = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    try:
        done = subprocess.run([sys.executable, "-m", f"scalemath.xla.{module}"], input=json.dumps(request),
                              text=True, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise BadValueError(f"jax did not finish within {timeout:g} s" + (f": {hint}" if hint else "")) from None
    if done.returncode:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.split(":")[0].endswith(("Error", "Exception"))]
        why = (errors or lines or [f"exit {done.returncode}"])[-1]
        raise BadValueError(f"jax refused {what}: " + why[:500])
    return json.loads(done.stdout)
