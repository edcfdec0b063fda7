"""Row sources built lazily from projection items (140,000 calls draw fine)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from codeai_tui.app.widgets.table import Row

T = TypeVar("T")


class LazySource(Generic[T]):
    """Items whose rows are built only when drawn; `indices` is a filter's selection."""

    def __init__(self, items: Sequence[T], build: Callable[[T], Row],
                 key: Callable[[T], str], indices: list[int] | None = None,
                 lookup: Callable[[str], int | None] | None = None) -> None:
        self.items = items
        self.build = build
        self.key = key
        self.indices = indices
        self._cache: dict[int, Row] = {}
        self._index: dict[str, int] | None = None
        self._lookup = lookup if indices is None else None  # a position index, unfiltered

    def __len__(self) -> int:
        return len(self.indices) if self.indices is not None else len(self.items)

    def item_at(self, index: int) -> T | None:
        if not 0 <= index < len(self):
            return None
        return self.items[self.indices[index] if self.indices is not None else index]

    def row(self, index: int) -> Row | None:
        cached = self._cache.get(index)
        if cached is None:
            item = self.item_at(index)
            if item is None:
                return None
            if len(self._cache) > 4096:
                self._cache.clear()
            cached = self._cache[index] = self.build(item)
        return cached

    def index_of(self, key: str) -> int | None:
        if self._lookup is not None:
            return self._lookup(key)
        if self._index is None:
            index: dict[str, int] = {}
            for i in range(len(self)):
                item = self.item_at(i)
                if item is not None:
                    index[self.key(item)] = i
            self._index = index
        return self._index.get(key)

    def find(self, start: int, pred: Callable[[T], bool], step: int = 1) -> int | None:
        """Next index after `start` (wrapping) whose item matches."""
        n = len(self)
        for k in range(1, n + 1):
            i = (start + step * k) % n
            item = self.item_at(i)
            if item is not None and pred(item):
                return i
        return None

    def first(self, pred: Callable[[T], bool]) -> int | None:
        for i in range(len(self)):
            item = self.item_at(i)
            if item is not None and pred(item):
                return i
        return None
