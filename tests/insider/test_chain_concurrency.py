"""The chain under concurrent writers on PostgreSQL: one writer at a time
holds it, and the next one links to what the last one committed (the head is
read after the lock, with a fresh snapshot: migration casino 0009)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections, transaction

from casino.changelog import chain_hold, log_action
from casino.models import ChangeLog
from casino.trail import trail_verify

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _in_thread(fn, errors):
    def run():
        try:
            fn()
        except Exception as exc:  # reported to the test
            errors.append(exc)
        finally:
            connections.close_all()

    return threading.Thread(target=run)


def test_a_writer_waiting_for_the_chain_links_to_what_the_holder_committed():
    errors: list = []
    held, order = threading.Event(), []

    def holder():
        with transaction.atomic():
            chain_hold()
            held.set()
            time.sleep(0.5)  # the other writer is queued on the chain meanwhile
            order.append(log_action(action="test.first").pk)

    def waiter():
        held.wait(5)
        with transaction.atomic():
            order.append(log_action(action="test.second").pk)

    threads = [_in_thread(holder, errors), _in_thread(waiter, errors)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    first, second = (ChangeLog.objects.get(pk=pk) for pk in order)
    assert (first.action, second.action) == ("test.first", "test.second")
    assert second.prev_hash == first.hash
    assert trail_verify().ok


def test_many_writers_at_once_make_one_chain():
    errors: list = []

    def writer(n):
        def run():
            for i in range(10):
                with transaction.atomic():
                    log_action(action="test.burst", new={"writer": n, "i": i})
        return run

    threads = [_in_thread(writer(n), errors) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert ChangeLog.objects.filter(action="test.burst").count() == 80
    check = trail_verify()
    assert check.ok, check.problem
