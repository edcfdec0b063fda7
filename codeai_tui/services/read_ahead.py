"""Batches of rows read by a second connection in a thread, ahead of their consumer.

SQLite steps outside the GIL: while the gatherer folds one batch of payloads in Python,
the next batches are read on the other core. At 10^6 events that read is about a second
of C. The reader stops within a step of its consumer leaving (`inspect --json | head`)
or of the caller's own `stop`, and its failure is raised in the consumer, in order.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from codeai_tui.ledger.evidence_sql import EvidenceSQL

T = TypeVar("T")
_END = object()
_DEPTH = 4  # batches waiting: 4 x 4,096 rows keep the reader ahead, memory flat


def read_ahead(sql: EvidenceSQL, read: Callable[[EvidenceSQL], Iterator[list[T]]]
               ) -> Iterator[T]:
    """Every row of `read(sibling connection)`, in order."""
    left = threading.Event()
    other = sql.sibling(left.is_set)
    ready: queue.Queue[object] = queue.Queue(_DEPTH)

    def hand_on(item: object) -> None:
        while not left.is_set():
            try:
                ready.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def reader() -> None:
        try:
            for batch in read(other):
                hand_on(batch)
            hand_on(_END)
        except BaseException as exc:  # noqa: BLE001 - raised again in the consumer
            hand_on(exc)

    thread = threading.Thread(target=reader, name="read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item  # type: ignore[misc]
    finally:
        left.set()
        thread.join()
        other.close()
