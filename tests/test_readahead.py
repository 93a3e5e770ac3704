"""memsim.readahead: items made in a thread arrive in order, errors at their item, and
the thread stops when the consumer does."""

from __future__ import annotations

import threading

import pytest

from memsim.readahead import read_ahead


def _threads() -> int:
    return sum(t.name == "memsim-read-ahead" for t in threading.enumerate())


def test_items_arrive_in_order_made_in_another_thread():
    made_in = set()

    def make(i):
        made_in.add(threading.current_thread().name)
        return i * i

    assert list(read_ahead(range(1000), make)) == [i * i for i in range(1000)]
    assert made_in == {"memsim-read-ahead"}
    assert _threads() == 0


def test_an_error_is_raised_at_its_item_after_the_items_before_it():
    def source():
        yield 1
        yield 2
        raise ValueError("trace.txt:3: bad line")

    got = []
    with pytest.raises(ValueError, match="trace.txt:3: bad line"):
        for x in read_ahead(source(), lambda i: i * 10):
            got.append(x)
    assert got == [10, 20]
    assert _threads() == 0


def test_the_producer_stays_at_most_depth_items_ahead_and_stops_when_closed():
    made = []
    closed = threading.Event()

    def source():
        try:
            yield from range(10_000)
        finally:
            closed.set()  # (the generator is closed: its file would be)

    it = read_ahead(source(), lambda i: made.append(i) or i, depth=2)
    assert next(it) == 0
    # the consumer holds 0; the queue holds 1 and 2; 3 is made and waits for room
    for _ in range(200):
        if len(made) == 4:
            break
        threading.Event().wait(0.01)
    threading.Event().wait(0.05)
    assert made == [0, 1, 2, 3]
    it.close()
    assert closed.is_set()
    assert _threads() == 0
    assert made == [0, 1, 2, 3]
