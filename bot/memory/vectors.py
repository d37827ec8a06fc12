"""A game's vectors in memory (F31): each fragment's parts as rows of 8-bit integers with a scale each, searched
with one matrix product; which fragments anyone may be shown; the public ones' mean, taken out of the scores.

Pure numpy, no I/O: :class:`bot.engine.upkeep.meaning.MeaningIndex` reads the rows from the store and keeps one of
these per game.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence

import numpy as np

SCORE_BLOCK = 32768  # rows made float32 at once for a search (12 MB at 384 dimensions)


class GameVectors:
    """One game's vectors in memory: a row per part (a fragment whole, then its sentences and clauses), the parts of one
    fragment next to each other; a fragment's closeness is that of its closest part.

    Rows are held as int8 with a scale each (a quarter of float32's bytes; the cosines differ by less than 0.003,
    and the top 200 of 250,000 rows agreed to one in 200 when measured), and compared in blocks made float32 for
    the product. The fragments' texts stay in the store and are read for the fragments a search returns. Rows grow
    in a buffer that doubles when full, so what the background adds costs its own size, not the game's; a
    fragment whose vectors left the table (an edit, a delete, a superseded fact) is marked gone in place, and the
    whole is read again only once a quarter of it is gone.
    """

    def __init__(self, epoch: int, dimension: int):
        self.epoch = epoch  # the store's count of drops of every vector: another means read everything again
        self.removals_seen = 0  # how many of the game's removed rows are applied
        self.last_id = 0  # the newest row read
        self.refs: list[str] = []  # per fragment
        self.turns = array("l")
        self.row_ids = array("q")  # the table's id of each fragment's first row (its text's), in order
        self.private: dict[int, tuple[int, ...]] = {}  # fragment -> the players who witnessed it
        self.gone = 0  # fragments marked gone
        self._gone: set[int] = set()
        self._starts = array("l")  # each fragment's first row in the matrix
        self._starts_array: np.ndarray | None = None
        self._rows = np.empty((0, dimension), dtype=np.int8)
        self._scales = np.empty(0, dtype=np.float32)
        self._height = 0
        self._public = np.empty(0, dtype=bool)  # per fragment: anyone may be shown it
        self._public_sum = np.zeros(dimension)  # the public fragments' parts added up, and how many (see scores)
        self._public_parts = 0

    @property
    def rows(self) -> int:
        return self._height

    @property
    def dimension(self) -> int:
        return self._rows.shape[1]

    @property
    def public(self) -> np.ndarray:
        return self._public[: len(self.refs)]

    @property
    def starts(self) -> np.ndarray:
        if self._starts_array is None:
            self._starts_array = np.frombuffer(self._starts, dtype=np.int_).astype(np.intp)
        return self._starts_array

    @property
    def nbytes(self) -> int:
        """About what it holds in memory: the rows and their scales, and each fragment's ref and figures."""
        fixed = self._rows.nbytes + self._scales.nbytes + self._public.nbytes
        per_fragment = 8 + 8 + 8 + 8 + 64  # turn, row id, start, list slot, a ref's string
        return fixed + per_fragment * len(self.refs) + 120 * len(self.private)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Each row's cosine with ``query`` (a unit vector), both taken as they differ from the mean of the game's
        public parts, in blocks made float32.

        In a game whose every turn talks of the same beacon and lamp, what all its parts share says nothing of
        which one answers, and drowned the clause that does. Measured with MiniLM, plain cosines against centred
        ones: bench recall's topical game, the beacon's clue behind 3 turns by meaning, then 2, the hidden
        passage's behind 5, then 3, clues that reached the prompt 7 of 10, then 9; bench locomo at 1,000 tokens,
        0.805 held out, then 0.811 (meaning alone 0.650, then 0.668). Private parts are left out of the mean, so
        a witness's private memories move no one else's ranking."""
        out = np.empty(self._height, dtype=np.float32)
        if not self._public_parts:
            for at in range(0, self._height, SCORE_BLOCK):
                block = self._rows[at : min(at + SCORE_BLOCK, self._height)]
                out[at : at + len(block)] = (block.astype(np.float32) @ query) * self._scales[at : at + len(block)]
            return out
        # With unit rows d and query q and the mean m: cos(d - m, q - m) = (d.q - d.m - q.m + m.m) / (|d - m| |q - m|)
        # and |d - m|^2 = 1 - 2 d.m + m.m; one product gives d.q and d.m.
        mean = self._public_sum / self._public_parts
        probe = np.stack([query, mean], axis=1).astype(np.float32)
        q_m, m_m = float(query @ mean), float(mean @ mean)
        q_len = np.sqrt(max(1.0 - 2.0 * q_m + m_m, 1e-12))
        for at in range(0, self._height, SCORE_BLOCK):
            block = self._rows[at : min(at + SCORE_BLOCK, self._height)]
            both = (block.astype(np.float32) @ probe) * self._scales[at : at + len(block), None]
            d_len = np.sqrt(np.maximum(1.0 - 2.0 * both[:, 1] + m_m, 0.0))
            near = (both[:, 0] - both[:, 1] - q_m + m_m) / np.maximum(d_len * q_len, 1e-6)
            out[at : at + len(block)] = np.where(d_len > 1e-3, near, 0.0)  # the mean itself: no direction
        return out

    def parts(self, fragment: int) -> np.ndarray:
        """One fragment's parts as float32 vectors."""
        start, end = self._starts[fragment], self.ends()[fragment]
        return self._rows[start:end].astype(np.float32) * self._scales[start:end, None]

    def add(
        self, row_id: int, ref: str, turn: int, audience: tuple[int, ...] | None, parts: Sequence[np.ndarray]
    ) -> None:
        n = len(self.refs)
        if self._height + len(parts) > len(self._rows):
            self._resize(max(1024, 2 * (self._height + len(parts))))
        if n + 1 > len(self._public):
            self._public = np.concatenate([self._public, np.zeros(max(1024, n + 1), dtype=bool)])
        block = np.asarray(parts, dtype=np.float32)
        scales = np.maximum(np.abs(block).max(axis=1), 1e-12) / 127.0
        self._rows[self._height : self._height + len(parts)] = np.rint(block / scales[:, None])
        self._scales[self._height : self._height + len(parts)] = scales
        start = self._height
        self._starts.append(start)
        self._starts_array = None
        self._height += len(parts)
        self._public[n] = audience is None
        if audience is not None:
            self.private[n] = audience
        else:
            self._public_sum += (self._rows[start : self._height].astype(np.float32) * scales[:, None]).sum(axis=0)
            self._public_parts += len(parts)
        self.row_ids.append(row_id)
        self.refs.append(ref)
        self.turns.append(turn)

    def fit(self) -> None:
        """Give back the buffer's room beyond the rows (after a whole game is read)."""
        if len(self._rows) > self._height:
            self._resize(self._height)
            self._public = self._public[: len(self.refs)].copy()

    def _resize(self, height: int) -> None:
        rows = np.empty((height, self.dimension), dtype=np.int8)
        scales = np.empty(height, dtype=np.float32)
        rows[: self._height], scales[: self._height] = self._rows[: self._height], self._scales[: self._height]
        self._rows, self._scales = rows, scales

    def remove(self, first_row: int) -> None:
        """The fragment whose first row had this id is gone: never found again, by anyone."""
        at = bisect.bisect_left(self.row_ids, first_row)
        if at == len(self.row_ids) or self.row_ids[at] != first_row or at in self._gone:
            return
        self._gone.add(at)
        if self._public[at]:
            gone = self.parts(at)
            self._public_sum -= gone.sum(axis=0)
            self._public_parts -= len(gone)
        self._public[at] = False
        self.private.pop(at, None)
        self.gone += 1

    def ends(self) -> list[int]:
        return [*self._starts[1:], self._height]


def nearest_sentence(similar: np.ndarray, start: int, end: int) -> int:
    """Which part of the fragment whose parts are rows ``start`` to ``end`` came nearest, counted from 1 (a
    sentence or a clause: what an excerpt is cut around, and what the fragment was found by), even where the whole
    came nearer; 0 for a fragment of one part. Turns that say the same sentence beside different ones are found by that
    sentence, and told once: with multilingual-e5-small the whole of each "The beacon's great lens is smeared
    with salt." turn came nearer than the sentence, and six of them took the first places for the beacon."""
    return 0 if end - start < 2 else 1 + int(np.argmax(similar[start + 1 : end]))
