"""What a forked helper hands back (services/forked.py `dump_result`, `pickled_result`)
comes back equal, shared objects still shared, and loading it holds each array's items
once: pickle's memo kept every array's copy of its items until the whole load ended."""

from __future__ import annotations

import tempfile
import tracemalloc
from array import array

from codeai_tui.services.forked import dump_result, pickled_result


def _loaded(result: object) -> tuple[object, int, int]:
    """`result` through a file as a helper hands it back; the bytes the load kept, and
    its peak above them."""
    with tempfile.TemporaryFile() as file:
        dump_result(result, file)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            got = pickled_result(file)
            now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return got, now - before, peak - now


def test_a_result_comes_back_equal_and_shared_where_it_was() -> None:
    shared = array("q", range(-5, 1000))
    result = {"a": shared, "b": [shared, array("i", [1, 2, 3]), array("d", [0.5])],
              "raw": bytearray(b"\x00\x01" * 100), "text": "x", "none": None}
    got, _, _ = _loaded(result)
    assert got == result
    assert got["a"] is got["b"][0]  # type: ignore[index]
    assert [type(v) for v in got["b"]] == [array, array, array]  # type: ignore[index]
    assert type(got["raw"]) is bytearray  # type: ignore[index]


def test_loading_holds_each_arrays_items_once() -> None:
    """Ten arrays of 1 MB: the load's peak is about one array above what it keeps (it
    was every array's bytes, ~10 MB, as pickle's memo held them to the end)."""
    result = [array("q", range(i, i + (1 << 17))) for i in range(10)]
    got, kept, over = _loaded(result)
    assert got == result
    assert kept > 10 << 20
    assert over < 2 << 20, over
