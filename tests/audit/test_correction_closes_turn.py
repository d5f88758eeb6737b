"""A correction that ends an open banker turn can be made (issue "a real
shift", item 13): its preview's digest covers what the pit boss saw and
approved, not the clock at which the turn will be closed. Runs on SQLite and,
with DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tables import services
from tables.models import BankerTurn

from .conftest import BANKER_WINS, PUNTER_WINS, stake


def test_correcting_the_open_turns_last_coup_into_a_banker_loss(
        shoe, turn, deal, pitboss, clock):
    deal(shoe, BANKER_WINS, [stake("300")])
    last = deal(shoe, BANKER_WINS, [stake("100", seat=4)])
    punter, banker = PUNTER_WINS
    kwargs = {"punter": punter, "banker": banker,
              "stakes": [stake("100", seat=4)]}
    # Every call of the clock moves on a minute: the preview and the
    # confirmation never see the same "now".
    with clock(timezone.now(), timedelta(minutes=1)):
        plan = services.coup_correct_preview(coup=last, **kwargs)
        shown = plan.to_dict()
        (closing,) = shown["turns"]
        assert closing["new"]["end"] == "lost"
        assert [i["kind"] for i in shown["issues"]] == ["turn_closed"]
        result = services.coup_correct(
            coup=last, user=pitboss, reason="the punter had a natural 9",
            plan_digest=shown["digest"], **kwargs)
    assert result.revision.outcome == "punter"
    closed = BankerTurn.objects.get(pk=turn.pk)
    assert closed.closed_at is not None and closed.end == "lost"
    assert str(closed.closing_amount) == closing["new"]["closing_amount"]


def test_the_digest_still_covers_the_money(shoe, turn, deal, pitboss):
    """What the pit boss approved is still held: a different closing amount
    (here, another stake) is another digest."""
    deal(shoe, BANKER_WINS, [stake("300")])
    last = deal(shoe, BANKER_WINS, [stake("100", seat=4)])
    punter, banker = PUNTER_WINS
    a = services.coup_correct_preview(coup=last, punter=punter, banker=banker,
                                      stakes=[stake("100", seat=4)])
    b = services.coup_correct_preview(coup=last, punter=punter, banker=banker,
                                      stakes=[stake("200", seat=4)])
    assert a.digest != b.digest
    again = services.coup_correct_preview(coup=last, punter=punter, banker=banker,
                                          stakes=[stake("100", seat=4)])
    assert again.digest == a.digest
