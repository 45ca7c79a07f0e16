"""Searching configuration spaces with the engine's own closed forms, compiled once to NumPy.

:mod:`.compiled` turns a registered quantity (with the model, chip and fixed values bound) into a
NumPy function of the values that vary; :mod:`.training` builds the space of training configurations
and ranks it, :mod:`.serving` the space of serving configurations; ``scalemath plan`` and ``scalemath
serve`` explain the winners with the exact derivations.
"""
