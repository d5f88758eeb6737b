"""Correcting a coup: a new revision, and every later coup re-settled.

A coup is never edited. A pit boss's correction writes revision r+1 of that
coup (cards, stakes, declared bank); the engine runs again; then every later
coup of the session is re-computed in dealing order (shoe by shoe, coup by
coup), because the bank carried forward, the card counts of the shoe and a
bank passed on to the next banker all flow from one coup to the next. A later
coup whose record comes out different gets its own new revision, reason
"re-settled after correction of coup N"; one that comes out the same keeps
its revision (writing an identical one would only add noise). Banker turns,
shoes and the daily rollups follow in the same transaction.

Who won may change. The turn structure as recorded is a fact (who held the
bank, when a turn ended, which bank the next banker opened with): money is
re-computed along it, never a new structure invented. Where the corrected
outcome contradicts it, the plan lists an *issue* and the caller raises a
flag for a pit boss:

- a coup now lost by the banker, yet his turn went on: the later coups of
  that turn are settled on the banks recorded at the table;
- a coup now won by the banker that ended his turn as lost: the turn's
  closing amount becomes bank + garage, the record of how it ended stays;
- a recorded announcement that no longer fits the re-computed bank (a banco
  solo of the old bank): the stake is covered as a plain stake.

`coup_correct_preview` computes the plan and writes nothing; its digest is
what the pit boss confirms, and `coup_correct` refuses if the table moved on
meanwhile (a new coup, another correction) so the money shown is the money
written.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from casino.changelog import log_actions

from .. import chemmy
from ..errors import Conflict, Forbidden, Invalid
from ..models import BankerTurn, Coup, Finding, Shoe, Stake
from ..rollups import current_coups, rollup_apply
from .coups import BANCO, StakeInput, _engine_stakes, tableau_for
from .floor import next_seat

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
            json.dumps(body, sort_keys=True, default=str).encode()
        ).hexdigest()
        return body

    @property
    def digest(self) -> str:
        return self.to_dict()["digest"]


@dataclass(frozen=True)
class CorrectionResult:
    plan: CorrectionPlan
    revision: Coup  # the corrected coup's new revision
    revisions: list[Coup]  # every new revision, in dealing order


def _plain(v):
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, tuple):
        return list(v)
    return v


def _plain_dict(d: dict) -> dict:
    return {k: _plain(v) for k, v in d.items()}


def _stake_dict(s: Stake) -> dict:
    return {"seat": s.seat, "standing": s.standing, "announcement": s.announcement,
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


class _Walk:
    """Re-computes the session's coups from the corrected one on."""

    def __init__(self, target: Coup, coups: list[Coup], turns: list[BankerTurn]):
        self.target = target
        self.coups = coups
        self.start = next(i for i, c in enumerate(coups) if c.pk == target.pk)
        self.issues: list[dict] = []
        self.bank: dict[int, Decimal | None] = {}  # turn id -> carried bank
        self.last_coup: dict[int, Coup] = {}  # turn id -> last coup (new values)
        self.last_values: dict[int, dict | None] = {}
        self.turn_last_seq: dict[int, tuple] = {}
        self.shoe_state: dict[int, tuple[int, Counter]] = {}
        self.turns = {t.pk: t for t in turns}
        for c in coups:
            c.turn = self.turns[c.turn_id]  # one object per turn
        self.new_opening: dict[int, Decimal] = {}
        for c in coups:
            self.turn_last_seq[c.turn_id] = (c.shoe.number, c.seq)

    def issue(self, coup: Coup, kind: str, message: str) -> None:
        self.issues.append({"coup": coup.pk, "shoe": coup.shoe.number,
                            "seq": coup.seq, "kind": kind, "message": message})

    def _enter_turn(self, turn: BankerTurn) -> None:
        if turn.pk in self.bank:
            return
        before = [c for c in self.coups[: self.start] if c.turn_id == turn.pk]
        if before:
            self.bank[turn.pk] = before[-1].bank_after
            self.last_coup[turn.pk] = before[-1]
            self.last_values[turn.pk] = None
            return
        self.bank[turn.pk] = self.opening(turn)
        self.last_coup[turn.pk] = None
        self.last_values[turn.pk] = None

    def opening(self, turn: BankerTurn) -> Decimal:
        """A turn that took a passed bank opens with that bank as re-computed."""
        if turn.pk in self.new_opening:
            return self.new_opening[turn.pk]
        opening = turn.opening_bank
        prev = next(
            (t for t in self.turns.values() if t.number == turn.number - 1), None
        )
        if turn.took_passed_bank and prev is not None and prev.pk in self.bank:
            carried = self.bank[prev.pk]
            if carried and carried != opening:
                opening = carried
            elif not carried:
                self.issue(self.target, "passed_bank_lost",
                           f"Turn {turn.number} took over the bank turn "
                           f"{prev.number} passed on, which is now lost: it keeps "
                           f"its recorded opening bank {turn.opening_bank}.")
        self.new_opening[turn.pk] = opening
        return opening

    def _shoe(self, coup: Coup) -> tuple[int, Counter]:
        if coup.shoe_id not in self.shoe_state:
            dealt, seen = 0, Counter()
            for c in self.coups[: self.start]:
                if c.shoe_id == coup.shoe_id:
                    dealt += len(c.punter_cards) + len(c.banker_cards)
                    seen.update(c.punter_cards + c.banker_cards)
            self.shoe_state[coup.shoe_id] = (dealt, seen)
        return self.shoe_state[coup.shoe_id]

    def run(self, punter, banker, stakes, declared_bank) -> list[CoupChange]:
        out = []
        for coup in self.coups[self.start:]:
            corrected = coup.pk == self.target.pk
            if corrected:
                change = self._settle(coup, punter, banker, stakes, declared_bank,
                                      strict=True)
            else:
                change = self._settle(coup, tuple(coup.punter_cards),
                                      tuple(coup.banker_cards),
                                      _recorded_stakes(coup), coup.declared_bank,
                                      strict=False)
            change.changed = corrected or _differs(coup, change)
            out.append(change)
        return out

    def _settle(self, coup, punter, banker, stakes, declared, *, strict):
        turn = coup.turn
        self._enter_turn(turn)
        rules, seats = coup.rules, coup.shoe.session.table.seats
        carried = self.bank[turn.pk]
        if carried is None or carried <= 0:
            bank = coup.bank_before  # the turn went on at the table: keep its bank
        else:
            bank = carried
        verdict = chemmy.evaluate(punter, banker,
                                  tableau=tableau_for(coup.tableau_version))
        prev = self.last_coup[turn.pk]
        suivi = _suivi_after(prev, self.last_values[turn.pk])
        coverage = self._cover(coup, stakes, bank, seats, rules, suivi, strict)
        settlement = chemmy.settle(verdict.outcome, coverage,
                                   commission_rate=rules.commission_rate,
                                   commission_unit=rules.commission_unit)
        dealt, seen = self._shoe(coup)
        cards = list(punter) + list(banker)
        findings = list(verdict.findings) + chemmy.shoe_findings(
            decks=coup.shoe.decks, burned=coup.shoe.burned, dealt_before=dealt,
            seen=dict(seen), new_cards=cards)
        if declared is not None:
            mismatch = chemmy.bank_mismatch_finding(declared=declared, carried=bank)
            if mismatch is not None:
                findings.append(mismatch)
        self.shoe_state[coup.shoe_id] = (dealt + len(cards), seen + Counter(cards))
        lost = settlement.turn_ends
        last = self.turn_last_seq[turn.pk] == (coup.shoe.number, coup.seq)
        self._check_structure(coup, turn, lost, last)
        values = {
            "punter_cards": list(verdict.punter), "banker_cards": list(verdict.banker),
            "punter_total": verdict.punter_total, "banker_total": verdict.banker_total,
            "outcome": verdict.outcome.value, "natural": verdict.natural or "",
            "punter_choice": verdict.punter_choice or "",
            "banker_choice": verdict.banker_choice or "",
            "punter_seat": coverage.punter_seat,
            "punter_standing": coverage.punter_standing or "",
            "declared_bank": declared, "bank_before": settlement.bank_before,
            "covered": settlement.covered, "garage": settlement.garage,
            "commission": settlement.commission, "bank_after": settlement.bank_after,
            "cards_left_before": 52 * coup.shoe.decks - coup.shoe.burned - dealt,
            "next_banker_seat": next_seat(coup.banker_seat, seats) if lost else None,
        }
        stake_rows = [
            {"position": c.index, "seat": c.stake.seat,
             "standing": c.stake.standing or "",
             "announcement": c.stake.announcement.value, "amount": c.stake.amount,
             "covered": c.covered, "declined": c.declined, "payout": payout}
            for c, payout in zip(coverage.stakes, settlement.payouts, strict=True)
        ]
        values["_stakes"] = stake_rows
        self.bank[turn.pk] = None if lost and not last else settlement.bank_after
        self.last_coup[turn.pk] = coup
        self.last_values[turn.pk] = values
        return CoupChange(coup, strict, values, stake_rows, findings)

    def _cover(self, coup, stakes, bank, seats, rules, suivi, strict):
        kwargs = {"bank": bank, "banker_seat": coup.banker_seat, "seats": seats,
                  "minimum_banco": rules.minimum_banco}
        if strict:
            return chemmy.cover_stakes(stakes, suivi_seat=suivi, **kwargs)
        # The record stands: a suivi was checked when it was dealt.
        called = next((s.seat for s in stakes if s.announcement == "suivi"), None)
        try:
            return chemmy.cover_stakes(stakes, suivi_seat=called, **kwargs)
        except chemmy.CoupError as exc:
            plain = [
                chemmy.StakeIn(amount=s.amount, seat=s.seat, standing=s.standing)
                for s in stakes
            ]
            self.issue(coup, "announcement",
                       f"Coup {coup.seq} of shoe {coup.shoe.number}: {exc.message} "
                       f"with the re-computed bank {bank}; covered as plain stakes.")
            return chemmy.cover_stakes(plain, **kwargs)

    def _check_structure(self, coup, turn, lost, last):
        where = f"Coup {coup.seq} of shoe {coup.shoe.number}"
        if lost and not last:
            self.issue(coup, "bank_lost_mid_turn",
                       f"{where} now loses the bank, yet turn {turn.number} "
                       "(seat {}) went on: its later coups are settled on the banks "
                       "recorded at the table.".format(turn.seat))
        elif last and not lost and turn.end == BankerTurn.End.LOST:
            self.issue(coup, "bank_kept_turn_ended",
                       f"{where} is now a banker win, yet turn {turn.number} "
                       f"(seat {turn.seat}) ended there as lost: its closing "
                       "amount becomes bank + garage.")


