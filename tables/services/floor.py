"""Services for the floor: tables, house rules, sessions, shoes, banker turns.

Each service is keyword-only, runs in one transaction, locks the row it moves
on, and writes its change-log row in that same transaction.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from casino.changelog import log_action

from ..errors import Conflict, Invalid
from ..models import BankerTurn, HouseRules, Shoe, Table, TableauVersion, TableSession
from . import ledger_pg

STANDARD_TABLEAU_VERSION = "chemmy-standard-1"


def gaming_day_for(moment: datetime, cutoff_hour: int) -> date:
    """The casino's accounting day: a coup at 03:00 with a 06:00 cut-off belongs
    to the previous day's gaming day."""
    local = timezone.localtime(moment)
    return (local - timedelta(hours=cutoff_hour)).date()


def next_seat(seat: int, seats: int) -> int:
    """The seat on the banker's right (seat numbers run that way and wrap)."""
    return seat % seats + 1


def _money(value: Decimal, field: str) -> Decimal:
    if not isinstance(value, Decimal) or not value.is_finite():
        raise Invalid(field, "must be a decimal amount")
    if value.as_tuple().exponent < -2:
        raise Invalid(field, "must have at most 2 decimal places")
    return value


def table_create(
    *,
    user,
    name: str,
    seats: int = 9,
    decks: int = 6,
    commission_rate: Decimal = Decimal("0.05"),
    commission_unit: Decimal = Decimal("0.10"),
    minimum_banco: Decimal = Decimal("100.00"),
    tableau_version: str = STANDARD_TABLEAU_VERSION,
    gaming_day_cutoff: int = 6,
    device: str = "",
) -> Table:
    with transaction.atomic():
        if Table.objects.filter(name=name).exists():
            raise Invalid("name", f"a table named {name!r} already exists")
        table = Table.objects.create(name=name, seats=seats)
        rules = house_rules_change(
            table=table,
            user=user,
            device=device,
            reason="table created",
            decks=decks,
            commission_rate=commission_rate,
            commission_unit=commission_unit,
            minimum_banco=minimum_banco,
            tableau_version=tableau_version,
            gaming_day_cutoff=gaming_day_cutoff,
        )
        table.rules = rules
        log_action(
            action="tables.table.created",
            user=user,
            device=device,
            obj=table,
            new={"name": name, "seats": seats, "rules_version": rules.version},
        )
    return table


def house_rules_change(
    *, table: Table, user, reason: str, device: str = "", **changes
) -> HouseRules:
    """Write a new version of a table's house rules (the old one stays, and
    every coup keeps the version it was checked against)."""
    allowed = {
        "decks",
        "commission_rate",
        "commission_unit",
        "minimum_banco",
        "tableau_version",
        "gaming_day_cutoff",
        "false_draw_sanction",
    }
    unknown = set(changes) - allowed
    if unknown:
        raise Invalid(sorted(unknown)[0], "is not a house rule")
    with transaction.atomic():
        table = Table.objects.select_for_update().get(pk=table.pk)
        current = table.rules
        values = {
            "decks": current.decks if current else 6,
            "commission_rate": current.commission_rate if current else Decimal("0.05"),
            "commission_unit": current.commission_unit if current else Decimal("0.10"),
            "minimum_banco": current.minimum_banco if current else Decimal("100.00"),
            "gaming_day_cutoff": current.gaming_day_cutoff if current else 6,
            "false_draw_sanction": (
                current.false_draw_sanction if current else HouseRules.Sanction.NONE
            ),
        }
        tableau_name = changes.pop(
            "tableau_version",
            current.tableau.version if current else STANDARD_TABLEAU_VERSION,
        )
        values.update({k: v for k, v in changes.items() if v is not None})
        try:
            tableau = TableauVersion.objects.get(version=tableau_name)
        except TableauVersion.DoesNotExist:
            raise Invalid(
                "tableau_version", f"unknown tableau {tableau_name!r}"
            ) from None
        _validate_rules(values)
        rules = HouseRules.objects.create(
            table=table,
            version=(current.version + 1) if current else 1,
            tableau=tableau,
            created_by=user if user and user.is_authenticated else None,
            **values,
        )
        Table.objects.filter(pk=table.pk).update(rules=rules)
        table.rules = rules
        log_action(
            action="tables.house_rules.changed",
            user=user,
            device=device,
            obj=table,
            reason=reason,
            old=_rules_dict(current) if current else None,
            new=_rules_dict(rules),
        )
    return rules


