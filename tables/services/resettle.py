"""Re-settling a session from a corrected coup on (corrections.py says the
rules): the walk re-computes each later coup in dealing order along the turn
structure as recorded, and the plan collects what changes."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from decimal import Decimal

from django.utils import timezone

from .. import chemmy
from ..errors import Conflict, Invalid
from ..models import BankerTurn, Coup
from ..rollups import current_coups
from .correction_plan import (
    COMPARED,
    MONEY_FIELDS,
    CorrectionPlan,
    CoupChange,
    TurnChange,
    _recorded_stakes,
    _suivi_after,
    _tied_after,
)
from .coups import _engine_stakes, tableau_for
from .facts import next_seat, player_card_clean


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

    def run(self, punter, banker, stakes, declared_bank,
            cards: Sequence[str] = ()) -> list[CoupChange]:
        out = []
        for coup in self.coups[self.start:]:
            corrected = coup.pk == self.target.pk
            if corrected:
                change = self._settle(coup, punter, banker, stakes, declared_bank,
                                      strict=True,
                                      player_cards=_cards_kept(coup, stakes, cards))
            else:
                change = self._settle(coup, tuple(coup.punter_cards),
                                      tuple(coup.banker_cards),
                                      _recorded_stakes(coup), coup.declared_bank,
                                      strict=False,
                                      player_cards=[s.player_card
                                                    for s in coup.stakes.all()])
            change.changed = corrected or _differs(coup, change)
            out.append(change)
        return out

    def _settle(self, coup, punter, banker, stakes, declared, *, strict,
                player_cards: Sequence[str] = ()):
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
        settlement = chemmy.settle(verdict.outcome, coverage, **rules.settle_args())
        dealt, seen = self._shoe(coup)
        cards = list(punter) + list(banker)
        findings = [
            *verdict.findings, *chemmy.house_findings(verdict, rules.prescriptions)
        ] + chemmy.shoe_findings(
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
             "player_card": (player_cards[c.index]
                             if c.index < len(player_cards) else ""),
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
                  "minimum_banco": rules.minimum_banco, **rules.cover_args()}
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


def _cards_kept(coup: Coup, stakes, cards: Sequence[str]) -> list[str]:
    """The corrected coup's player cards: as the correction gives them, else
    the card the revision before had for the same seat or standing player (a
    correction of the cards or amounts does not lose who sat there)."""
    before = {(s.seat, s.standing or ""): s.player_card for s in coup.stakes.all()}
    return [
        card or before.get((s.seat, s.standing or ""), "")
        for s, card in zip(stakes, cards, strict=True)
    ]


def _plan(coup: Coup, punter, banker, stakes, declared_bank) -> CorrectionPlan:
    if not stakes:
        raise Invalid("stakes", "at least one stake is needed for a coup")
    cards = [
        player_card_clean(getattr(s, "player_card", ""), f"stakes[{i}].player_card")
        for i, s in enumerate(stakes)
    ]
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
    changes = walk.run(punter, banker, engine_stakes, declared_bank, cards)
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
                       closing_amount=garage, suivi_seat=None, tied_stakes=None)
            walk.issue(walk.target, "turn_closed",
                       f"Turn {turn.number} (seat {turn.seat}) now loses its "
                       "bank: it is closed; the next seat opens a new bank.")
        else:
            prev = by_turn[turn_id][-1] if by_turn[turn_id] else None
            ch = new_by_id.get(prev.pk) if prev else None
            new["suivi_seat"] = _suivi_after(prev, ch.values if ch else None)
            new["tied_stakes"] = _tied_after(prev, ch.values if ch else None)
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
