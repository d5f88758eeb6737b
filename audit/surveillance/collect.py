"""The period's coups as the statistics read them (data.CoupRows), fast.

One query over the coups of the period (the (gaming_day, shoe) index), read
in chunks from a server-side cursor (PostgreSQL) as plain tuples, straight
into numpy columns: no model instances. Every revision of the period is read
and the current one kept here (a lexsort on (shoe, seq, revision): corrections
are rare, and this is cheaper than the anti-join tables.rollups.current_coups
asks the database for on a million rows); `corrected` is a revision above 1.

The findings the statistics count (false_draw, bank_mismatch) come from a
second, small query (findings are rare), matched on the current revision's id.

Odds and levies: each coup's exact P(banker / punter / tie) under its own
house-rules version (decks, tableau, the cells the house prescribes:
audit.reports.expectation.rules_play, as the commission report weighs them),
computed once per play (odds.house_odds, cached per process); the levy a
banker win takes (odds.levy, the house's rate, unit and rounding mode) once
per version and covered amount.

The shoes closed in the period (data.ShoeClose): their running state (dealt,
card_counts: kept equal to the current revisions by every correction), burned
cards and the count of cards left the croupier entered at the close.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal

import numpy as np
from django.db import connection

from audit.reports.expectation import rules_play
from audit.reports.odds import house_odds, levy
from tables.models import Coup, Finding, HouseRules, Shoe
from tables.services.coups import tableau_for

from .data import RANKS, CoupRows, ShoeClose

CHUNK = 20_000
OUTCOME = {"banker": 0, "punter": 1, "tie": 2}
_ODDS: dict[tuple, tuple[float, float, float]] = {}

FIELDS = (
    "id", "shoe_id", "seq", "revision", "shoe__session__table_id",
    "shoe__session_id", "gaming_day", "created_at", "entered_by_id",
    "banker_seat", "turn__player_card", "outcome", "covered", "commission",
    "rules_id", "tableau_version",
)


def play_odds(play: tuple) -> tuple[float, float, float]:
    """(P banker, P punter, P tie) of a rules_play key, once per process."""
    got = _ODDS.get(play)
    if got is None:
        decks, tableau_version, punter_five, cells = play
        odds = house_odds(decks=decks, tableau=tableau_for(tableau_version),
                          punter_five=punter_five, banker_prescriptions=dict(cells))
        got = _ODDS[play] = (float(odds.p_banker), float(odds.p_punter),
                             float(odds.p_tie))
    return got


def _coups(from_day: date, to_day: date, table_ids):
    qs = Coup.objects.filter(gaming_day__range=(from_day, to_day))
    if table_ids:
        qs = qs.filter(shoe__session__table_id__in=list(table_ids))
    return qs.order_by().values_list(*FIELDS)


def collect(*, from_day: date, to_day: date, table_ids=None,
            progress: Callable[[int, int], None] | None = None,
            ) -> tuple[CoupRows, list[ShoeClose]]:
    """CoupRows for gaming days from_day..to_day (optionally some tables),
    at the current revisions, and the shoes closed in the period."""
    qs = _coups(from_day, to_day, table_ids)
    total = qs.count() if progress else 0
    chunk_size = CHUNK if connection.vendor == "postgresql" else 2000
    cache = _Cache()
    parts, chunk, done = [], [], 0
    for row in qs.iterator(chunk_size=chunk_size):
        chunk.append(row)
        if len(chunk) == CHUNK:
            parts.append(_chunk(chunk, cache))
            done += len(chunk)
            chunk = []
            if progress:
                progress(done, total)
    if chunk:
        parts.append(_chunk(chunk, cache))
    rows = _current(parts)
    shoes = shoe_closes(from_day=from_day, to_day=to_day, table_ids=table_ids)
    if progress:
        progress(total, total)
    return rows, shoes


class _Cache:
    """Odds per (house-rules version, tableau), levies per (version, covered)."""

    def __init__(self) -> None:
        self.versions: dict[int, HouseRules] = {}
        self.odds: dict[tuple, tuple[float, float, float]] = {}
        self.levy: dict[tuple, float] = {}

    def version(self, pk: int) -> HouseRules:
        r = self.versions.get(pk)
        if r is None:
            r = self.versions[pk] = (HouseRules.objects.select_related("tableau")
                                     .get(pk=pk))
        return r

    def play(self, rules_id: int, tableau_version: str):
        key = (rules_id, tableau_version)
        o = self.odds.get(key)
        if o is None:
            o = self.odds[key] = play_odds(
                rules_play(self.version(rules_id), tableau_version or None))
        return o

    def levy_win(self, rules_id: int, covered: Decimal) -> float:
        key = (rules_id, covered)
        v = self.levy.get(key)
        if v is None:
            r = self.version(rules_id)
            v = self.levy[key] = float(levy(
                covered, rate=r.commission_rate, unit=r.commission_unit,
                rounding=r.commission_rounding))
        return v


def _chunk(chunk: list[tuple], cache: _Cache) -> dict[str, np.ndarray]:
    """One chunk of query rows as numpy columns (every revision)."""
    (ids, shoe, seq, revision, table, session, day, at, croupier, seat, card,
     outcome, covered, commission, rules_id, tableau) = zip(*chunk, strict=True)
    n = len(ids)

    def ints(col) -> np.ndarray:
        return np.fromiter(col, np.int64, n)

    odds = np.array([cache.play(r, t) for r, t in zip(rules_id, tableau,
                                                      strict=True)],
                    dtype=np.float64).reshape(n, 3)
    obj = np.empty(n, dtype=object)
    obj[:] = [f"card:{c}" if c else f"seat:{s}@session:{x}"
              for c, s, x in zip(card, seat, session, strict=True)]
    return {
        "id": ints(ids), "shoe": ints(shoe), "seq": ints(seq),
        "revision": ints(revision), "table": ints(table),
        "day": np.fromiter((d.toordinal() for d in day), np.int64, n),
        "at": np.fromiter((int(t.timestamp() * 1_000_000) for t in at),
                          np.int64, n),
        "croupier": ints(croupier), "banker": obj,
        "outcome": np.fromiter((OUTCOME[o] for o in outcome), np.int8, n),
        "covered": np.fromiter(map(float, covered), np.float64, n),
        "commission": np.fromiter(map(float, commission), np.float64, n),
        "levy_win": np.fromiter((cache.levy_win(r, c) for r, c in zip(
            rules_id, covered, strict=True)), np.float64, n),
        "p_banker": odds[:, 0].copy(), "p_punter": odds[:, 1].copy(),
        "p_tie": odds[:, 2].copy(),
    }


def _current(parts: list[dict[str, np.ndarray]]) -> CoupRows:
    """Keep each (shoe, seq)'s latest revision; add the finding columns."""
    if not parts:
        return CoupRows.empty()
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    shoe, seq, revision = cols["shoe"], cols["seq"], cols["revision"]
    order = np.lexsort((revision, seq, shoe))
    last = np.ones(len(order), dtype=bool)
    s, q = shoe[order], seq[order]
    last[:-1] = (s[1:] != s[:-1]) | (q[1:] != q[:-1])
    keep = np.sort(order[last])
    cols = {k: v[keep] for k, v in cols.items()}
    outcome, covered = cols["outcome"], cols["covered"]
    found = _finding_flags(cols["id"])
    return CoupRows(
        table=cols["table"], day=cols["day"], shoe=cols["shoe"], seq=cols["seq"],
        at=cols["at"], croupier=cols["croupier"], banker=cols["banker"],
        outcome=outcome, covered=covered, commission=cols["commission"],
        banker_net=np.where(outcome == 0, covered - cols["commission"],
                            np.where(outcome == 1, -covered, 0.0)),
        levy_win=cols["levy_win"], p_banker=cols["p_banker"],
        p_punter=cols["p_punter"], p_tie=cols["p_tie"],
        false_draw=found["false_draw"], corrected=cols["revision"] > 1,
        bank_mismatch=found["bank_mismatch"],
    )