def _differs(coup: Coup, change: CoupChange) -> bool:
    if any(getattr(coup, f) != change.values[f] for f in COMPARED):
        return True
    old_f = sorted((f.code, f.side, f.message) for f in coup.findings.all())
    new_f = sorted((f.code, f.side or "", f.message) for f in change.findings)
    if old_f != new_f:
        return True
    old_s = [(s.covered, s.declined, s.payout, s.announcement)
             for s in coup.stakes.all()]
    new_s = [(s["covered"], s["declined"], s["payout"], s["announcement"])
             for s in change.stakes]
    return old_s != new_s


def _session_coups(session_id: int) -> list[Coup]:
    return list(
        current_coups().filter(shoe__session_id=session_id)
        .select_related("shoe__session__table", "turn", "rules", "entered_by")
        .prefetch_related("stakes", "findings")
        .order_by("shoe__number", "seq")
    )


def _plan(coup: Coup, punter, banker, stakes, declared_bank) -> CorrectionPlan:
    if not stakes:
        raise Invalid("stakes", "at least one stake is needed for a coup")
    engine_stakes = _engine_stakes(stakes)
    punter = chemmy.parse_hand(punter, field="punter")
    banker = chemmy.parse_hand(banker, field="banker")
    coups = _session_coups(coup.shoe.session_id)
    current = next(
        (c for c in coups if c.shoe_id == coup.shoe_id and c.seq == coup.seq), None
    )
    if current is None or current.pk != coup.pk:
        raise Conflict(
            "coup",
            f"this is revision {coup.revision}; revision "
            f"{current.revision if current else '?'} is the current one",
        )
    turns = list(BankerTurn.objects.filter(session_id=coup.shoe.session_id)
                 .order_by("number"))
    walk = _Walk(current, coups, turns)
    changes = walk.run(punter, banker, engine_stakes, declared_bank)
    if not _differs(current, changes[0]):
        raise Invalid("punter", "the correction changes nothing in this coup")
    return CorrectionPlan(current, changes, _turn_changes(walk, coups, changes),
                          _shoe_changes(walk, coups), walk.issues)


