import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    The engine allocates hundreds of thousands of tuples and no reference cycles; left on, the
    collector walks the whole snapshot again and again, which costs more than the payout rules.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
