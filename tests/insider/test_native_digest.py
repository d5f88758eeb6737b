"""No false alarm from the app's own writes (issue 33 item 0): a row is
digested as the database will give it back, whatever Python form its values
were written in (casino/native.py). Beat wrote its 900 s interval as 900.0,
PostgreSQL gave back 900, and verify_trail called the row edited.

Every digested field of every trail-bound model is written, in forms other
than the one read back, into a column of its own type (a scratch table, the
field's own conversion on the way in and Django's converters on the way
out): the digest of the value written is the digest of the value read back.
Then the app's own paths write such forms (beat's code making its schedules,
a user, house rules) and verify_trail passes. On PostgreSQL and on SQLite."""

from __future__ import annotations

import copy
import uuid
import warnings
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.db.models.expressions import Col

from casino.native import internal_type
from casino.trail import BOUND, ledger_digest, trail_verify
from casino.trail import _plan as _digest_plan

PARIS = ZoneInfo("Europe/Paris")
_INT = [7.0, Decimal("7"), "7", True, 0.0]
# Per column kind: values in forms other than the one the database returns.
VARIANTS: dict[str, list] = {
    **dict.fromkeys(
        ("AutoField", "BigAutoField", "IntegerField", "BigIntegerField",
         "SmallIntegerField", "PositiveIntegerField", "PositiveSmallIntegerField",
         "PositiveBigIntegerField"), _INT),
    "BooleanField": [1, 0, "t", "False"],
    "DecimalField": ["1.5", 1.5, 2, Decimal("1.50000"), Decimal("1.005"),
                     Decimal("-1.005"), Decimal("0.00005"), 1.005, "0",
                     # each rounds to a default: left out as read back
                     Decimal("0.05004"), Decimal("0.100001"), Decimal("100.004")],
    "FloatField": [2, Decimal("2.5"), "2.5", 0.1, -0.0],
    "DateTimeField": [
        datetime(2024, 3, 5, 10, 11, 12, 345678),  # naive: the default zone
        datetime(2024, 3, 31, 2, 30),  # naive, in the spring-forward gap
        datetime(2024, 10, 27, 2, 30, 0, 1),  # naive, in the autumn fold
        datetime(2024, 3, 5, 10, 11, 12, 345678, tzinfo=PARIS),
        datetime(2024, 3, 5, 23, 59, 59, 999999,
                 tzinfo=timezone(timedelta(hours=5, minutes=30))),
        date(2024, 3, 31),
        "2024-03-05T10:11:12.345678+01:00",
        "2024-03-05 10:11:12",
    ],
    "DateField": [
        datetime(2024, 3, 5, 23, 30, tzinfo=UTC),  # the 6th in Paris
        datetime(2024, 3, 5, 23, 30),
        "2024-03-05",
    ],
    "CharField": [5, "  é ü  ", "x" * 3],
    "TextField": [5, "line\r\nnext", "é"],
    "UUIDField": [uuid.UUID(int=7).hex.upper()],
    "JSONField": [
        {"b": 1e16, "a": [-0.0, 1e-07, 1.5, 1.0, 2**70, 1.5e300, "é", None]},
        (1, 2.50, "x"),
        [True, {"z": {"y": 0.1}}],
        12.0,
    ],
}


# Fields whose type takes only some texts (a time zone's name).
OWN_VARIANTS = {
    "django_celery_beat.crontabschedule.timezone": [
        "Europe/Paris", ZoneInfo("UTC"), PARIS, "UTC"],
}


def _column(field) -> str:
    target = field
    while target.is_relation:
        target = target.target_field
    if field.is_relation:
        return target.rel_db_type(connection)
    return field.cast_db_type(connection)


