"""Services: gather evidence from a ledger file and hand it to the pure projection.

`workstate` stays pure (no I/O); this layer owns the reads. The fast path (`gather`)
reads grouped rows through the covering index and folds them with workstate's own folds
and ladder; ledgers it cannot trust are read event by event and say so.
"""
