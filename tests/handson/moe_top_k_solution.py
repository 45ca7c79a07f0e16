"""Reference solution of the hands-on MoE layer with top-k routing (used only by the tests; the book's Problem 2,
part 4, jax-stuff.md).

Tokens x[T_x, D]; their experts e[T_x, k] (k different experts per token; e[T_x] when k = 1); experts W[E_x, D, D],
one per device. Each device packs every (token, choice) pair into a buffer [E, C, D] with C = its own token count:
a token's k experts differ, so an expert gets at most C of this device's tokens. An all_to_all sends slot row j to
device j; each device applies its expert to what it received; a second all_to_all sends the results back; each
token takes its k rows out of the buffer and averages them.
"""

import jax
import jax.numpy as jnp


def moe_layer(x, expert, w):
    n = jax.lax.axis_size("x")
    tokens = x.shape[0]
    expert = expert.reshape(tokens, -1)  # [T, k], also for top-1's [T]
    hits = jnp.sum(jax.nn.one_hot(expert, n, dtype=jnp.int32), axis=1)  # [T, E]: 1 where the token goes
    places = jnp.cumsum(hits, axis=0) - 1  # [T, E]: the token's slot among the expert's tokens here
    slot = jnp.take_along_axis(places, expert, axis=1)  # [T, k]
    rows = jnp.broadcast_to(x[:, None, :], expert.shape + x.shape[1:])
    buffer = jnp.zeros((n, tokens, x.shape[1]), x.dtype).at[expert, slot].set(rows)
    received = jax.lax.all_to_all(buffer, "x", split_axis=0, concat_axis=0, tiled=True)
    done = jnp.einsum("scd,df->scf", received, w[0])
    back = jax.lax.all_to_all(done, "x", split_axis=0, concat_axis=0, tiled=True)
    gathered = back[expert, slot]  # [T, k, D]
    return jnp.mean(gathered, axis=1)
