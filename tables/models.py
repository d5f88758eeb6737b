"""The floor: tables and their house rules, sessions, shoes, banker turns, coups.

Coups, their stakes and findings are records: written once, never updated.
Sessions, shoes and banker turns carry a little running state (the shoe's
next sequence number, the turn's current bank) so that recording a coup reads
one locked row instead of re-adding a shoe; that state is always re-computable
from the coups.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from casino.models import AppendOnlyModel

MONEY = {"max_digits": 14, "decimal_places": 2}


class TableauVersion(AppendOnlyModel):
    """A banker's drawing table, as data. Never edited: a variant is a new row."""

    version = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=200, blank=True)
    rows = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.version

    def as_engine(self):
        from .chemmy import Tableau

        return Tableau.from_dict({"version": self.version, "rows": self.rows})


class Table(models.Model):
    name = models.CharField(max_length=100, unique=True)
    seats = models.PositiveSmallIntegerField(
        default=9, validators=[MinValueValidator(2), MaxValueValidator(12)]
    )
    # Points at the latest HouseRules row; every coup keeps its own reference.
    rules = models.ForeignKey(
        "HouseRules", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class HouseRules(AppendOnlyModel):
    """One version of a table's house rules. Changing a rule writes a new row."""

    table = models.ForeignKey(
        Table, on_delete=models.PROTECT, related_name="rule_versions"
    )
    version = models.PositiveIntegerField()
    decks = models.PositiveSmallIntegerField(
        default=6, validators=[MinValueValidator(1), MaxValueValidator(8)]
    )
    commission_rate = models.DecimalField(
        max_digits=5,
        decimal_places=4,
        default=Decimal("0.0500"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("0.5"))],
    )
    commission_unit = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        default=Decimal("0.10"),
        validators=[MinValueValidator(Decimal("0.01"))],
    )
    minimum_banco = models.DecimalField(
        **MONEY,
        default=Decimal("100.00"),
        validators=[MinValueValidator(Decimal("0.10"))],
    )
    tableau = models.ForeignKey(TableauVersion, on_delete=models.PROTECT)

    class Sanction(models.TextChoices):
        # docs/rules.md, "Outcome": French regulation forbids fines; the only sanction
        # there is taking the shoe away. Some clubs fine. Default: none.
        NONE = "none", _("none beyond the finding")
        LOSE_SHOE = "lose_shoe", _("the player loses the shoe")
        FINE = "fine", _("a fine (where the jurisdiction allows it)")

    false_draw_sanction = models.CharField(
        max_length=12, choices=Sanction.choices, default=Sanction.NONE
    )
    # The gaming day starts at this local hour (0-23), not at midnight.
    gaming_day_cutoff = models.PositiveSmallIntegerField(
        default=6, validators=[MaxValueValidator(23)]
    )

    # docs/rules.md, "House rules": the variants, each at its default here.
    # A field at its default is left out of a row's trail digest, so these
    # leave every earlier version's digest as it was.
    class Rounding(models.TextChoices):
        HALF_UP = "half_up", _("half up")
        HALF_EVEN = "half_even", _("half even")
        DOWN = "down", _("down (toward zero)")

    class Tie(models.TextChoices):
        STAY = "stay", _("the stakes stay for the next coup")
        RETURNED = "returned", _("the stakes are returned")

    class CoverRule(models.TextChoices):
        PARTIAL = "partial", _("partial: covered up to what is left")
        ALL_OR_NOTHING = "all_or_nothing", _("all or nothing")

    class Choice(models.TextChoices):
        FREE = "free", _("free")
        DRAW = "draw", _("draw")
        STAND = "stand", _("stand")

    commission_rounding = models.CharField(
        max_length=10, choices=Rounding.choices, default=Rounding.HALF_UP
    )
    tie_rule = models.CharField(max_length=10, choices=Tie.choices, default=Tie.STAY)
    cover_rule = models.CharField(
        max_length=16, choices=CoverRule.choices, default=CoverRule.PARTIAL
    )
    maximum_bank = models.DecimalField(**MONEY, null=True, blank=True, default=None)
    punter_five = models.CharField(
        max_length=5, choices=Choice.choices, default=Choice.FREE
    )
    # {"3/9": "draw", ...}: the banker's optional cells the house prescribes;
    # None (not {}) when none is, so the default stays out of the digest.
    banker_prescriptions = models.JSONField(null=True, blank=True, default=None)
    hold_on_error = models.BooleanField(default=False)
    # Under hold on error, the warnings that stop play too, by finding code
    # (["false_draw", ...], sorted); a critical finding always does. None
    # (not []) when none does: the versions written before this field hold
    # on critical findings alone, and their digests stay as they were.
    hold_warnings = models.JSONField(null=True, blank=True, default=None)
    # The first gaming day this version may be played on (None: from the
    # table's next session). Never earlier than the day it was written.
    effective_from = models.DateField(null=True, blank=True, default=None)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["table", "version"], name="rules_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.table} rules v{self.version}"

    # The warnings a house may let stop play (hold_warnings), in the order
    # the house-rules page lists them.
    HOLDABLE_WARNINGS = (
        "false_draw", "house_choice", "draw_after_natural", "deal_below_seven",
    )

    def stops_play(self, findings) -> bool:
        """House rule "hold on error": whether these findings (anything with
        .code and .severity) hold the shoe. Off: never. On: a critical
        finding, or a warning the house named in hold_warnings."""
        if not self.hold_on_error:
            return False
        also = set(self.hold_warnings or ())
        return any(f.severity == "critical" or f.code in also for f in findings)

    # -- as the engine takes them (tables.chemmy keeps no Django) -------------

    def cover_args(self) -> dict:
        return {"cover": self.cover_rule, "maximum_bank": self.maximum_bank}

    def settle_args(self) -> dict:
        from .chemmy import rounding_mode

        return {
            "commission_rate": self.commission_rate,
            "commission_unit": self.commission_unit,
            "rounding": rounding_mode(self.commission_rounding),
        }

    @property
    def prescriptions(self):
        from .chemmy import Prescriptions

        cached = self.__dict__.get("_prescriptions")
        if cached is None:
            cached = Prescriptions(
                punter_five=self.punter_five, banker=self.banker_prescriptions or {}
            )
            self.__dict__["_prescriptions"] = cached
        return cached


