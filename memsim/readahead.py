"""Read ahead: produce the items of an iterable in a thread of their own, a few ahead of
their consumer.

``memsim.sim`` reads, checks and decodes the next chunk of a trace here while the
compiled loop (which releases the GIL: ``nogil``) simulates the current one, so on a
machine with a second core parsing costs no wall time. Items arrive in order, and an
exception raised making one (a bad trace line, an address beyond the capacity) is
raised by the consumer at that item, after the items before it, as without the thread.
At most ``depth`` items wait in the queue (plus the one being made), so memory stays a
few chunks whatever the trace's length.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_END = object()  # the producer is done (after the last item, or after its exception)


def read_ahead(items: Iterable[T], make: Callable[[T], R], depth: int = 2) -> Iterator[R]:
    """``make(item)`` for each item, in order, computed in a producer thread up to
    ``depth`` items ahead. Closing the iterator early (an error or Ctrl-C in the
    consumer) stops the producer at its next item and waits for it."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry) -> bool:
        """Queue ``entry`` unless the consumer has gone; whether it was queued."""
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        source = iter(items)
        try:
            for item in source:
                if stop.is_set() or not put((make(item), None)):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put((None, e))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()  # (a generator: its files close in this thread, which ran it)
            put((_END, None))

    producer = threading.Thread(target=produce, name="memsim-read-ahead", daemon=True)
    producer.start()
    try:
        while True:
            value, error = slots.get()
            if error is not None:
                raise error
            if value is _END:
                return
            yield value
    finally:
        stop.set()
        while producer.is_alive():  # (unblock a producer waiting for room)
            with contextlib.suppress(queue.Empty):
                slots.get(timeout=0.05)
        producer.join()
