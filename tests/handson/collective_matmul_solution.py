"""Reference solution of the hands-on collective matmul (used only by the tests).

A[B, D_x] @ W[D, F_x] -> out[B, F_x]: each device holds one block of A's columns (a slice of the contracting
dimension D) and all of W's rows for its own columns F. Instead of gathering A whole, the blocks travel
round the ring with ppermute; at each step a device multiplies the block it holds with the matching rows of
its W and adds, so the transfer of the next block overlaps this step's matmul.
"""

import jax
import jax.numpy as jnp


def collective_matmul(a, w):
    n = jax.lax.axis_size("x")
    me = jax.lax.axis_index("x")
    chunk = a.shape[1]
    out = jnp.zeros((a.shape[0], w.shape[1]), a.dtype)
    block = a
    for step in range(n):
        owner = (me + step) % n  # whose block of A is held now
        rows = jax.lax.dynamic_slice_in_dim(w, owner * chunk, chunk, axis=0)
        out = out + block @ rows
        if step < n - 1:
            block = jax.lax.ppermute(block, "x", [(j, (j - 1) % n) for j in range(n)])
    return out