def _validate_rules(values: dict) -> None:
    if not 1 <= int(values["decks"]) <= 8:
        raise Invalid("decks", "must be between 1 and 8")
    rate = values["commission_rate"]
    if not Decimal("0") <= rate <= Decimal("0.5"):
        raise Invalid("commission_rate", "must be between 0 and 0.5")
    if values["commission_unit"] <= 0:
        raise Invalid("commission_unit", "must be positive")
    if _money(values["minimum_banco"], "minimum_banco") <= 0:
        raise Invalid("minimum_banco", "must be positive")
    if not 0 <= int(values["gaming_day_cutoff"]) <= 23:
        raise Invalid("gaming_day_cutoff", "must be an hour between 0 and 23")
    if values["false_draw_sanction"] not in HouseRules.Sanction.values:
        raise Invalid(
            "false_draw_sanction",
            "must be one of " + ", ".join(HouseRules.Sanction.values),
        )


def _rules_dict(rules: HouseRules) -> dict:
    return {
        "version": rules.version,
        "decks": rules.decks,
        "commission_rate": rules.commission_rate,
        "commission_unit": rules.commission_unit,
        "minimum_banco": rules.minimum_banco,
        "tableau": rules.tableau.version,
        "gaming_day_cutoff": rules.gaming_day_cutoff,
        "false_draw_sanction": rules.false_draw_sanction,
    }


def session_open(
    *, table: Table, user, croupier=None, device: str = ""
) -> TableSession:
    """Open a session; `croupier` runs it (default: whoever opens it)."""
    croupier = croupier or user
    with transaction.atomic():
        table = (
            Table.objects.select_for_update(of=("self",))
            .select_related("rules")
            .get(pk=table.pk)
        )
        if not table.active:
            raise Conflict("table", "this table is not active")
        if TableSession.objects.filter(table=table, closed_at__isnull=True).exists():
            raise Conflict("table", "this table already has an open session")
        now = timezone.now()
        session = TableSession.objects.create(
            table=table,
            opened_at=now,
            opened_by=user,
            croupier=croupier,
            gaming_day=gaming_day_for(now, table.rules.gaming_day_cutoff),
        )
        log_action(
            action="tables.session.opened",
            user=user,
            device=device,
            obj=session,
            new={
                "table": table.pk,
                "gaming_day": session.gaming_day,
                "croupier": croupier.pk,
            },
        )
    return session


def session_croupier_change(
    *, session: TableSession, croupier, user, reason: str = "", device: str = ""
) -> TableSession:
    """Hand the table to another croupier (a relief, or a pit boss's choice):
    from now on only he enters coups there (casino.roles.works_at)."""
    with transaction.atomic():
        session = TableSession.objects.select_for_update().get(pk=session.pk)
        if not session.is_open:
            raise Conflict("session", "this session is closed")
        if not croupier.is_active:
            raise Invalid("croupier", "this user is not active")
        old = session.croupier_id
        if old == croupier.pk:
            return session
        session.croupier = croupier
        session.save(update_fields=["croupier"])
        log_action(
            action="tables.session.croupier_changed",
            user=user,
            device=device,
            obj=session,
            reason=reason,
            old={"croupier": old},
            new={"croupier": croupier.pk},
        )
    return session


