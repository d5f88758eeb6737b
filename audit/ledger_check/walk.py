"""One session walked coup by coup: each coup settled again by the engine
and compared, then its banker turns, shoes and cagnotte re-computed
(audit/ledger_check/__init__.py says what and why)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Prefetch

from tables import chemmy
from tables.models import BankerTurn, Coup, HouseRules, Shoe, Stake, TableSession
from tables.rollups import OUTCOME_FIELD, current_coups, levy_expectation_of
from tables.services import gaming_day_for, next_seat
from tables.services.ledger import BANCO, tied_after

from ..models import CagnotteCount
from .differences import dict_diff, diff, ranges

ZERO = Decimal("0.00")
CHUNK = 500
COUP_FIELDS = (
    "punter_cards", "banker_cards", "punter_total", "banker_total", "outcome",
    "natural", "punter_choice", "banker_choice", "punter_seat", "punter_standing",
    "bank_before", "covered", "garage", "commission", "bank_after",
    "cards_left_before", "next_banker_seat", "finding_count",
)
STAKE_FIELDS = ("covered", "declined", "payout")


def empty_cell() -> dict:
    return {"coups": 0, "banker_wins": 0, "punter_wins": 0, "ties": 0,
            "covered": ZERO, "covered_sq": ZERO, "commission": ZERO,
            "levy_mean": ZERO, "levy_var": ZERO, "findings": {}}


@dataclass
class _TurnRun:
    """A banker turn as re-settled so far."""

    bank: Decimal
    coups: int = 0
    garage: Decimal = ZERO
    commission: Decimal = ZERO
    last_outcome: str | None = None
    suivi: int | None = None
    tied: list | None = None  # what stays on the table after a tie


@dataclass
class _ShoeRun:
    dealt: int = 0
    seen: Counter = field(default_factory=Counter)
    seqs: list[int] = field(default_factory=list)


@dataclass
class _Settled:
    values: dict
    stakes: list[tuple]  # (position, covered, declined, payout) per stake
    findings: list[chemmy.Finding]
    suivi: int | None
    tied: list | None = None  # BankerTurn.tied_stakes after it


class SessionWalk:
    """One session: its coups in dealing order, then its turns, shoes and
    cagnotte."""

    def __init__(self, run, session: TableSession):
        self.run_, self.check, self.session = run, run.check, session
        self.turns = {t.pk: t for t in BankerTurn.objects.filter(session=session)}
        self.shoes = {s.pk: s for s in Shoe.objects.filter(session=session)}
        self.state = {pk: _TurnRun(bank=t.opening_bank)
                      for pk, t in self.turns.items()}
        self.shoe_runs = {pk: _ShoeRun() for pk in self.shoes}
        self.stored_commission = ZERO
        self.commission = ZERO
        self.ctx = {"table_id": session.table_id, "session_id": session.pk,
                    "gaming_day": session.gaming_day,
                    "croupier_id": session.croupier_id}

    def run(self) -> None:
        coups = (
            current_coups().filter(shoe__session_id=self.session.pk)
            .order_by("shoe__number", "seq")
            .prefetch_related(
                Prefetch("stakes", queryset=Stake.objects.order_by("position")),
                "findings")
        )
        for coup in coups.iterator(chunk_size=CHUNK):
            self.coup(coup)
        self.finish_turns()
        self.finish_shoes()
        self.cagnotte()

    # -- one coup ------------------------------------------------------------

    def coup(self, coup: Coup) -> None:
        self.check.coups += 1
        shoe = self.shoes[coup.shoe_id]
        subject = (f"coup {coup.pk} (shoe {shoe.number}, seq {coup.seq}, "
                   f"rev {coup.revision})")
        ctx = {**self.ctx, "gaming_day": coup.gaming_day, "shoe_id": shoe.pk,
               "seq": coup.seq, "coup_id": coup.pk,
               "croupier_id": coup.entered_by_id}

        def add(name, stored, expected, verb="re-settled"):
            self.check.add(diff(subject, name, stored, expected, verb, **ctx))

        rules = self.run_.rules[coup.rules_id]
        turn = self.turns.get(coup.turn_id)
        state = self.state.get(coup.turn_id)
        self.structure(coup, rules, turn, add)
        carried = state.bank if state is not None else None
        # A bank a correction lost mid-turn: the table went on with the banks
        # it recorded (resettle.py), and so does the walk.
        bank = carried if carried is not None and carried > 0 else coup.bank_before
        stakes = list(coup.stakes.all())
        run = self.shoe_runs[shoe.pk]
        positions = [s.position for s in stakes]
        if positions != list(range(len(stakes))):
            add("stake positions", positions or "none",
                list(range(max(positions, default=-1) + 1)) or "at least one",
                verb="expected")
        try:
            settled = _resettle(
                coup, stakes, rules=rules,
                tableau=self.run_.tableaux[rules.tableau_id],
                seats=self.session.table.seats, bank=bank, shoe=shoe, dealt=run.dealt,
                seen=run.seen)
        except (chemmy.CoupError, ValueError, TypeError, KeyError) as exc:
            add("stakes and cards", "as recorded",
                f"refused by the rules ({_error(exc)})")
            settled = None
        if settled is not None:
            self.compare(coup, stakes, settled, add)
        values = settled.values if settled is not None else {
            f: getattr(coup, f) for f in COUP_FIELDS}
        codes = ([f.code for f in settled.findings] if settled is not None
                 else [f.code for f in coup.findings.all()])
        cards = list(coup.punter_cards) + list(coup.banker_cards)
        run.dealt += len(cards)
        run.seen.update(cards)
        run.seqs.append(coup.seq)
        if state is not None:
            state.bank = values["bank_after"]
            state.coups += 1
            state.garage += values["garage"]
            state.commission += values["commission"]
            state.last_outcome = values["outcome"]
            state.suivi = settled.suivi if settled is not None else None
            state.tied = settled.tied if settled is not None else None
        self.stored_commission += coup.commission
        self.commission += values["commission"]
        if self.run_.in_range(coup.gaming_day):
            self.rollup(coup, values, codes)

    def structure(self, coup, rules, turn, add) -> None:
        """Where the coup sits: its turn, its rules, its day."""
        session = self.session
        if turn is None:
            add("turn", coup.turn_id, f"a banker turn of session {session.pk}",
                verb="expected")
        elif coup.banker_seat != turn.seat:
            add("banker_seat", coup.banker_seat,
                f"{turn.seat} (turn {turn.number}'s seat)", verb="expected")
        if rules.table_id != session.table_id:
            add("rules", f"version {rules.version} of table {rules.table_id}",
                f"a version of table {session.table_id}", verb="expected")
        version = self.run_.tableaux[rules.tableau_id].version
        if coup.tableau_version != version:
            add("tableau_version", coup.tableau_version, version,
                verb="expected (its house rules')")
        day = gaming_day_for(coup.created_at, rules.gaming_day_cutoff)
        if coup.gaming_day != day:
            add("gaming_day", coup.gaming_day, day,
                verb=f"expected (recorded at {coup.created_at.isoformat()})")

    def compare(self, coup, stakes, settled: _Settled, add) -> None:
        for name in COUP_FIELDS:
            stored, expected = getattr(coup, name), settled.values[name]
            if stored != expected:
                add(name, stored, expected)
        for row, (_, covered, declined, payout) in zip(
            stakes, settled.stakes, strict=True
        ):
            who = f"seat {row.seat}" if row.seat is not None else row.standing
            for name, expected in zip(STAKE_FIELDS, (covered, declined, payout),
                                      strict=True):
                if getattr(row, name) != expected:
                    add(f"stake {row.position} ({who}) {name}",
                        getattr(row, name), expected)
        stored = sorted(_finding_row(f.code, f.severity, f.side, f.message,
                                     f.detail, f.tableau_version)
                        for f in coup.findings.all())
        version = coup.tableau_version
        expected = sorted(_finding_row(f.code, f.severity, f.side or "", f.message,
                                       f.detail, version)
                          for f in settled.findings)
        if stored != expected:
            add("findings", [_finding_label(r) for r in stored] or "none",
                [_finding_label(r) for r in expected] or "none",
                verb="re-derived")

    def rollup(self, coup, values, codes) -> None:
        rules = self.run_.rules[coup.rules_id]
        mean, var = levy_expectation_of(
            rules, self.run_.tableaux[rules.tableau_id].version, values["covered"])
        table_id = self.session.table_id
        for cell in (
            self.run_.cells.setdefault(
                (table_id, coup.gaming_day, coup.entered_by_id, coup.banker_seat),
                empty_cell()),
            # the table-day row of its house-rules version (the coarser grains
            # of a croupier's and a seat's month are sums of the cells)
            self.run_.table_days.setdefault(
                (table_id, coup.gaming_day, coup.rules_id), empty_cell()),
        ):
            cell["coups"] += 1
            if values["outcome"] in OUTCOME_FIELD:  # else named at the coup
                cell[OUTCOME_FIELD[values["outcome"]]] += 1
            cell["covered"] += values["covered"]
            cell["covered_sq"] += values["covered"] * values["covered"]
            cell["commission"] += values["commission"]
            cell["levy_mean"] += mean
            cell["levy_var"] += var
            for code in codes:
                cell["findings"][code] = cell["findings"].get(code, 0) + 1

    # -- the session's turns, shoes and cagnotte -------------------------------

    def finish_turns(self) -> None:
        by_number = {t.number: t for t in self.turns.values()}
        for turn in sorted(self.turns.values(), key=lambda t: t.number):
            self.check.turns += 1
            st = self.state[turn.pk]
            subject = (f"banker turn {turn.pk} (session {self.session.pk}, number "
                       f"{turn.number}, seat {turn.seat})")

            def add(name, stored, expected, verb="re-computed", subject=subject):
                self.check.add(diff(subject, name, stored, expected, verb,
                                     **self.ctx))

            bank = st.bank if st.coups else turn.opening_bank
            expected = {"bank": bank, "coups": st.coups, "garage_total": st.garage,
                        "commission_total": st.commission}
            if turn.closed_at is not None:
                lost = st.last_outcome == Coup.Outcome.PUNTER
                expected["closing_amount"] = st.garage if lost else bank + st.garage
            else:
                expected["closing_amount"] = None
                expected["suivi_seat"] = st.suivi
                expected["tied_stakes"] = st.tied
            for name, value in expected.items():
                if getattr(turn, name) != value:
                    add(name, getattr(turn, name), value)
            prev = by_number.get(turn.number - 1)
            if turn.took_passed_bank and prev is not None:
                passed = self.state[prev.pk]
                passed_bank = passed.bank if passed.coups else prev.opening_bank
                # A passed bank a correction has since lost keeps the opening
                # recorded at the table (resettle.py); otherwise it is the bank
                # the previous banker passed on.
                if passed_bank > 0 and turn.opening_bank != passed_bank:
                    add("opening_bank", turn.opening_bank, passed_bank,
                        verb=f"re-computed (the bank turn {prev.number} passed)")

    def finish_shoes(self) -> None:
        for shoe in sorted(self.shoes.values(), key=lambda s: s.number):
            self.check.shoes += 1
            run = self.shoe_runs[shoe.pk]
            subject = (f"shoe {shoe.pk} (session {self.session.pk}, number "
                       f"{shoe.number})")

            def add(name, stored, expected, verb="re-computed", subject=subject,
                    shoe=shoe):
                self.check.add(diff(subject, name, stored, expected, verb,
                                     **self.ctx, shoe_id=shoe.pk))

            top = max(run.seqs, default=0)
            if run.seqs != list(range(1, top + 1)):
                add("coup seqs", ranges(run.seqs), ranges(range(1, top + 1)),
                    verb="expected")
            if shoe.next_seq != top + 1:
                add("next_seq", shoe.next_seq, top + 1)
            if shoe.dealt != run.dealt:
                add("dealt", shoe.dealt, run.dealt)
            counts = dict(run.seen)
            if dict(shoe.card_counts) != counts:
                add("card_counts", *dict_diff(dict(shoe.card_counts), counts))

    def cagnotte(self) -> None:
        """The commission the app computes for the session's box (the sum over
        its stored coups, audit/services/cagnotte.py) against the re-settled
        one; and the latest count's own arithmetic."""
        name = self.session.table.name
        subject = (f"session {self.session.pk} ({name}, gaming day "
                   f"{self.session.gaming_day})")
        if self.stored_commission != self.commission:
            self.check.add(diff(
                subject, "cagnotte (commission over its coups)",
                self.stored_commission, self.commission, **self.ctx))
        count = (CagnotteCount.objects.filter(session=self.session)
                 .order_by("-counted_at", "-pk").first())
        if count is not None and count.variance != count.counted - count.computed:
            self.check.add(diff(
                f"cagnotte count {count.pk} of {subject}", "variance",
                count.variance, count.counted - count.computed,
                verb="re-computed (counted - computed)", **self.ctx))