def _turn_changes(walk: _Walk, coups, changes) -> list[TurnChange]:
    new_by_id = {c.old.pk: c for c in changes}
    by_turn: dict[int, list] = defaultdict(list)
    for c in coups:
        by_turn[c.turn_id].append(c)
    out = []
    first = walk.target.turn.number
    for turn in sorted(walk.turns.values(), key=lambda t: t.number):
        if turn.number < first:
            continue
        turn_id = turn.pk
        if turn_id not in walk.bank:
            walk.bank[turn_id] = walk.opening(turn)  # a turn with no coup yet
        opening = walk.opening(turn)
        last = None
        garage = commission = Decimal("0.00")
        for c in by_turn[turn_id]:
            ch = new_by_id.get(c.pk)
            v = ch.values if ch else {f: getattr(c, f) for f in MONEY_FIELDS}
            garage += v["garage"]
            commission += v["commission"]
            last = ch.values if ch else {"bank_after": c.bank_after,
                                         "outcome": c.outcome}
        lost = last is not None and last["outcome"] == "punter"
        bank = last["bank_after"] if last else opening
        new = {"opening_bank": opening, "bank": bank, "garage_total": garage,
               "commission_total": commission}
        if turn.closed_at is not None:
            new["closing_amount"] = garage if lost else bank + garage
        elif lost:
            # The open turn's last coup now loses the bank: it cannot go on
            # with nothing to cover a stake, so it ends here, as coup_record
            # would have ended it.
            new.update(closed_at=timezone.now(), end=BankerTurn.End.LOST,
                       closing_amount=garage, suivi_seat=None)
            walk.issue(walk.target, "turn_closed",
                       f"Turn {turn.number} (seat {turn.seat}) now loses its "
                       "bank: it is closed; the next seat opens a new bank.")
        else:
            prev = by_turn[turn_id][-1] if by_turn[turn_id] else None
            ch = new_by_id.get(prev.pk) if prev else None
            new["suivi_seat"] = _suivi_after(prev, ch.values if ch else None)
        old = {k: getattr(turn, k) for k in new}
        if old != new:
            out.append(TurnChange(turn, old, new))
    return out


