"""What a correction changes, as data: each coup's old and new record, the
banker turns and shoes that follow, the turn-structure issues, the money
difference, and the digest the pit boss confirms (corrections.py)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from .. import chemmy
from ..models import BankerTurn, Coup, HouseRules, Stake
from .coups import BANCO

MONEY_FIELDS = ("bank_before", "covered", "garage", "commission", "bank_after")
COMPARED = (
    "punter_cards", "banker_cards", "punter_total", "banker_total", "outcome",
    "natural", "punter_choice", "banker_choice", "punter_seat", "punter_standing",
    "declared_bank", *MONEY_FIELDS, "cards_left_before", "next_banker_seat",
)


@dataclass
class CoupChange:
    old: Coup
    corrected: bool  # the coup the pit boss corrected (else re-settled)
    values: dict
    stakes: list[dict]
    findings: list[chemmy.Finding]
    changed: bool = False

    @property
    def old_codes(self) -> list[str]:
        return [f.code for f in self.old.findings.all()]

    def to_dict(self) -> dict:
        old = self.old
        before = {**{f: _plain(getattr(old, f)) for f in COMPARED},
                  "findings": self.old_codes,
                  "stakes": [_stake_dict(s) for s in old.stakes.all()]}
        after = {**{f: _plain(self.values[f]) for f in COMPARED},
                 "findings": [f.code for f in self.findings],
                 "stakes": [_plain_dict({k: v for k, v in s.items()
                                         if k != "position"})
                            for s in self.stakes]}
        # Moving the cards left in the shoe alone changes no money: the page
        # lists those coups in one line, not one row each.
        material = any(before[k] != after[k] for k in before
                       if k != "cards_left_before")
        return {
            "coup": old.pk, "shoe": old.shoe.number, "seq": old.seq,
            "revision": old.revision, "corrected": self.corrected,
            "changed": self.changed, "material": material or self.corrected,
            "old": before, "new": after,
        }


@dataclass
class TurnChange:
    turn: BankerTurn
    old: dict
    new: dict

    def to_dict(self) -> dict:
        return {"turn": self.turn.pk, "number": self.turn.number,
                "seat": self.turn.seat, "old": _plain_dict(self.old),
                "new": _plain_dict(self.new)}


@dataclass
class CorrectionPlan:
    target: Coup
    changes: list[CoupChange]
    turns: list[TurnChange]
    shoes: dict[int, dict]  # shoe id -> new running state
    issues: list[dict] = field(default_factory=list)

    @property
    def changed(self) -> list[CoupChange]:
        return [c for c in self.changes if c.changed]

    @property
    def commission_delta(self) -> Decimal:
        return sum(
            (c.values["commission"] - c.old.commission for c in self.changed),
            Decimal("0.00"),
        )

    def payout_delta_by_seat(self) -> dict[str, Decimal]:
        """What each player gains (+) or owes (-) compared with the record."""
        out: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
        for c in self.changed:
            for s in c.old.stakes.all():
                out[_who(s.seat, s.standing)] -= s.payout
            for s in c.stakes:
                out[_who(s["seat"], s["standing"])] += s["payout"]
        return {k: v for k, v in sorted(out.items()) if v}

    def to_dict(self) -> dict:
        body = {
            "coup": self.target.pk, "shoe": self.target.shoe.number,
            "seq": self.target.seq,
            "commission_delta": str(self.commission_delta),
            "payout_delta_by_seat": {
                k: str(v) for k, v in self.payout_delta_by_seat().items()
            },
            "coups": [c.to_dict() for c in self.changed],
            "turns": [t.to_dict() for t in self.turns],
            "issues": self.issues,
        }
        body["digest"] = hashlib.sha256(
            json.dumps(_as_approved(body), sort_keys=True, default=str).encode()
        ).hexdigest()
        return body

    @property
    def digest(self) -> str:
        return self.to_dict()["digest"]


def _as_approved(body: dict) -> dict:
    """What the digest covers: what the pit boss saw and approved. A turn the
    correction closes is closed when it is written, so its closing *time* is
    the clock's, not the preview's (the page shows that the turn closes, and
    its closing amount, never the time): digesting it would make every such
    correction a conflict with its own preview."""
    turns = []
    for t in body["turns"]:
        new = dict(t["new"])
        if new.get("closed_at") is not None and t["old"].get("closed_at") is None:
            new["closed_at"] = "on confirmation"
        turns.append({**t, "new": new})
    return {**body, "turns": turns}


def _plain(v):
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, tuple):
        return list(v)
    return v


def _plain_dict(d: dict) -> dict:
    return {k: _plain(v) for k, v in d.items()}


def _stake_dict(s: Stake) -> dict:
    return {"seat": s.seat, "standing": s.standing, "player_card": s.player_card,
            "announcement": s.announcement,
            "amount": str(s.amount), "covered": str(s.covered),
            "declined": str(s.declined), "payout": str(s.payout)}


def _who(seat, standing) -> str:
    return f"seat {seat}" if seat is not None else f"standing {standing}"


def _recorded_stakes(coup: Coup) -> list[chemmy.StakeIn]:
    return [
        chemmy.StakeIn(amount=s.amount, seat=s.seat, standing=s.standing or None,
                       announcement=chemmy.Announcement(s.announcement))
        for s in coup.stakes.all()
    ]


def _tied_after(coup: Coup | None, values: dict | None = None) -> list | None:
    """BankerTurn.tied_stakes after `coup` (ledger.tied_after): its covered
    stakes when it is a tie played under house rule tie_rule "stay"."""
    if coup is None or coup.rules.tie_rule != HouseRules.Tie.STAY:
        return None
    outcome = values["outcome"] if values else coup.outcome
    if outcome != "tie":
        return None
    if values:
        stakes = values["_stakes"]
    else:
        stakes = [_stake_dict(s) for s in coup.stakes.all()]
    tied = [
        [s["seat"], s["standing"] or "", f"{Decimal(s['covered']):.2f}"]
        for s in stakes
        if Decimal(s["covered"]) > 0
    ]
    return tied or None


def _suivi_after(coup: Coup | None, values: dict | None = None) -> int | None:
    """The seat that may call suivi after `coup`: its punter went banco and lost."""
    if coup is None:
        return None
    outcome = values["outcome"] if values else coup.outcome
    seat = values["punter_seat"] if values else coup.punter_seat
    if values:
        stakes = values["_stakes"]
    else:
        stakes = [_stake_dict(s) for s in coup.stakes.all()]
    if outcome != "banker" or seat is None:
        return None
    for s in stakes:
        if s["seat"] == seat and s["announcement"] in BANCO:
            return seat
    return None
