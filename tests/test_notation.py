"""The sharding notation: round trips, the book's examples, and an invalid-pattern table."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.symbolic.notation import NotationError, parse_array, parse_contraction, parse_mesh
from scalemath.symbolic.sharding import array_bytes, case_of, local_shape

MESH = {"X": 4, "Y": 2, "Z": 2}


@pytest.mark.parametrize("text,expected", [
    ("A[I_X, J]", "A[I_X, J]"),
    ("A[I_XY,J]", "A[I_XY, J]"),
    ("A[I_{XY}, J]", "A[I_XY, J]"),
    ("A[I_{X,Y}, J]", "A[I_XY, J]"),
    ("C[I, K]{U_X}", "C[I, K]{U_X}"),
    ("W[D_X, F_Y]", "W[D_X, F_Y]"),
    ("x[seq, d_Z]", "x[seq, d_Z]"),
], ids=["simple", "two-axes", "braced", "braced-commas", "unreduced", "book-letters", "long-names"])
def test_arrays_print_in_canonical_form(text, expected):
    assert str(parse_array(text, MESH)) == expected


@pytest.mark.parametrize("pattern,case", [
    ("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "1"),
    ("A[I, J_X] @ B[J, K] -> C[I, K]", "2"),
    ("A[I, J_X] · B[J_Y, K] -> C[I, K]", "2"),
    ("A[I, J_X] * B[J_X, K] -> C[I, K]", "3"),
    ("A[I, J_X], B[J_X, K] -> C[I, K_X]", "3"),
    ("A[I_X, J] @ B[J, K_X] -> C[I_X, K]", "4"),
], ids=["case1", "case2", "case2-different-axes", "case3", "case3-reduce-scatter", "case4"])
def test_the_four_cases(pattern, case):
    assert case_of(parse_contraction(pattern, MESH)) == case


@pytest.mark.parametrize("pattern,fragments", [
    ("A[I_X, J_X] @ B[J, K] -> C[I_X, K]", ["mesh axis X is used twice", "         ^", "spent"]),
    ("A[I_Q, J] @ B[J, K] -> C[I, K]", ["unknown mesh axis 'Q'", "--mesh Q=4"]),
    ("A[I, J] @ B[L, K] -> C[I, K]", ["no dimension is contracted"]),
    ("A[I, J] @ B[J, K] -> C[I, Q]", ["output dimension Q comes from nowhere"]),
    ("A[I, J] @ B[J, K] -> C[I]", ["dimension K of B is missing from the output"]),
    ("A[I, J] @ B[J, K] -> C[I, K, J]", ["no dimension is contracted"]),
    ("A[I, I] @ B[I, K] -> C[K]", ["dimension I appears twice in A"]),
    ("A[I_X J] @ B[J, K] -> C[I, K]", ["expected ',' or ']'"]),
    ("A[I, J] @ B[J, K]", ["expected '->'"]),
    ("A[I, J] @ B[J, K] -> C[I, K] extra", ["expected the end"]),
    ("A[I, J]{U_X} @ B[J, K] -> C[I, K]", ["unreduced; reduce it before"]),
    ("A[I, J] @ B[J, K] -> C[I, K]{V_X}", ["expected U_<axes>"]),
    ("A[I_X, J] @ B[J, K] -> C[I_X, K]{U_X}", ["mesh axis X is used twice"]),
    ("A[I, J] % B[J, K] -> C[I, K]", ["unexpected character '%'"]),
    ("A[I_, J] @ B[J, K] -> C[I, K]", ["expected mesh axes after '_'"]),
    ("A[B, J] @ B[J, K] -> C[B, K, B]", ["dimension B appears twice"]),
], ids=["axis-twice", "unknown-axis", "no-contraction", "output-from-nowhere", "missing-output-dim",
        "contracted-in-output", "dim-twice", "missing-comma", "no-output", "trailing", "unreduced-input",
        "bad-unreduced", "unreduced-and-sharded", "bad-character", "empty-axes", "dim-twice-in-output"])
def test_invalid_patterns_say_what_where_and_how(pattern, fragments):
    with pytest.raises(NotationError) as info:
        parse_contraction(pattern, MESH)
    message = str(info.value)
    assert pattern in message and "^" in message
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize("text,fragment", [
    ("X=4,Y", "NAME=SIZE"), ("X=0", "at least 1"), ("X=4,X=2", "given twice"), ("", "empty"),
    ("X=-1", "NAME=SIZE"), ("X=1e9", "NAME=SIZE"),
], ids=["no-size", "zero", "twice", "empty", "negative", "not-integer"])
def test_bad_meshes(text, fragment):
    with pytest.raises(NotationError, match=fragment):
        parse_mesh(text)


def test_local_shape_and_bytes_per_device():
    # sharding.md, local shape example: A[I_X, J_Y] of shape (4, 128) on a 2x2 mesh -> (2, 64)
    assert local_shape(parse_array("A[I_X, J_Y]"), {"X": 2, "Y": 2}, {"I": 4, "J": 128}) == (2, 64)
    # sharding.md pop quiz: int8[128, 2048] as A[I_XY, J] on {X:2, Y:8, Z:2} -> 16384 bytes per device,
    # and 32 x 16384 = 524288 bytes over all devices (replicated over Z)
    mesh = {"X": 2, "Y": 8, "Z": 2}
    per_device = array_bytes(parse_array("A[I_XY, J]"), mesh, {"I": 128, "J": 2048}, 1)
    assert per_device == 16384 and per_device * 32 == 524288


AXES = ["X", "Y", "Z"]


@st.composite
def arrays(draw):
    dims = draw(st.lists(st.sampled_from(["I", "J", "K", "B", "D", "F"]), min_size=1, max_size=3, unique=True))
    free = list(AXES)
    out = []
    for d in dims:
        k = draw(st.integers(0, min(2, len(free))))
        axes = draw(st.permutations(free))[:k]
        free = [a for a in free if a not in axes]
        out.append(d + ("_" + "".join(axes) if axes else ""))
    unreduced = draw(st.lists(st.sampled_from(free), unique=True, max_size=len(free))) if free else []
    return f"A[{', '.join(out)}]" + ("{U_" + "".join(unreduced) + "}" if unreduced else "")


@settings(max_examples=200, deadline=None)
@given(arrays())
def test_round_trip(text):
    arr = parse_array(text, MESH)
    assert parse_array(str(arr), MESH) == arr
    assert str(parse_array(str(arr), MESH)) == str(arr)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_is_a_pattern_or_a_notation_error(text):
    try:
        parse_contraction(text, MESH)
    except NotationError as exc:
        assert "^" in str(exc)