def _finding_flags(coup_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Which of these coups (current revisions) carry a false_draw or a
    bank_mismatch finding."""
    out = {code: np.zeros(len(coup_ids), dtype=bool)
           for code in ("false_draw", "bank_mismatch")}
    if not len(coup_ids):
        return out
    lo, hi = int(coup_ids.min()), int(coup_ids.max())
    hits: dict[str, list[int]] = {code: [] for code in out}
    for coup_id, code in (Finding.objects.filter(
            code__in=list(out), coup_id__gte=lo, coup_id__lte=hi)
            .order_by().values_list("coup_id", "code").iterator(chunk_size=5000)):
        hits[code].append(coup_id)
    for code, found in hits.items():
        if found:
            out[code] = np.isin(coup_ids, np.asarray(found, dtype=np.int64))
    return out


def shoe_closes(*, from_day: date, to_day: date, table_ids=None) -> list[ShoeClose]:
    """The shoes closed in the period (their session's gaming day)."""
    qs = Shoe.objects.filter(closed_at__isnull=False,
                             session__gaming_day__range=(from_day, to_day))
    if table_ids:
        qs = qs.filter(session__table_id__in=list(table_ids))
    out = []
    for (pk, table, day, decks, burned, dealt, counts, left) in qs.order_by(
            "pk").values_list("pk", "session__table_id", "session__gaming_day",
                              "decks", "burned", "dealt", "card_counts",
                              "left_counted"):
        ranks: dict[str, int] = {}
        for code, k in (counts or {}).items():
            rank = code[:1]
            if rank in RANKS:
                ranks[rank] = ranks.get(rank, 0) + int(k)
        out.append(ShoeClose(shoe=pk, table=table, day=day.toordinal(),
                             decks=decks, burned=burned, dealt=dealt,
                             left_counted=left, rank_counts=ranks))
    return out
