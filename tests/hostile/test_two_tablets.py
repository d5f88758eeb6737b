"""Two tablets posting to the same shoe at the same instant (PostgreSQL).

Real threads, each with its own database connection, released together by a
barrier, through the whole API (view, service, the shoe row locked with
SELECT ... FOR UPDATE). One sequence, no fork: with expected_seq the loser
gets a clear 409 naming it and succeeds on retry; without it both coups are
recorded one after the other; the same key from two tablets is one coup.
"""

from __future__ import annotations

import threading

import pytest

from .util import row_counts

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
ROUNDS = 12
# The banker's natural 9 wins every coup, so the bank is never lost and the
# race is only about the shoe. (The repeated cards are findings, not refusals.)
BODY = {
    "punter": ["2H", "3D"],
    "banker": ["9C", "KS"],
    "stakes": [{"seat": 2, "amount": "20.00"}],
}


def race(user, url: str, bodies: list[dict], keys: list[str]) -> list:
    """Post bodies[i] with keys[i] from two threads at the same instant."""
    from django.db import connection
    from rest_framework.test import APIClient

    barrier = threading.Barrier(2, timeout=10)
    answers: list = [None, None]
    failures: list = []

    def tablet(i: int) -> None:
        try:
            client = APIClient()
            client.force_authenticate(user=user)
            barrier.wait()
            answers[i] = client.post(
                url, bodies[i], format="json", headers={"Idempotency-Key": keys[i]}
            )
        except Exception as exc:  # re-raised in the test's thread
            failures.append(exc)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=tablet, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    if failures:
        raise failures[0]
    return answers


def next_seq(api, shoe) -> int:
    return api.get(f"/api/v1/shoes/{shoe.pk}/").json()["next_seq"]


def test_expected_seq_one_winner_the_loser_retries(api, croupier, shoe, turn):
    from tables.models import Coup
    from tables.selectors import turn_ledger_verify

    api.force_authenticate(user=croupier)
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    for r in range(ROUNDS):
        seq = next_seq(api, shoe)
        bodies = [{**BODY, "expected_seq": seq}, {**BODY, "expected_seq": seq}]
        bodies[1]["stakes"] = [{"seat": 3, "amount": "30.00"}]  # another coup
        keys = [f"r{r}-a", f"r{r}-b"]
        answers = race(croupier, url, bodies, keys)
        assert sorted(a.status_code for a in answers) == [201, 409], [
            a.json() for a in answers
        ]
        win = 0 if answers[0].status_code == 201 else 1
        lose = 1 - win
        assert answers[win].json()["seq"] == seq
        refusal = answers[lose].json()
        assert "expected_seq" in refusal, refusal
        assert refusal["detail"].startswith("expected_seq: the shoe moved on")
        # The loser re-reads the shoe and sends the same key again: recorded.
        bodies[lose]["expected_seq"] = next_seq(api, shoe)
        retry = api.post(
            url, bodies[lose], format="json", headers={"Idempotency-Key": keys[lose]}
        )
        assert retry.status_code == 201 and retry.json()["seq"] == seq + 1
    seqs = list(Coup.objects.filter(shoe=shoe).values_list("seq", flat=True))
    assert sorted(seqs) == list(range(1, 2 * ROUNDS + 1))
    turn.refresh_from_db()
    assert turn_ledger_verify(turn).ok


def test_without_expected_seq_both_are_recorded_in_turn(api, croupier, shoe, turn):
    from tables.models import Coup

    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    for r in range(ROUNDS):
        answers = race(croupier, url, [BODY, BODY], [f"n{r}-a", f"n{r}-b"])
        assert [a.status_code for a in answers] == [201, 201]
        assert sorted(a.json()["seq"] for a in answers) == [2 * r + 1, 2 * r + 2]
    seqs = sorted(Coup.objects.filter(shoe=shoe).values_list("seq", flat=True))
    assert seqs == list(range(1, 2 * ROUNDS + 1))


def test_the_same_key_from_two_tablets_is_one_coup(api, croupier, shoe, turn):
    """A retry racing its original (or one coup sent from two devices): one
    201, one 200 replay of the same coup, one row."""
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    for r in range(ROUNDS):
        before = row_counts()
        answers = race(croupier, url, [BODY, BODY], [f"k{r}", f"k{r}"])
        assert sorted(a.status_code for a in answers) == [200, 201]
        assert answers[0].json()["id"] == answers[1].json()["id"]
        assert row_counts()["Coup"] == before["Coup"] + 1