def session_close(*, session: TableSession, user, device: str = "") -> TableSession:
    """Close the session; an open shoe is closed and the banker's turn ends
    with his bank and garage (RULES.md: closing amount)."""
    with transaction.atomic():
        session = TableSession.objects.select_for_update().get(pk=session.pk)
        if not session.is_open:
            raise Conflict("session", "this session is already closed")
        for shoe in session.shoes.filter(closed_at__isnull=True):
            shoe_close(shoe=shoe, user=user, device=device)
        turn = session.turns.filter(closed_at__isnull=True).first()
        if turn is not None:
            _turn_close(turn, BankerTurn.End.SESSION_CLOSED, user=user, device=device)
        session.closed_at = timezone.now()
        session.closed_by = user
        session.save(update_fields=["closed_at", "closed_by"])
        log_action(
            action="tables.session.closed",
            user=user,
            device=device,
            obj=session,
            new={"closed_at": session.closed_at},
        )
    return session


def shoe_open(
    *,
    session: TableSession,
    user,
    decks: int | None = None,
    burned: int = 0,
    device: str = "",
) -> Shoe:
    with transaction.atomic():
        session = (
            TableSession.objects.select_for_update(of=("self",))
            .select_related("table__rules")
            .get(pk=session.pk)
        )
        if not session.is_open:
            raise Conflict("session", "this session is closed")
        if session.shoes.filter(closed_at__isnull=True).exists():
            raise Conflict("session", "close the current shoe before opening another")
        decks = session.table.rules.decks if decks is None else decks
        if not 1 <= decks <= 8:
            raise Invalid("decks", "must be between 1 and 8")
        if not 0 <= burned <= 52 * decks - 7:
            raise Invalid("burned", f"must be between 0 and {52 * decks - 7}")
        number = session.shoes.count() + 1
        shoe = Shoe.objects.create(
            session=session,
            number=number,
            decks=decks,
            burned=burned,
            opened_at=timezone.now(),
        )
        log_action(
            action="tables.shoe.opened",
            user=user,
            device=device,
            obj=shoe,
            new={
                "session": session.pk,
                "number": number,
                "decks": decks,
                "burned": burned,
            },
        )
    return shoe


def shoe_close(*, shoe: Shoe, user, device: str = "") -> Shoe:
    with transaction.atomic():
        shoe = Shoe.objects.select_for_update().get(pk=shoe.pk)
        if not shoe.is_open:
            raise Conflict("shoe", "this shoe is already closed")
        shoe.closed_at = timezone.now()
        shoe.save(update_fields=["closed_at"])
        log_action(
            action="tables.shoe.closed",
            user=user,
            device=device,
            obj=shoe,
            new={
                "dealt": shoe.dealt,
                "cards_left": shoe.cards_left,
                "coups": shoe.next_seq - 1,
            },
        )
    return shoe


def passed_bank_offer(
    session: TableSession,
) -> tuple[BankerTurn | None, Decimal | None]:
    """The bank standing on offer after a pass, if no turn has opened since."""
    last = session.turns.order_by("-number").first()
    return last, standing_offer(last)


def standing_offer(last: BankerTurn | None) -> Decimal | None:
    """The bank on offer after `last` (the session's latest turn) was passed."""
    if last is not None and last.end == BankerTurn.End.PASSED:
        return last.bank
    return None


def turn_open_check(
    *,
    session_open: bool,
    turn_open: bool,
    seats: int,
    minimum_banco: Decimal,
    last: BankerTurn | None,
    seat: int,
    bank: Decimal,
) -> tuple[Decimal, bool]:
    """May a turn open here with this seat and bank? Returns the bank and
    whether it is the passed bank taken over (banker_turn_open, shoe_play)."""
    if not session_open:
        raise Conflict("session", "this session is closed")
    if turn_open:
        raise Conflict("session", "a banker turn is already open")
    if not isinstance(seat, int) or not 1 <= seat <= seats:
        raise Invalid("seat", f"must be a seat between 1 and {seats}")
    bank = _money(bank, "bank")
    offer = standing_offer(last)
    took_passed = offer is not None and bank == offer and seat != last.seat
    if not took_passed and bank < minimum_banco:
        raise Invalid("bank", f"must be at least the minimum banco {minimum_banco}")
    return bank, took_passed


