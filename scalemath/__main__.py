"""``python -m scalemath``: the same as the ``scalemath`` command."""

from scalemath.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