def _shoe_changes(walk: _Walk, coups) -> dict[int, dict]:
    out = {}
    for shoe_id, (dealt, seen) in walk.shoe_state.items():
        shoe = next(c.shoe for c in coups if c.shoe_id == shoe_id)
        if dealt != shoe.dealt or dict(seen) != shoe.card_counts:
            out[shoe_id] = {"dealt": dealt, "card_counts": dict(seen)}
    return out


def coup_correct_preview(
    *, coup: Coup, punter: Sequence[str], banker: Sequence[str],
    stakes: Sequence[StakeInput], declared_bank: Decimal | None = None,
) -> CorrectionPlan:
    """The correction and everything it re-settles, with the money difference.
    Writes nothing."""
    return _plan(coup, punter, banker, stakes, declared_bank)


def coup_correct(
    *, coup: Coup, user, reason: str, punter: Sequence[str], banker: Sequence[str],
    stakes: Sequence[StakeInput], declared_bank: Decimal | None = None,
    plan_digest: str | None = None, device: str = "",
) -> CorrectionResult:
    """Write the correction as a new revision and re-settle what follows."""
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("reason", "a correction needs a reason")
    if coup.entered_by_id == getattr(user, "pk", None):
        raise Forbidden("coup", "four eyes: you entered this coup, another pit "
                        "boss must correct it")
    with transaction.atomic():
        # Same lock order as coup_record (shoe, then turn): no deadlock.
        list(Shoe.objects.select_for_update().filter(session_id=coup.shoe.session_id)
             .order_by("pk"))
        list(BankerTurn.objects.select_for_update()
             .filter(session_id=coup.shoe.session_id).order_by("pk"))
        plan = _plan(coup, punter, banker, stakes, declared_bank)
        if plan_digest is not None and plan_digest != plan.digest:
            raise Conflict("plan_digest", "the table moved on since the preview; "
                           "preview the correction again")
        return _apply(plan, user=user, reason=reason, device=device)


