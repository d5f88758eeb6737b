"""The rollups the reports read equal a recomputation from the current coup
revisions: after a simulated night, and after corrections (a revision that
replaces a coup adjusts its cells by delta)."""

from __future__ import annotations

import importlib.util
from decimal import Decimal

import pytest
from django.db import transaction

from tables.models import Coup, Finding
from tables.rollups import rollup_apply, rollup_recompute, rollup_snapshot, rollups_hold

from .conftest import DAY1, play

pytestmark = pytest.mark.django_db


def test_rollups_equal_the_coups_after_a_night(croupier, croupier2):
    play(croupier, DAY1, tables=2, shoes=2, seed=8, rate=0.05)
    assert Finding.objects.exists()
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells


def _revise(coup: Coup, **changes) -> Coup:
    """A new revision of `coup` with its cells moved by delta, the way a
    correction does it (old revision out, new one in, one transaction)."""
    fields = {f.attname: getattr(coup, f.attname) for f in Coup._meta.concrete_fields
              if f.attname not in ("id",)}
    fields.update(revision=coup.revision + 1, idempotency_key=None, **changes)
    table_id = coup.shoe.session.table_id
    old_codes = list(coup.findings.values_list("code", flat=True))
    with transaction.atomic():
        new = Coup.objects.create(**fields)
        rollup_apply(coup, old_codes, table_id=table_id, sign=-1)
        rollup_apply(new, [], table_id=table_id, sign=+1)
    return new


@pytest.mark.tampers  # writes records directly, not through the services
def test_rollups_equal_the_coups_after_corrections(croupier):
    play(croupier, DAY1, tables=1, shoes=1, seed=9, rate=0.1)
    with_finding = Coup.objects.filter(finding_count__gt=0).first()
    banker_win = Coup.objects.filter(outcome="banker", finding_count=0).first()
    _revise(with_finding, finding_count=0)  # the finding was a keying error
    _revise(banker_win, outcome="punter", commission=Decimal("0"),
            banker_seat=banker_win.banker_seat % 9 + 1)  # moves to another cell
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells
    from audit.reports.selectors import commission_report

    report = commission_report(from_day=DAY1, to_day=DAY1)
    current = rollup_recompute()
    assert report.total.coups == sum(c["coups"] for c in current.values())
    assert report.total.commission == sum(c["commission"] for c in current.values())


@pytest.mark.skipif(
    importlib.util.find_spec("tables.services.corrections") is None,
    reason="the corrections service is not there yet",
)
def test_rollups_equal_the_coups_after_the_corrections_service(croupier, pitboss):
    """Corrections through the real service: the corrected coup and every later
    coup it re-settles move their cells; the rollups still equal the coups."""
    from tables.services import StakeInput
    from tables.services.corrections import coup_correct

    play(croupier, DAY1, tables=1, shoes=1, seed=10, rate=0.1)
    for seq, punter, banker in ((3, ["9H", "KD"], ["2C", "3C"]),
                                (7, ["2D", "3D"], ["9S", "QC"])):
        coup = Coup.objects.filter(seq=seq).order_by("-revision").first()
        stakes = [StakeInput(amount=s.amount, seat=s.seat,
                             standing=s.standing or None,
                             announcement=s.announcement)
                  for s in coup.stakes.all()]
        coup_correct(coup=coup, user=pitboss, reason="cards mis-keyed",
                     punter=punter, banker=banker, stakes=stakes)
    assert Coup.objects.filter(revision__gt=1).count() >= 2
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells
