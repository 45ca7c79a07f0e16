"""``python -m scalemath``: the same as the ``scalemath`` command."""

from scalemath.cli import run

if __name__ == "__main__":  # pragma: no cover
    run()