class TableSession(models.Model):
    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="sessions")
    gaming_day = models.DateField()
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # The croupier running the table now: the only one who may enter coups at
    # it (casino.roles.works_at). Changes are logged (relief, re-assignment).
    croupier = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # The house rules in force for the whole session: a change made while it
    # is open applies from the next one (docs/rules.md, "House rules").
    rules = models.ForeignKey(
        "HouseRules", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["table"],
                condition=Q(closed_at__isnull=True),
                name="one_open_session_per_table",
            )
        ]

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    @property
    def house_rules(self) -> HouseRules:
        """The version this session plays (pinned when it opened; a session
        from before versions were pinned plays its table's)."""
        return self.rules if self.rules_id else self.table.rules

    def __str__(self) -> str:
        return f"{self.table} {self.gaming_day}"


class Shoe(models.Model):
    session = models.ForeignKey(
        TableSession, on_delete=models.PROTECT, related_name="shoes"
    )
    number = models.PositiveIntegerField()
    decks = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(8)]
    )
    burned = models.PositiveSmallIntegerField(default=0)
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    # Running state, re-computable from the coups (see module docstring).
    next_seq = models.PositiveIntegerField(default=1)
    dealt = models.PositiveIntegerField(default=0)
    card_counts = models.JSONField(default=dict)
    # House rule "hold on error": the seq of the coup whose critical finding
    # holds this shoe; no coup is taken until a pit boss releases it
    # (ShoeRelease, with his reason). None: not held.
    held_by_seq = models.PositiveIntegerField(null=True, blank=True, default=None)
    # The cards the croupier counted left undealt at the close (docs/rules.md,
    # "The shoe"): dealt + burned + left must be 52 x decks, else the finding
    # shoe_count. None: closed without a count (older shoes; the API may
    # omit it). At its default it stays out of the row's trail digest.
    left_counted = models.PositiveIntegerField(null=True, blank=True, default=None)

    class Meta:
        ordering = ["session", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "number"], name="shoe_number_unique"
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(closed_at__isnull=True),
                name="one_open_shoe_per_session",
            ),
        ]

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    @property
    def cards_left(self) -> int:
        return 52 * self.decks - self.burned - self.dealt

    def __str__(self) -> str:
        return f"{self.session} shoe {self.number}"


