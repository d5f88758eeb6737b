"""The contract between the database and the statistics: plain numpy columns.

The pipeline (``collect``) fills one ``CoupRows`` for the period it examines and
a ``ShoeClose`` for each shoe closed in it, then calls ``detect.detect``, which
returns ``Alert``s. Nothing here touches the database, and money becomes float
only here, for statistics (settlement stays Decimal).

Which rows: one row per coup of the period at its *current* revision (a
corrected coup counts once, with its corrected cards and money, and
``corrected`` set). The order of the rows does not matter: the detector sorts
by ``at`` where it needs time (the CUSUM) and by (``shoe``, ``seq``) where it
needs the dealing order (the shoe's runs test).

The CUSUM of a table must see more than one night: for the nightly run pass a
trailing window (e.g. the last 28 gaming days) and keep one alert per
(kind, subject, day) -- the crossing day of a CUSUM does not move when the
window slides on, as long as the window still starts before the crossing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["Alert", "CoupRows", "ShoeClose", "RANKS", "KINDS"]

# the thirteen ranks, as the rule book writes them ("T" for ten)
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K")

KINDS = ("croupier", "banker", "table_day", "table_cusum", "shoe", "shoe_count")

_DTYPES = {
    "table": np.int64,
    "day": np.int64,
    "shoe": np.int64,
    "seq": np.int64,
    "at": np.int64,
    "croupier": np.int64,
    "banker": object,
    "outcome": np.int8,
    "covered": np.float64,
    "commission": np.float64,
    "banker_net": np.float64,
    "levy_win": np.float64,
    "p_banker": np.float64,
    "p_punter": np.float64,
    "p_tie": np.float64,
    "false_draw": np.bool_,
    "corrected": np.bool_,
    "bank_mismatch": np.bool_,
}

BANKER, PUNTER, TIE = 0, 1, 2


@dataclass(frozen=True, eq=False)
class CoupRows:
    """One row per coup of the period; every field an equal-length 1-d array.

    Build it with ``CoupRows.from_columns(**columns)`` (converts the dtypes
    and checks the lengths) or directly with arrays of the right dtypes.
    """

    table: np.ndarray  # int64: the table's id
    day: np.ndarray  # int64: the gaming day (house cut-off), date.toordinal()
    shoe: np.ndarray  # int64: the shoe's id (unique across tables)
    seq: np.ndarray  # int64: the coup's number in its shoe (dealing order)
    at: np.ndarray  # int64: when the coup was played (first revision), any
    #                 increasing clock: epoch microseconds, or the coup's id
    #                 when ids grow with time. Orders a table's coups in time.
    croupier: np.ndarray  # int64: user id of the croupier who dealt (entered) it
    banker: np.ndarray  # object (str): the banker's identity, "card:<n>" when
    #                     the player gave a card number, else
    #                     "seat:<s>@session:<id>" (the seat of that session)
    outcome: np.ndarray  # int8: 0 banker wins, 1 punter wins, 2 tie
    covered: np.ndarray  # float64: covered amount C (the bank in play)
    commission: np.ndarray  # float64: the commission (levy) recorded on the coup
    banker_net: np.ndarray  # float64: the banker's money on the coup, commission
    #                         included: +C - commission, -C, or 0 on a tie
    levy_win: np.ndarray  # float64: the commission a banker win on this C takes
    #                       under the coup's house rules, whatever the outcome:
    #                       odds.levy(C, rate=, unit=, rounding=) (NOT times p;
    #                       the expected levy is p_banker * levy_win)
    p_banker: np.ndarray  # float64: exact P(banker wins) under the coup's own
    p_punter: np.ndarray  # float64:   house-rules version: odds.house_odds(
    p_tie: np.ndarray  # float64:      decks, tableau, prescriptions) as floats
    false_draw: np.ndarray  # bool: the coup has a false_draw finding
    corrected: np.ndarray  # bool: the coup has more than one revision
    bank_mismatch: np.ndarray  # bool: the coup has a bank_mismatch finding

    def __post_init__(self) -> None:
        n = None
        for f in fields(self):
            a = getattr(self, f.name)
            if not isinstance(a, np.ndarray) or a.ndim != 1:
                raise TypeError(f"CoupRows.{f.name} must be a 1-d numpy array")
            want = _DTYPES[f.name]
            if want is not object and a.dtype != want:
                raise TypeError(
                    f"CoupRows.{f.name} must be {np.dtype(want)}, not {a.dtype}"
                )
            if n is None:
                n = len(a)
            elif len(a) != n:
                raise ValueError(f"CoupRows.{f.name} has {len(a)} rows, not {n}")

    def __len__(self) -> int:
        return len(self.table)

    @classmethod
    def from_columns(cls, **columns) -> CoupRows:
        """Convert each column to its dtype (lists, tuples or arrays)."""
        missing = set(_DTYPES) - set(columns)
        if missing:
            raise TypeError(f"CoupRows: missing columns {sorted(missing)}")
        out = {}
        for name, dtype in _DTYPES.items():
            col = columns[name]
            if dtype is object:
                arr = np.empty(len(col), dtype=object)
                arr[:] = list(col)
            else:
                arr = np.asarray(col, dtype=dtype)
            out[name] = arr
        return cls(**out)

    @classmethod
    def empty(cls) -> CoupRows:
        return cls.from_columns(**{name: [] for name in _DTYPES})

    def take(self, index: np.ndarray) -> CoupRows:
        """The rows at ``index`` (an integer or boolean array), same contract."""
        return CoupRows(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @classmethod
    def concat(cls, parts: list[CoupRows]) -> CoupRows:
        return cls(
            **{
                f.name: np.concatenate([getattr(p, f.name) for p in parts])
                for f in fields(cls)
            }
        )


@dataclass(frozen=True)
class ShoeClose:
    """A shoe closed in the period, as counted at its close.

    ``dealt`` and ``rank_counts`` are the cards of its coups (current
    revisions); ``burned`` the cards burned at its opening; ``left_counted``
    the undealt cards the croupier counted at the close (None: not counted).
    ``left_ranks``, when the close count is made by rank, the undealt cards of
    each rank. Certain findings (always an alert, no statistics):
    dealt + burned + left_counted != 52 x decks; a rank seen more than
    4 x decks times; with ``left_ranks``, a rank whose dealt + left + burned
    is still below 4 x decks (short even if every burned card was of it).
    """

    shoe: int
    table: int
    day: int  # gaming day of its close, date.toordinal()
    decks: int
    burned: int
    dealt: int
    left_counted: int | None
    rank_counts: dict[str, int]  # rank (RANKS) -> cards of it dealt; absent = 0
    left_ranks: dict[str, int] | None = None  # rank -> undealt cards counted


@dataclass(frozen=True)
class Alert:
    """One finding of the surveillance, for the pit boss's review queue.

    kind: "croupier" | "banker" | "table_day" | "table_cusum" | "shoe" |
    "shoe_count". subject: who or what, as a stable string: "croupier:<id>",
    "card:<n>" / "seat:<s>@session:<id>", "table:<id>@day:<ordinal>",
    "table:<id>", "shoe:<id>". test: which test ("false_draw_rate",
    "correction_rate", "bank_mismatch_rate", "banker_wins", "banker_money",
    "banker_share", "levy", "cusum_banker_share", "cusum_banker_share_up",
    "outcomes", "runs",
    "count", "rank_over", "rank_short"). statistic: the test's statistic
    (z-score, CUSUM value, chi-square...). p_value: the raw p-value (0.0 for
    a certain finding; for a CUSUM crossing, its false-alarm probability over
    the table's coups, n / ARL0). day: the gaming day it is dated
    (date.toordinal(): the last day of the subject's coups in the period, the
    crossing day of a CUSUM, the close day of a shoe). evidence: plain
    JSON-ready types only -- counts, expectation, interval or limits, the
    adjusted p-value ("q_value") and the series a chart needs.
    """

    kind: str
    subject: str
    test: str
    statistic: float
    p_value: float
    day: int
    evidence: dict = field(default_factory=dict)