def roundtrip(field, value):
    """`value` written into a column of `field`'s type as Django writes the
    field, and read back through Django's converters for the field."""
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS native_probe")
        cursor.execute(f"CREATE TEMPORARY TABLE native_probe (v {_column(field)})")
        with warnings.catch_warnings():  # Django's naive-datetime warning
            warnings.simplefilter("ignore", RuntimeWarning)
            prepared = field.get_db_prep_save(value, connection)
        cursor.execute("INSERT INTO native_probe (v) VALUES (%s)", [prepared])
        cursor.execute("SELECT v FROM native_probe")
        (got,) = cursor.fetchone()
        cursor.execute("DROP TABLE native_probe")
    col = Col("native_probe", field)
    converters = (connection.ops.get_db_converters(col)
                  + col.get_db_converters(connection))
    for convert in converters:
        got = convert(got, col, connection)
    return got


_TOO_BIG = object()


def _fitting(field, value):
    """The form cut to the column's length; _TOO_BIG for a number its
    column cannot hold (the database refuses it: nothing to digest)."""
    max_length = getattr(field, "max_length", None)
    if isinstance(value, str) and max_length:
        return value[:max_length]
    if internal_type(field) == "DecimalField":
        whole = field.max_digits - field.decimal_places
        if abs(Decimal(str(value))) >= 10 ** whole:
            return _TOO_BIG
    return value


def _bound_fields():
    for label in BOUND:
        model = apps.get_model(label)
        names = {p[0] for p in _digest_plan(model)}
        for field in model._meta.concrete_fields:
            if field.attname in names:
                yield label, model, field


def test_every_bound_field_type_has_variants():
    """A field type added to a bound model needs its forms here, or the
    round trip below would not try it."""
    missing = {internal_type(f) for _, _, f in _bound_fields()} - set(VARIANTS)
    assert not missing, f"add non-canonical forms for {sorted(missing)}"


@pytest.mark.django_db
def test_a_value_digests_as_the_database_gives_it_back():
    tried = 0
    problems = []
    for label, model, field in _bound_fields():
        own = OWN_VARIANTS.get(f"{label}.{field.name}")
        for variant in own or VARIANTS[internal_type(field)]:
            variant = _fitting(field, variant)
            if variant is _TOO_BIG:
                continue
            try:
                with transaction.atomic():
                    back = roundtrip(field, variant)
            except Exception as exc:  # noqa: BLE001 - a form the column refuses
                problems.append(f"{label}.{field.name} {variant!r}: {exc}")
                continue
            written = model()  # a callable default differs between two
            read = copy.copy(written)
            setattr(written, field.attname, variant)
            setattr(read, field.attname, back)
            tried += 1
            if ledger_digest(written) != ledger_digest(read):
                problems.append(f"{label}.{field.name}: {variant!r} was digested "
                                f"otherwise than {back!r}, as read back")
    assert not problems, "\n".join(problems[:20])
    assert tried > 400  # every bound field, each in several forms


@pytest.mark.django_db
def test_a_changed_value_still_changes_the_digest():
    """The forms are folded, never the values: 900 and 901, 1.50 and 1.51,
    a time a microsecond later, 1e16 and 1e16 + 2 still differ."""
    from django_celery_beat.models import ClockedSchedule, IntervalSchedule

    from tables.models import HouseRules, TableauVersion

    pairs = [
        (IntervalSchedule, "every", 900.0, 901),
        (HouseRules, "commission_unit", "1.5", Decimal("1.51")),
        (HouseRules, "commission_rate", "0.05", Decimal("0.0501")),
        (ClockedSchedule, "clocked_time", datetime(2024, 3, 5, 10),
         datetime(2024, 3, 5, 10, 0, 0, 1, tzinfo=PARIS)),
        (TableauVersion, "rows", {"a": 1e16}, {"a": 10**16 + 2}),
        (TableauVersion, "rows", {"a": 1.0}, {"a": 1.5}),
    ]
    for model, name, one, other in pairs:
        a = model()
        b = copy.copy(a)
        setattr(a, name, one)
        setattr(b, name, other)
        assert ledger_digest(a) != ledger_digest(b), (model, name, one, other)


