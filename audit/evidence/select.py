"""A period's ledger rows: what a bundle carries.

Whole sessions, as verify_ledger walks them: every session of the tables
that played a coup of the period, or opened on one of its gaming days, with
all its shoes, banker turns and coups (every revision), since a turn carries
its bank from coup to coup and a session may run past a cut-off; the
commission is then summed over the period's gaming days only. With them:
the coups' stakes and findings, the shoes' findings and releases, the
sessions' cagnotte counts and their attestations, the decisions on their
flags, the tables, and the house-rules and tableau versions the sessions and
coups were played under.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from django.db.models import Q

from audit.models import CagnotteAttestation, CagnotteCount, Flag, FlagEvent
from tables.models import (
    BankerTurn,
    Coup,
    Finding,
    HouseRules,
    Shoe,
    ShoeFinding,
    ShoeRelease,
    Stake,
    Table,
    TableauVersion,
    TableSession,
)


@dataclass
class Selection:
    from_day: date
    to_day: date
    table_ids: list[int]
    sessions: list[int] = field(default_factory=list)

    def querysets(self) -> dict:
        """label -> the queryset of its rows in the bundle (lazy)."""
        s = self.sessions
        coups = Coup.objects.filter(shoe__session_id__in=s)
        rules_ids = set(TableSession.objects.filter(pk__in=s, rules__isnull=False)
                        .values_list("rules_id", flat=True))
        rules_ids |= set(coups.order_by().values_list("rules_id", flat=True)
                         .distinct())
        table_ids = set(TableSession.objects.filter(pk__in=s)
                        .values_list("table_id", flat=True))
        rules = HouseRules.objects.filter(pk__in=rules_ids)
        counts = CagnotteCount.objects.filter(session_id__in=s)
        flags = Flag.objects.filter(Q(session_id__in=s) | Q(shoe__session_id__in=s)
                                    | Q(coup__shoe__session_id__in=s))
        return {
            "tables.tableauversion": TableauVersion.objects.filter(
                pk__in=rules.values("tableau_id")),
            "tables.table": Table.objects.filter(pk__in=table_ids),
            "tables.houserules": rules,
            "tables.tablesession": TableSession.objects.filter(pk__in=s),
            "tables.shoe": Shoe.objects.filter(session_id__in=s),
            "tables.shoefinding": ShoeFinding.objects.filter(shoe__session_id__in=s),
            "tables.shoerelease": ShoeRelease.objects.filter(shoe__session_id__in=s),
            "tables.bankerturn": BankerTurn.objects.filter(session_id__in=s),
            "tables.coup": coups,
            "tables.stake": Stake.objects.filter(coup__shoe__session_id__in=s),
            "tables.finding": Finding.objects.filter(coup__shoe__session_id__in=s),
            "audit.cagnottecount": counts,
            "audit.cagnotteattestation": CagnotteAttestation.objects.filter(
                count__session_id__in=s),
            "audit.flagevent": FlagEvent.objects.filter(flag__in=flags),
            # not bound (audit.flag is DERIVED): carried for reading
            "audit.flag": flags,
        }


def period_select(*, from_day: date, to_day: date,
                  table_ids: list[int] | None = None) -> Selection:
    sel = Selection(from_day, to_day, sorted(table_ids or []))
    played = Coup.objects.filter(gaming_day__gte=from_day, gaming_day__lte=to_day)
    opened = TableSession.objects.filter(gaming_day__gte=from_day,
                                         gaming_day__lte=to_day)
    if table_ids:
        played = played.filter(rules__table_id__in=table_ids)
        opened = opened.filter(table_id__in=table_ids)
    ids = set(opened.values_list("pk", flat=True))
    ids |= set(played.order_by().values_list("shoe__session_id", flat=True)
               .distinct())
    sel.sessions = sorted(ids)
    return sel