# A player's casino card number (letters and digits): who sat there, where
# the seat and session alone would not say. "" when none was entered; at that
# default it stays out of a row's trail digest.
PLAYER_CARD_MAX = 20


def player_card_field() -> models.CharField:
    return models.CharField(max_length=PLAYER_CARD_MAX, blank=True, default="")


class ShoeFinding(AppendOnlyModel):
    """A finding about a whole shoe, not one coup (docs/rules.md, "Findings"):
    `shoe_count`, written by shoe_close in the close's transaction."""

    shoe = models.ForeignKey(Shoe, on_delete=models.PROTECT, related_name="findings")
    code = models.CharField(max_length=32, db_index=True)
    severity = models.CharField(max_length=10)
    detail = models.JSONField(default=dict)
    message = models.CharField(max_length=300)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["shoe", "id"]

    def __str__(self) -> str:
        return f"{self.shoe} {self.code}"


class ShoeRelease(AppendOnlyModel):
    """A pit boss lets play go on at a shoe held by a critical finding
    (house rule "hold on error"), with his reason."""

    shoe = models.ForeignKey(Shoe, on_delete=models.PROTECT, related_name="releases")
    held_by_seq = models.PositiveIntegerField()
    released_at = models.DateTimeField()
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField()

    class Meta:
        ordering = ["shoe", "released_at"]

    def __str__(self) -> str:
        return f"{self.shoe} released after coup {self.held_by_seq}"


class BankerTurn(models.Model):
    """La main: one player's run as banker."""

    class End(models.TextChoices):
        LOST = "lost", "bank lost"
        PASSED = "passed", "bank passed (suite)"
        SESSION_CLOSED = "session_closed", "session closed"

    session = models.ForeignKey(
        TableSession, on_delete=models.PROTECT, related_name="turns"
    )
    number = models.PositiveIntegerField()
    seat = models.PositiveSmallIntegerField()
    # The banker's player card, entered when the bank opens ("" when none).
    player_card = player_card_field()
    opening_bank = models.DecimalField(**MONEY)
    # Set when this turn took over a bank passed at its standing amount.
    took_passed_bank = models.BooleanField(default=False)
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    # Running state, re-computable from the turn's coups.
    bank = models.DecimalField(**MONEY)
    coups = models.PositiveIntegerField(default=0)
    garage_total = models.DecimalField(**MONEY, default=Decimal("0"))
    commission_total = models.DecimalField(**MONEY, default=Decimal("0"))
    # The punter who went banco and lost the last coup may announce "suivi".
    suivi_seat = models.PositiveSmallIntegerField(null=True, blank=True)
    # House rule tie_rule "stay": after a tie, the covered stakes that stay on
    # the table for the turn's next coup, [[seat, standing, "amount"], ...]
    # (seat None for a standing player); each may be raised, not taken back,
    # and coup_record refuses the next coup otherwise. None: nothing staying.
    # At its default it stays out of the row's trail digest.
    tied_stakes = models.JSONField(null=True, blank=True, default=None)
    closed_at = models.DateTimeField(null=True, blank=True)
    end = models.CharField(max_length=20, choices=End.choices, blank=True)
    closing_amount = models.DecimalField(**MONEY, null=True, blank=True)

    class Meta:
        ordering = ["session", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "number"], name="turn_number_unique"
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(closed_at__isnull=True),
                name="one_open_turn_per_session",
            ),
        ]

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    def __str__(self) -> str:
        return f"{self.session} turn {self.number} (seat {self.seat})"