def _beat_entries(settings):
    """Beat's own code writing its schedules from CELERY_BEAT_SCHEDULE, as
    `celery beat` does at start (DatabaseScheduler.update_from_dict, with
    the project's Entry: casino/beat.py)."""
    from casino.beat import Entry
    from casino.celery import app

    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        Entry.from_entry(name, app=app, **entry)


@pytest.mark.django_db
def test_beats_schedules_verify(settings):
    from django_celery_beat.models import IntervalSchedule

    _beat_entries(settings)
    anchor = IntervalSchedule.objects.get(every=settings.TRAIL_ANCHOR_MINUTES * 60)
    assert anchor.period == "seconds"
    check = trail_verify(anchors=False)
    assert check.ok, check.problem
    _beat_entries(settings)  # beat's second start: the same rows, nothing new
    assert trail_verify(anchors=False).ok


@pytest.mark.django_db
def test_the_apps_writes_in_other_forms_verify(table, manager):
    from django.contrib.auth.models import User
    from django_celery_beat.models import (
        ClockedSchedule,
        CrontabSchedule,
        IntervalSchedule,
        PeriodicTask,
    )

    from casino.changelog import log_action
    from tables.models import HouseRules

    with warnings.catch_warnings():  # Django's naive-datetime warning
        warnings.simplefilter("ignore", RuntimeWarning)
        every = IntervalSchedule.objects.create(every=600.0, period="seconds")
        clocked = ClockedSchedule.objects.create(
            clocked_time=datetime(2030, 1, 2, 3, 4, 5, 678901))
        CrontabSchedule.objects.create(minute=5, hour=6)
        PeriodicTask.objects.create(
            name="forms", task="trail.anchor", interval=every,
            start_time=date(2030, 1, 1), kwargs='{"reason": "interval"}')
        PeriodicTask.objects.create(name="once", task="trail.anchor",
                                    clocked=clocked, one_off=True)
        User.objects.create_user(
            username="forms", password="pw-forms-forms",
            date_joined=datetime(2024, 3, 31, 2, 30), is_active=1)
    rules = HouseRules.objects.filter(table=table).order_by("-version").first()
    with transaction.atomic():
        row = HouseRules.objects.create(
            table=table, version=rules.version + 1.0, decks=8.0,
            commission_rate="0.05", commission_unit=0.1, minimum_banco=150,
            tableau_id=str(rules.tableau_id), gaming_day_cutoff="5",
            effective_from=datetime(2030, 1, 1, 23, 30, tzinfo=UTC),
        )
        log_action(action="tables.rules.changed", user=manager, device="test",
                   obj=row, new={"version": row.version})
    check = trail_verify(anchors=False)
    assert check.ok, check.problems


@pytest.mark.django_db
def test_a_sub_second_interval_is_read_back_as_itself(settings):
    """The trail's checkpoints every 0.5 s were stored as every 0 seconds,
    and beat, reading its schedules back from the database (every five
    minutes), sent them as fast as it looped (casino/beat.py)."""
    from django_celery_beat.models import PeriodicTask

    from casino.beat import Entry
    from casino.celery import app

    assert settings.CELERY_BEAT_SCHEDULER == "casino.beat:Scheduler"
    assert settings.TRAIL_CHECKPOINT_SECONDS == 0.5
    _beat_entries(settings)
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        row = PeriodicTask.objects.get(name=name)
        read_back = Entry(row, app=app).schedule.run_every
        assert read_back == entry["schedule"] > timedelta(0), (name, read_back)
    checkpoint = PeriodicTask.objects.get(name="trail-checkpoint").interval
    assert (checkpoint.every, checkpoint.period) == (500_000, "microseconds")
    anchor = PeriodicTask.objects.get(name="trail-anchor").interval
    assert anchor.period == "seconds"  # whole seconds: as before
    assert trail_verify(anchors=False).ok
    _beat_entries(settings)  # beat's second start: the same rows, nothing new
    assert trail_verify(anchors=False).ok
