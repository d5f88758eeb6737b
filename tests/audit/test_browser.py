"""The pit boss's pages in Chromium: floor, queue, a flag, a correction with
its money difference, the cagnotte count and attestation. Screenshots under
var/screenshots/ (floor*.png, queue.png, flag-*.png, correction-*.png,
cagnotte-*.png, stats.png) are what pit bosses and managers see."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.test import Client

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
D = Decimal


def sign_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.clear_cookies()
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


@pytest.fixture
def night(croupier, croupier2, manager, clock):
    """Two tables after a simulated shoe each (false draws injected), the
    first with a second shoe running. The clock moves ~20 s per step, so the
    coups take the time they take at a real table."""
    from datetime import timedelta

    from django.utils import timezone

    from tables import services
    from tables.models import TableSession
    from tables.simulation import simulate

    start = timezone.now() - timedelta(hours=2)
    with clock(start, timedelta(seconds=20)):
        simulate(user=croupier, tables=1, shoes=1, seed=5, false_draw_rate=0.06,
                 table_prefix="Salon Rouge")
    with clock(start + timedelta(minutes=7), timedelta(seconds=24)):
        simulate(user=croupier2, tables=1, shoes=1, seed=6, false_draw_rate=0.04,
                 table_prefix="Salon Privé")
    session = TableSession.objects.filter(table__name__startswith="Salon Rouge").get()
    shoe = services.shoe_open(session=session, user=croupier, burned=4)
    turn = session.turns.filter(closed_at__isnull=True).first()
    if turn is None:
        turn = services.banker_turn_open(session=session, user=croupier, seat=4,
                                         bank=D("500"))
    stake = services.StakeInput
    hands = ((["2H", "3D"], ["8C", "TS"]), (["4S", "KD", "2C"], ["6C", "QH"]))
    for n, (punter, banker) in enumerate(hands):
        # the first declared bank is 10 off: a critical bank_mismatch
        declared = turn.bank + 10 if n == 0 else turn.bank
        stakes = [stake(amount=D("50"), seat=turn.seat % 9 + 1)]
        if turn.tied_stakes:  # a tie's stakes stay on the table (tie_rule stay)
            stakes = [stake(amount=max(D(a), D("50")), seat=s, standing=w or None)
                      for s, w, a in turn.tied_stakes]
        services.coup_record(shoe_id=shoe.pk, user=croupier, punter=punter,
                             banker=banker, device="tablet-rouge",
                             declared_bank=declared, stakes=stakes)
        turn.refresh_from_db()
    return session


def test_floor_queue_flag_and_correction(page, live_server, night, pitboss,
                                         screenshot):
    sign_in(page, live_server, pitboss)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(live_server.url + "/floor/")
    assert page.get_by_role("heading", name=re.compile("Floor")).is_visible()
    assert page.get_by_role("region", name=re.compile("Salon Rouge")).is_visible()
    screenshot("floor")
    page.set_viewport_size({"width": 800, "height": 1280})
    page.reload()
    screenshot("floor-tablet-portrait")
    page.set_viewport_size({"width": 1366, "height": 900})

    page.get_by_role("link", name="Review queue").click()
    page.wait_for_load_state()
    false_draw = re.compile("^false draw$", re.I)
    assert page.get_by_role("link", name=false_draw).first.is_visible()
    screenshot("queue")
    page.get_by_label("Finding").select_option("false_draw")
    page.get_by_label("Side").select_option("banker")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_load_state()
    page.get_by_role("link", name=false_draw).first.click()
    page.wait_for_load_state()
    assert page.locator("td.hit").count() == 1  # the tableau cell in question
    assert page.get_by_text(re.compile("Drawing in an S cell")).first.is_visible()
    screenshot("flag-detail")

    # the banker's third card was mis-keyed: correct it and dismiss the flag,
    # after seeing the money difference
    page.get_by_role("link", name="Correct the coup and dismiss").click()
    page.wait_for_load_state()
    third = page.get_by_label("Banker 3")
    third.fill("" if third.input_value() else "KS")
    page.get_by_role("button", name="Preview the money difference").click()
    page.wait_for_load_state()
    assert page.get_by_role("region", name="Money difference").is_visible()
    screenshot("correction-diff")
    page.get_by_label("Reason (required)").fill("mis-keyed on the tablet")
    page.get_by_role("button", name="Confirm the correction").click()
    page.wait_for_load_state()
    # four eyes: his correction closes nothing by itself
    assert page.get_by_text("resolved by a correction, to review").first.is_visible()
    assert page.get_by_text(
        "Four eyes: this flag is about your own work").first.is_visible()
    screenshot("flag-to-review")


def test_cagnotte_count_and_attestation(page, live_server, night, pitboss,
                                        pitboss2, manager, screenshot):
    from audit.models import Flag
    from tables import services

    services.session_close(session=night, user=pitboss)
    sign_in(page, live_server, pitboss)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/floor/sessions/{night.pk}/")
    page.get_by_label("Counted in the box").fill("12.30")
    page.get_by_role("button", name="Enter the count").click()
    page.wait_for_load_state()
    assert page.get_by_text(re.compile("flagged for review")).is_visible()
    screenshot("cagnotte-variance")
    # Not "certifié exact" over an open variance: another pit boss decides it.
    sign_in(page, live_server, manager)
    page.goto(f"{live_server.url}/floor/sessions/{night.pk}/")
    assert page.get_by_text("Attest once the variance flag is decided").is_visible()
    assert page.get_by_role("button", name="Attest: certifié exact").count() == 0
    flag = Flag.objects.get(kind="cagnotte", session=night)
    sign_in(page, live_server, pitboss2)
    page.goto(f"{live_server.url}/floor/flags/{flag.pk}/")
    page.get_by_label("Confirm: it happened").fill("counted twice, box short")
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_load_state()
    sign_in(page, live_server, manager)
    page.goto(f"{live_server.url}/floor/sessions/{night.pk}/")
    page.get_by_role("button", name="Attest: certifié exact").click()
    page.wait_for_load_state()
    assert page.get_by_text("certifié exact").first.is_visible()
    screenshot("cagnotte-attested")
    page.goto(f"{live_server.url}/floor/stats/")
    assert page.get_by_role("table", name="Per croupier").is_visible()
    screenshot("stats")