class Coup(AppendOnlyModel):
    class Outcome(models.TextChoices):
        BANKER = "banker"
        PUNTER = "punter"
        TIE = "tie"

    # No index of its own: coup_seq_revision_unique (shoe, seq, revision)
    # leads with it. Every index is one more insert per coup.
    shoe = models.ForeignKey(
        Shoe, on_delete=models.PROTECT, related_name="coups", db_index=False
    )
    turn = models.ForeignKey(
        BankerTurn, on_delete=models.PROTECT, related_name="coup_set"
    )
    seq = models.PositiveIntegerField()
    # A correction is a new revision of the same (shoe, seq); revision 1 is the
    # coup as entered at the table.
    revision = models.PositiveSmallIntegerField(default=1)
    rules = models.ForeignKey(HouseRules, on_delete=models.PROTECT)
    tableau_version = models.CharField(max_length=64)
    gaming_day = models.DateField()  # indexed by (gaming_day, shoe), below
    created_at = models.DateTimeField()
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    device = models.CharField(max_length=200, blank=True)
    idempotency_key = models.CharField(max_length=100, null=True, blank=True)
    request_digest = models.CharField(max_length=64, blank=True)

    punter_cards = models.JSONField()
    banker_cards = models.JSONField()
    punter_total = models.PositiveSmallIntegerField()
    banker_total = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    natural = models.CharField(max_length=8, blank=True)
    punter_choice = models.CharField(max_length=8, blank=True)
    banker_choice = models.CharField(max_length=8, blank=True)
    banker_seat = models.PositiveSmallIntegerField()
    punter_seat = models.PositiveSmallIntegerField(null=True, blank=True)
    punter_standing = models.CharField(max_length=50, blank=True)

    declared_bank = models.DecimalField(**MONEY, null=True, blank=True)
    bank_before = models.DecimalField(**MONEY)
    covered = models.DecimalField(**MONEY)
    garage = models.DecimalField(**MONEY)
    commission = models.DecimalField(**MONEY)
    bank_after = models.DecimalField(**MONEY)
    cards_left_before = models.IntegerField()
    finding_count = models.PositiveSmallIntegerField(default=0)
    # Set when the bank was lost: the seat the shoe passes to.
    next_banker_seat = models.PositiveSmallIntegerField(null=True, blank=True)
    # A revision > 1 (tables/services/corrections.py): who wrote it, when and
    # why. `entered_by` and `created_at` stay the croupier's and the deal's.
    corrected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    corrected_at = models.DateTimeField(null=True, blank=True)
    correction_reason = models.TextField(blank=True)
    # A coup queued on a tablet under one croupier and stored while another
    # was signed in there: a pit boss accepted it on the croupier's behalf
    # (tables/services/coups.py coup_accept). `entered_by` stays the croupier
    # who entered it; who vouched for it, and why, is here and in its log row.
    # No index: nothing looks coups up by it, and every index is one more
    # insert per coup.
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    accepted_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["shoe", "seq", "revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["shoe", "seq", "revision"], name="coup_seq_revision_unique"
            ),
            models.UniqueConstraint(
                fields=["idempotency_key"], name="coup_idempotency_key_unique"
            ),
        ]
        indexes = [models.Index(fields=["gaming_day", "shoe"])]

    def __str__(self) -> str:
        return f"{self.shoe} coup {self.seq}"


class Stake(AppendOnlyModel):
    coup = models.ForeignKey(Coup, on_delete=models.PROTECT, related_name="stakes")
    position = models.PositiveSmallIntegerField()
    seat = models.PositiveSmallIntegerField(null=True, blank=True)
    standing = models.CharField(max_length=50, blank=True)
    # The punter's player card, when the croupier entered one ("" when not).
    player_card = player_card_field()
    announcement = models.CharField(max_length=12, default="none")
    amount = models.DecimalField(**MONEY)
    covered = models.DecimalField(**MONEY)
    declined = models.DecimalField(**MONEY)
    payout = models.DecimalField(**MONEY)  # the punter's net on this stake

    class Meta:
        ordering = ["coup", "position"]


