"""Each model's learned token calibration (schema v8, B-TOK-3): the ratio of the provider's reported prompt tokens
to our estimate, folded per call. A mixin of ``Store``.

It is kept so that a restarted server plans with the window the old one had learned (B-CACHE-3: it must send
exactly the request the old one would have sent). One row per model; the last writer wins when several servers
share a data folder.
"""

from __future__ import annotations

from server.transcript.queries import Queries
from server.transcript.records import now

# (model, factor, samples, updated_at); also run in an answer's transaction (``Store.append_messages``)
UPSERT_CALIBRATION = (
    "INSERT INTO calibrations (model, factor, samples, updated_at) VALUES (?,?,?,?)"
    " ON CONFLICT(model) DO UPDATE SET factor = excluded.factor, samples = excluded.samples,"
    " updated_at = excluded.updated_at"
)


class CalibrationQueries(Queries):
    """``Store`` methods for ``calibrations``; ``_transact``/``_read`` are the store's own helpers."""

    async def save_calibration(self, model: str, factor: float, samples: int) -> None:
        await self._transact(lambda db: db.execute(UPSERT_CALIBRATION, (model, factor, samples, now())))

    async def load_calibrations(self) -> list[tuple[str, float, int]]:
        """Every model's ``(model, factor, samples)``."""
        rows = await self._read("SELECT model, factor, samples FROM calibrations ORDER BY model")
        return [(str(m), float(f), int(n)) for m, f, n in rows]