def _apply(plan: CorrectionPlan, *, user, reason: str, device: str):
    now = timezone.now()
    target = plan.target
    revisions, logs = [], []
    for ch in plan.changed:
        old = ch.old
        why = reason if ch.corrected else (
            f"re-settled after correction of coup {target.seq} "
            f"of shoe {target.shoe.number}")
        values = {k: v for k, v in ch.values.items() if not k.startswith("_")}
        new = Coup.objects.create(
            shoe_id=old.shoe_id, turn_id=old.turn_id, seq=old.seq,
            revision=old.revision + 1, rules_id=old.rules_id,
            tableau_version=old.tableau_version, gaming_day=old.gaming_day,
            created_at=old.created_at, entered_by_id=old.entered_by_id,
            device=old.device, banker_seat=old.banker_seat,
            finding_count=len(ch.findings), corrected_by=user, corrected_at=now,
            correction_reason=why, **values)
        Stake.objects.bulk_create(Stake(coup=new, **s) for s in ch.stakes)
        Finding.objects.bulk_create(
            Finding(coup=new, code=f.code, severity=f.severity, side=f.side or "",
                    detail=dict(f.detail), message=f.message,
                    tableau_version=old.tableau_version)
            for f in ch.findings)
        table_id = old.shoe.session.table_id
        rollup_apply(old, ch.old_codes, table_id=table_id, sign=-1)
        rollup_apply(new, [f.code for f in ch.findings], table_id=table_id)
        revisions.append(new)
        summary = ch.to_dict()
        logs.append({
            "action": "tables.coup.corrected" if ch.corrected
            else "tables.coup.resettled",
            "obj": new, "reason": why, "old": summary["old"],
            "new": {**summary["new"], "revision": new.revision,
                    "supersedes": old.pk},
        })
    for shoe_id, state in plan.shoes.items():
        Shoe.objects.filter(pk=shoe_id).update(**state)
    for tc in plan.turns:
        BankerTurn.objects.filter(pk=tc.turn.pk).update(**tc.new)
    body = plan.to_dict()
    logs.append({
        "action": "tables.coup.correction_applied", "obj": revisions[0],
        "reason": reason,
        "new": {"commission_delta": body["commission_delta"],
                "payout_delta_by_seat": body["payout_delta_by_seat"],
                "revisions": [r.pk for r in revisions], "turns": body["turns"],
                "issues": plan.issues, "digest": body["digest"]},
    })
    # Logged last, in one batch: the trail's lock is held from here to the
    # commit (a shoe's worth of re-settled coups is one insert).
    log_actions([{"user": user, "device": device, **row} for row in logs])
    return CorrectionResult(plan, revisions[0], revisions)
