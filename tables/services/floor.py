"""Services for the floor: tables, house rules, sessions, shoes (banker turns:
turns.py).

Each service is keyword-only, runs in one transaction, locks the row it moves
on, and writes its change-log row in that same transaction.
"""

from __future__ import annotations

from decimal import Decimal

from django.utils import timezone

from casino.changelog import log_action
from casino.continuity import guard, seal_check

from .. import chemmy
from ..errors import Conflict, Invalid
from ..models import BankerTurn, Shoe, ShoeFinding, Table, TableSession
from .access import croupier_check
from .facts import gaming_day_for, next_seat  # noqa: F401 - next_seat re-exported
from .hooks import shoe_closed, shoe_findings_written
from .house import STANDARD_TABLEAU_VERSION, house_rules_change, rules_in_force
from .turns import _turn_close

# A count beyond two full shoes of 8 decks is a slip of the keypad, not a
# count: refused, naming the field (a shoe long by a few cards still counts).
CARDS_LEFT_MAX = 2 * 52 * 8


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
    with guard(user=user, device=device):
        if Table.objects.filter(name=name).exists():
            raise Invalid("name", f"a table named {name!r} already exists")
        table = Table.objects.create(name=name, seats=seats)
        # The new row sealed first: its rules are a change laid over it.
        log_action(
            action="tables.table.created",
            user=user,
            device=device,
            obj=table,
            new={"name": name, "seats": seats},
        )
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
    return table


def session_open(
    *, table: Table, user, croupier=None, device: str = ""
) -> TableSession:
    """Open a session; `croupier` runs it (default: whoever opens it)."""
    croupier = croupier or user
    with guard(user=user, device=device):
        table = (
            Table.objects.select_for_update(of=("self",), no_key=True)
            .select_related("rules")
            .get(pk=table.pk)
        )
        seal_check(table, table.rules)
        if not table.active:
            raise Conflict("table", "this table is not active")
        if TableSession.objects.filter(table=table, closed_at__isnull=True).exists():
            raise Conflict("table", "this table already has an open session")
        now = timezone.now()
        # The latest version is written with the cut-off a scheduled one will
        # keep; the day is read with it, then the version in force that day.
        gaming_day = gaming_day_for(now, table.rules.gaming_day_cutoff)
        rules = rules_in_force(table, gaming_day)
        if rules.pk != table.rules_id:
            seal_check(rules)  # a version scheduled for later, now in force
        if rules.gaming_day_cutoff != table.rules.gaming_day_cutoff:
            gaming_day = gaming_day_for(now, rules.gaming_day_cutoff)
        session = TableSession.objects.create(
            table=table,
            opened_at=now,
            opened_by=user,
            croupier=croupier,
            gaming_day=gaming_day,
            rules=rules,
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
    with guard(user=user, device=device):
        session = TableSession.objects.select_for_update(no_key=True).get(pk=session.pk)
        seal_check(session)
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
            rows=[session],
        )
    return session


def session_close(*, session: TableSession, user, device: str = "") -> TableSession:
    """Close the session; an open shoe is closed and the banker's turn ends
    with his bank and garage (docs/rules.md, "Banker turns and the suite")."""
    with guard(user=user, device=device):
        session = TableSession.objects.select_for_update(no_key=True).get(pk=session.pk)
        seal_check(session)
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
    with guard(user=user, device=device):
        session = (
            TableSession.objects.select_for_update(of=("self",), no_key=True)
            .select_related("table__rules")
            .get(pk=session.pk)
        )
        seal_check(session)
        croupier_check(user, session)
        if not session.is_open:
            raise Conflict("session", "this session is closed")
        if session.shoes.filter(closed_at__isnull=True).exists():
            raise Conflict("session", "close the current shoe before opening another")
        decks = session.house_rules.decks if decks is None else decks
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


def shoe_close(
    *, shoe: Shoe, user, cards_left: int | None = None, device: str = ""
) -> Shoe:
    """Close the shoe. `cards_left`: the cards the croupier counted left
    undealt (the tablet always asks; the API may omit it). Dealt + burned +
    counted must be 52 x decks (docs/rules.md, "The shoe"): any other total
    is the critical finding shoe_count, a ShoeFinding bound to this close's
    log row, whose review flag starts in this same transaction (hooks.py)."""
    if cards_left is not None and (
        type(cards_left) is not int or not 0 <= cards_left <= CARDS_LEFT_MAX
    ):
        raise Invalid(
            "cards_left", f"must be a whole number from 0 to {CARDS_LEFT_MAX}"
        )
    with guard(user=user, device=device):
        shoe = (
            Shoe.objects.select_for_update(of=("self",), no_key=True)
            .select_related("session")
            .get(pk=shoe.pk)
        )
        seal_check(shoe, shoe.session)
        croupier_check(user, shoe.session)
        if not shoe.is_open:
            raise Conflict("shoe", "this shoe is already closed")
        shoe.closed_at = timezone.now()
        shoe.left_counted = cards_left
        shoe.save(update_fields=["closed_at", "left_counted"])
        found = []
        if cards_left is not None:
            finding = chemmy.shoe_count_finding(
                shoe.decks, shoe.burned, shoe.dealt, cards_left
            )
            if finding is not None:
                found.append(
                    ShoeFinding.objects.create(
                        shoe=shoe,
                        code=finding.code,
                        severity=finding.severity,
                        detail=dict(finding.detail),
                        message=finding.message,
                        created_at=shoe.closed_at,
                    )
                )
                # its review flag, in this transaction (hooks.py)
                shoe_findings_written(shoe, found, user=user)
        new = {
            "dealt": shoe.dealt,
            "cards_left": shoe.cards_left,
            "coups": shoe.next_seq - 1,
        }
        if cards_left is not None:
            new["left_counted"] = cards_left
            new["findings"] = [f.code for f in found]
        log_action(
            action="tables.shoe.closed",
            user=user,
            device=device,
            obj=shoe,
            new=new,
            rows=found,
        )
        # after the commit, never in it: the live surveillance's look (hooks.py)
        shoe_closed(shoe.pk)
    return shoe
