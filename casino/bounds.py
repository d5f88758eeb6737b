"""Sane bounds for the dates and times a request carries (issue 33, item 9).

A date that parses is not yet a date the casino can mean: `entered_at`
0001-01-01 or house rules from 9999-12-31 were accepted, and the day after
9999-12-31 is an OverflowError (a 500) wherever the app adds a day. The
bounds, the same on the API and the pages (the services check them):

- a moment the tablet's clock gives (`entered_at`): not before EARLIEST
  (2000-01-01, before any coup this software can have seen) and not more than
  CLOCK_AHEAD (5 minutes: a tablet's clock a little fast) after the server's
  clock; a coup queued offline for days is in the past, and welcome;
- a day a change starts from (house rules' and a tableau's `effective_from`):
  not more than DAYS_AHEAD (5 years) after today (nor before today: never
  retroactive, as the services already say);
- a day a report, a re-audit or a page's filter names: from FIRST_DAY
  (2000-01-01) to LAST_DAY_AHEAD (1 year) after today.

Out of bounds: Invalid naming the field (400 on the API, the form's error on
a page).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.utils import timezone

from .errors import Invalid

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
FIRST_DAY = EARLIEST.date()
CLOCK_AHEAD = timedelta(minutes=5)
DAYS_AHEAD = timedelta(days=5 * 366)
LAST_DAY_AHEAD = timedelta(days=366)


def check_moment(field: str, value: datetime, *, now: datetime | None = None) -> None:
    """A moment told by a device's clock: time-zone aware, from EARLIEST to
    CLOCK_AHEAD after now."""
    if not isinstance(value, datetime) or timezone.is_naive(value):
        raise Invalid(field, "must be a date and time with its time zone")
    now = now or timezone.now()
    if value < EARLIEST:
        raise Invalid(field, f"must not be before {EARLIEST.date()}")
    if value > now + CLOCK_AHEAD:
        raise Invalid(field, "is ahead of the server's clock by more than "
                      f"{int(CLOCK_AHEAD.total_seconds() // 60)} minutes: "
                      "check the device's clock")


def check_start_day(field: str, value: date, *, today: date | None = None) -> None:
    """A day a change starts from: at most DAYS_AHEAD after today."""
    today = today or timezone.localdate()
    if value > today + DAYS_AHEAD:
        raise Invalid(field, f"must be within {DAYS_AHEAD.days // 366} years "
                      f"from today (at most {today + DAYS_AHEAD})")


def check_day(field: str, value: date, *, today: date | None = None) -> None:
    """A day a report or a filter names: FIRST_DAY to LAST_DAY_AHEAD after
    today."""
    today = today or timezone.localdate()
    if value < FIRST_DAY:
        raise Invalid(field, f"must not be before {FIRST_DAY}")
    if value > today + LAST_DAY_AHEAD:
        raise Invalid(field, f"must not be after {today + LAST_DAY_AHEAD}")


def day_validator(field: str):
    """check_day as a Django form field's validator (the pages' filters)."""
    from django.core.exceptions import ValidationError

    def validate(value: date) -> None:
        try:
            check_day(field, value)
        except Invalid as exc:
            raise ValidationError(exc.message) from None

    return validate
