"""``python -m scalemath.xla.corpus``: compile the HLO corpus again (needs jax)."""

import sys

from .build import main

sys.exit(main())
