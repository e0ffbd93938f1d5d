"""A few recently used values kept in memory: for things that never change once stored (a parsed
snapshot version, the engine's proposal behind a stored one) and cost a second to rebuild."""

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """The `size` most recently used values by key, shared by the threads of a process."""

    def __init__(self, size: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = size
        self._lock = Lock()

    def get(self, key: K, build: Callable[[], V]) -> V:
        """The value kept for `key`, or `build()` kept from now on (unless it raises)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = build()  # outside the lock: building can take a second, others need not wait
        self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget every value (the benchmarks measure a fresh process this way)."""
        with self._lock:
            self._items.clear()