def _resettle(coup: Coup, stakes: list[Stake], *, rules: HouseRules,
              tableau: chemmy.Tableau, seats: int, bank: Decimal, shoe: Shoe,
              dealt: int, seen: Counter) -> _Settled:
    """One coup settled again by the engine, as coup_prepare settles it."""
    verdict = chemmy.evaluate(coup.punter_cards, coup.banker_cards, tableau=tableau)
    inputs = [
        chemmy.StakeIn(amount=s.amount, seat=s.seat, standing=s.standing or None,
                       announcement=chemmy.Announcement(s.announcement))
        for s in stakes
    ]
    # A recorded suivi stands (resettle.py): it was checked when dealt.
    called = next((s.seat for s in inputs
                   if s.announcement is chemmy.Announcement.SUIVI), None)
    coverage = chemmy.cover_stakes(
        inputs, bank=bank, banker_seat=coup.banker_seat, seats=seats,
        minimum_banco=rules.minimum_banco, suivi_seat=called,
        **rules.cover_args())
    settlement = chemmy.settle(verdict.outcome, coverage, **rules.settle_args())
    cards = list(verdict.punter) + list(verdict.banker)
    findings = [
        *verdict.findings, *chemmy.house_findings(verdict, rules.prescriptions)
    ] + chemmy.shoe_findings(
        decks=shoe.decks, burned=shoe.burned, dealt_before=dealt,
        seen={c: seen[c] for c in set(cards) if c in seen}, new_cards=cards)
    if coup.declared_bank is not None:
        mismatch = chemmy.bank_mismatch_finding(declared=coup.declared_bank,
                                                carried=bank)
        if mismatch is not None:
            findings.append(mismatch)
    lost = settlement.turn_ends
    values = {
        "punter_cards": list(verdict.punter), "banker_cards": list(verdict.banker),
        "punter_total": verdict.punter_total, "banker_total": verdict.banker_total,
        "outcome": verdict.outcome.value, "natural": verdict.natural or "",
        "punter_choice": verdict.punter_choice or "",
        "banker_choice": verdict.banker_choice or "",
        "punter_seat": coverage.punter_seat,
        "punter_standing": coverage.punter_standing or "",
        "bank_before": settlement.bank_before, "covered": settlement.covered,
        "garage": settlement.garage, "commission": settlement.commission,
        "bank_after": settlement.bank_after,
        "cards_left_before": 52 * shoe.decks - shoe.burned - dealt,
        "next_banker_seat": next_seat(coup.banker_seat, seats) if lost else None,
        "finding_count": len(findings),
    }
    holder = (coverage.stakes[coverage.punter_index]
              if coverage.punter_index is not None else None)
    suivi = None
    if (settlement.outcome is chemmy.Outcome.BANKER and holder is not None
            and holder.stake.announcement in BANCO):
        suivi = holder.stake.seat
    return _Settled(
        values,
        [(c.index, c.covered, c.declined, payout)
         for c, payout in zip(coverage.stakes, settlement.payouts, strict=True)],
        findings, suivi,
        tied_after(settlement.outcome, coverage)
        if rules.tie_rule == HouseRules.Tie.STAY else None)


# "999" and "999.00": a finding's text keeps an amount as the request gave
# it, the money column gives it back in cents; same amount, same finding.
_DECIMAL = re.compile(r"(\d+)\.(\d+)")


def _canon(text: str) -> str:
    return _DECIMAL.sub(lambda m: f"{m[1]}.{m[2]}".rstrip("0").rstrip("."), text)


def _finding_row(code, severity, side, message, detail, version) -> tuple:
    return (code, side or "", severity, _canon(message),
            _canon(json.dumps(detail, sort_keys=True, default=str)), version)


def _finding_label(row: tuple) -> str:
    code, side, _, message, _, _ = row
    return f"{code}/{side or '-'} ({message})"


def _error(exc: Exception) -> str:
    if isinstance(exc, chemmy.CoupError):
        return f"{exc.field}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"