class Finding(AppendOnlyModel):
    class Severity(models.TextChoices):
        WARNING = "warning"
        CRITICAL = "critical"

    coup = models.ForeignKey(Coup, on_delete=models.PROTECT, related_name="findings")
    code = models.CharField(max_length=32, db_index=True)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    side = models.CharField(max_length=8, blank=True)
    detail = models.JSONField(default=dict)
    message = models.CharField(max_length=300)
    tableau_version = models.CharField(max_length=64)

    class Meta:
        ordering = ["coup", "id"]


class RollupSums(models.Model):
    """What a rollup row sums over its coups (current revisions): counts,
    turnover, commission, each coup's expected levy and its variance, and the
    findings by code. Every grain below holds the same sums; each coup adds to
    one row of each grain in the coup's own transaction (tables/rollups.py)."""

    coups = models.IntegerField(default=0)
    banker_wins = models.IntegerField(default=0)
    punter_wins = models.IntegerField(default=0)
    ties = models.IntegerField(default=0)
    covered = models.DecimalField(**MONEY, default=Decimal("0"))
    # sum of covered², for the variance of the commission (stake mix)
    covered_sq = models.DecimalField(max_digits=32, decimal_places=4, default=0)
    commission = models.DecimalField(**MONEY, default=Decimal("0"))
    # The expected levy of the cell's coups and its variance, each coup weighed
    # under its own house rules as it is written (tables/rollups.py
    # levy_expectation): a report's expectation and band read these, never
    # the coups.
    levy_mean = models.DecimalField(max_digits=32, decimal_places=10, default=0)
    levy_var = models.DecimalField(max_digits=40, decimal_places=10, default=0)
    findings = models.JSONField(default=dict)  # code -> count

    class Meta:
        abstract = True


class DailyRollup(RollupSums):
    """Per table, gaming day, croupier and banker seat: the finest cell, the
    one the ledger check re-computes coup by coup. Always equal to a
    recomputation from the current coup revisions (tested)."""

    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="+")
    gaming_day = models.DateField()
    croupier = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    banker_seat = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["table", "gaming_day", "croupier", "banker_seat"],
                name="rollup_cell_unique",
            )
        ]
        indexes = [models.Index(fields=["gaming_day", "table"])]

    def __str__(self) -> str:
        return f"{self.table_id} {self.gaming_day} seat {self.banker_seat}"


class TableDayRollup(RollupSums):
    """Per table, gaming day and house-rules version: the report's table-day
    cell (its band flag, the day chart, the table and day groupings) and the
    coups played under each version, at a few rows per table-day whatever the
    number of coups, croupiers and seats."""

    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="+")
    gaming_day = models.DateField()
    rules = models.ForeignKey(HouseRules, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["table", "gaming_day", "rules"],
                                    name="rollup_tableday_unique")
        ]
        indexes = [models.Index(fields=["gaming_day", "table"])]

    def __str__(self) -> str:
        return f"{self.table_id} {self.gaming_day} rules {self.rules_id}"


class CroupierMonthRollup(RollupSums):
    """Per table, gaming month (its first day) and croupier: the croupier
    grouping over whole months (a period's partial months read DailyRollup)."""

    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="+")
    month = models.DateField()
    croupier = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["table", "month", "croupier"],
                                    name="rollup_croupiermonth_unique")
        ]
        indexes = [models.Index(fields=["month", "table"])]

    def __str__(self) -> str:
        return f"{self.table_id} {self.month:%Y-%m} croupier {self.croupier_id}"


class SeatMonthRollup(RollupSums):
    """Per table, gaming month (its first day) and banker seat: the banker
    grouping over whole months (a period's partial months read DailyRollup)."""

    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="+")
    month = models.DateField()
    banker_seat = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["table", "month", "banker_seat"],
                                    name="rollup_seatmonth_unique")
        ]
        indexes = [models.Index(fields=["month", "table"])]

    def __str__(self) -> str:
        return f"{self.table_id} {self.month:%Y-%m} seat {self.banker_seat}"
