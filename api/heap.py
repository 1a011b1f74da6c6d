"""Keeping the cyclic garbage collector off the long-lived heap.

The KB, the rules, the graph and the option caches are built once and live as long as the service.
Left in the collector's generations, every full collection walks them again: a pause of tens of
milliseconds on whichever request triggers it. `gc.freeze()` moves everything alive at that moment
into a permanent generation the collector skips (Python docs, `gc.freeze`; the approach Instagram
described for its Django servers). Frozen objects are never collected, so a replaced advisor must be
unfrozen before it can be freed.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect what is garbage now, then freeze the rest (the advisor in service, the framework).
    Call it once the advisor in service has been built and warmed, and again after replacing it."""
    gc.unfreeze()  # a replaced advisor, frozen before, becomes collectable again
    gc.collect()
    gc.freeze()