def turn_pass_check(turn: BankerTurn) -> None:
    """May the bank be passed now (banker_turn_pass, shoe_play)?"""
    if not turn.is_open:
        raise Conflict("turn", "this banker turn is already over")
    if turn.coups == 0:
        raise Conflict("turn", "the bank can only be passed after a coup")


def banker_turn_open(
    *, session: TableSession, user, seat: int, bank: Decimal, device: str = ""
) -> BankerTurn:
    """Open a banker turn. After a pass, whoever takes the bank opens with
    exactly its standing amount; otherwise the bank is at least the minimum."""
    with transaction.atomic():
        # PostgreSQL: the reads in one statement and the writes in another
        # (ledger_pg); elsewhere, or for a table without rules, the ORM's.
        fast = ledger_pg.lock_for_turn(session.pk) if ledger_pg.supported() else None
        if fast is not None:
            session, last, turn_id = fast
        else:
            session = (
                TableSession.objects.select_for_update(of=("self",))
                .select_related("table__rules")
                .get(pk=session.pk)
            )
            # One open turn at most, and it is the latest: one read says both.
            last = session.turns.order_by("-number").first()
        table = session.table
        turn_open = last is not None and last.closed_at is None
        bank, took_passed = turn_open_check(
            session_open=session.is_open,
            turn_open=turn_open,
            seats=table.seats,
            minimum_banco=table.rules.minimum_banco,
            last=last,
            seat=seat,
            bank=bank,
        )
        turn = BankerTurn(
            session=session,
            number=(last.number + 1) if last else 1,
            seat=seat,
            opening_bank=bank,
            bank=bank,
            took_passed_bank=took_passed,
            opened_at=timezone.now(),
            opened_by=user,
        )
        log = {
            "action": "tables.turn.opened",
            "user": user,
            "device": device,
            "obj": turn,
            "new": {"seat": seat, "bank": bank, "took_passed_bank": took_passed},
        }
        if fast is not None:
            ledger_pg.turn_write(turn, turn_id, log)
        else:
            turn.save()
            log_action(**log)
    return turn


def banker_turn_pass(*, turn: BankerTurn, user, device: str = "") -> BankerTurn:
    """Suite: the banker passes the bank after a win. He leaves with the bank
    and his garage; the bank is offered on at its standing amount."""
    with transaction.atomic():
        turn = BankerTurn.objects.select_for_update().get(pk=turn.pk)
        turn_pass_check(turn)
        _turn_close(turn, BankerTurn.End.PASSED, user=user, device=device)
    return turn


def _turn_close(turn: BankerTurn, end: str, *, user, device: str) -> None:
    new = turn_closing(turn, end, timezone.now())
    turn.save(update_fields=["closed_at", "end", "closing_amount"])
    log_action(
        action=f"tables.turn.{end}", user=user, device=device, obj=turn, new=new
    )


def turn_closing(turn: BankerTurn, end: str, now: datetime) -> dict:
    """End the turn in memory: the banker leaves with bank + garage when he
    passes, the garage alone when he lost. Returns the change log's `new`."""
    turn.closed_at = now
    turn.end = end
    turn.closing_amount = (
        turn.garage_total
        if end == BankerTurn.End.LOST
        else turn.bank + turn.garage_total
    )
    return {
        "bank": turn.bank,
        "garage_total": turn.garage_total,
        "commission_total": turn.commission_total,
        "closing_amount": turn.closing_amount,
        "coups": turn.coups,
    }
