"""Explicit input and output serializers; the OpenAPI schema is built from them."""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from casino.drf import (  # noqa: F401 - ErrorSerializer: the views' 4xx bodies
    CharField,
    DecimalField,
    ErrorSerializer,
    IntegerField,
    PrototypeFields,
)

from .. import chemmy
from ..errors import Invalid
from ..models import (
    PLAYER_CARD_MAX,
    BankerTurn,
    Coup,
    Finding,
    HouseRules,
    Shoe,
    ShoeFinding,
    Stake,
    Table,
    TableSession,
)
from ..services.facts import player_card_clean as _player_card_clean
from ..services.floor import CARDS_LEFT_MAX


def player_card_clean(value: str, field: str) -> str:
    try:
        return _player_card_clean(value, field)
    except Invalid as exc:
        raise serializers.ValidationError(exc.message) from None

MAX_MONEY = Decimal("999999999999.99")
USER_ID_MAX = 2**63 - 1  # a user id the database can hold (BigAutoField)


def money_field(**kwargs) -> DecimalField:
    """An amount in a request body: a decimal string, two places at most
    (casino.drf.DecimalField: what the schema's pattern says, nothing else)."""
    kwargs.setdefault("min_value", Decimal("0.01"))
    return DecimalField(
        max_digits=14, decimal_places=2, max_value=MAX_MONEY, **kwargs
    )


def hand_field() -> serializers.ListField:
    return serializers.ListField(
        child=CharField(max_length=3, trim_whitespace=True),
        min_length=2,
        max_length=3,
        help_text='Card codes in the order dealt to that side, e.g. ["9H", "KD"].',
    )


class TokenRequestSerializer(serializers.Serializer):
    username = CharField(max_length=150)
    password = CharField(max_length=128, style={"input_type": "password"})


class TokenResponseSerializer(serializers.Serializer):
    token = CharField(help_text="Send as `Authorization: Token <token>`")
    expiry = serializers.DateTimeField(help_text="When the token stops working")


class HouseRulesSerializer(serializers.ModelSerializer):
    tableau_version = CharField(source="tableau.version")

    class Meta:
        model = HouseRules
        fields = [
            "version",
            "decks",
            "commission_rate",
            "commission_unit",
            "minimum_banco",
            "tableau_version",
            "gaming_day_cutoff",
            "created_at",
        ]


class TableSerializer(serializers.ModelSerializer):
    rules = HouseRulesSerializer(read_only=True)
    open_session = serializers.SerializerMethodField()

    class Meta:
        model = Table
        fields = ["id", "name", "seats", "active", "rules", "open_session"]

    def get_open_session(self, table) -> int | None:
        sessions = [s for s in table.sessions.all() if s.closed_at is None]
        return sessions[0].pk if sessions else None


class TableCreateSerializer(serializers.Serializer):
    name = CharField(max_length=100)
    seats = IntegerField(min_value=2, max_value=12, default=9)
    decks = IntegerField(min_value=1, max_value=8, default=6)
    commission_rate = DecimalField(
        max_digits=5,
        decimal_places=4,
        min_value=Decimal("0"),
        max_value=Decimal("0.5"),
        default=Decimal("0.05"),
    )
    # The rounding unit of the levy: HouseRules holds it in 8 digits.
    commission_unit = DecimalField(
        max_digits=8,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal("999999.99"),
        default=Decimal("0.10"),
    )
    minimum_banco = money_field(default=Decimal("100.00"))
    tableau_version = CharField(max_length=64, default="chemmy-standard-1")
    gaming_day_cutoff = IntegerField(min_value=0, max_value=23, default=6)


class SessionSerializer(serializers.ModelSerializer):
    opened_by = serializers.StringRelatedField()
    closed_by = serializers.StringRelatedField(allow_null=True)  # open: null

    class Meta:
        model = TableSession
        fields = [
            "id",
            "table",
            "gaming_day",
            "opened_at",
            "opened_by",
            "closed_at",
            "closed_by",
        ]


class ShoeOpenSerializer(serializers.Serializer):
    decks = IntegerField(min_value=1, max_value=8, required=False)
    burned = IntegerField(min_value=0, max_value=410, default=0)


class ShoeCloseSerializer(serializers.Serializer):
    cards_left = IntegerField(
        min_value=0,
        max_value=CARDS_LEFT_MAX,
        required=False,
        allow_null=True,
        help_text="The cards counted left undealt in the shoe at its close. "
        "Dealt + burned + cards_left must be 52 x decks, else the critical "
        "finding shoe_count (docs/rules.md, \"The shoe\"). Omitted: no count.",
    )


def player_card_field(**kwargs) -> CharField:
    """A player's card number: letters and digits, up to 20 (optional)."""
    return CharField(
        max_length=PLAYER_CARD_MAX,
        required=False,
        allow_blank=True,
        trim_whitespace=True,
        help_text="The player's casino card number (letters and digits, up to "
        f"{PLAYER_CARD_MAX}); omitted or empty: none.",
        **kwargs,
    )


class ShoeFindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = ShoeFinding
        fields = ["code", "severity", "detail", "message", "created_at"]


class ShoeSerializer(serializers.ModelSerializer):
    cards_left = serializers.IntegerField(read_only=True)
    coups = serializers.SerializerMethodField()
    findings = ShoeFindingSerializer(many=True, read_only=True)

    class Meta:
        model = Shoe
        fields = [
            "id",
            "session",
            "number",
            "decks",
            "burned",
            "dealt",
            "cards_left",
            "coups",
            "next_seq",
            "held_by_seq",
            "left_counted",
            "findings",
            "opened_at",
            "closed_at",
        ]
        extra_kwargs = {
            "left_counted": {
                "help_text": "The cards counted left at the close (null: not "
                "counted, or still open)"
            },
            "held_by_seq": {
                "help_text": "The coup whose critical finding holds this shoe "
                "(house rule hold_on_error); null: play goes on"
            }
        }

    def get_coups(self, shoe) -> int:
        return shoe.next_seq - 1


class TurnOpenSerializer(PrototypeFields, serializers.Serializer):
    seat = IntegerField(min_value=1, max_value=12)
    bank = money_field()
    player_card = player_card_field()

    def validate_player_card(self, value: str) -> str:
        return player_card_clean(value, "player_card")


class TurnSerializer(serializers.ModelSerializer):
    class Meta:
        model = BankerTurn
        fields = [
            "id",
            "session",
            "number",
            "seat",
            "player_card",
            "opening_bank",
            "took_passed_bank",
            "bank",
            "coups",
            "garage_total",
            "commission_total",
            "opened_at",
            "closed_at",
            "end",
            "closing_amount",
        ]


class PassResultSerializer(serializers.Serializer):
    turn = TurnSerializer()
    offered_bank = serializers.DecimalField(max_digits=14, decimal_places=2)
    offer_order = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Seats to offer the bank to, in rotation from the banker's right.",
    )


class StakeInSerializer(PrototypeFields, serializers.Serializer):
    seat = IntegerField(
        min_value=1, max_value=12, required=False, allow_null=True
    )
    standing = CharField(max_length=50, required=False, allow_blank=True)
    amount = money_field()
    announcement = serializers.ChoiceField(
        choices=[a.value for a in chemmy.Announcement], default="none"
    )
    player_card = player_card_field()

    def validate_player_card(self, value: str) -> str:
        return player_card_clean(value, "player_card")

    def validate(self, attrs):
        has_seat = attrs.get("seat") is not None
        has_standing = bool(attrs.get("standing"))
        if has_seat == has_standing:
            raise serializers.ValidationError(
                {"seat": "give either a seat number or a standing player's label"}
            )
        return attrs


class CoupInSerializer(PrototypeFields, serializers.Serializer):
    punter = hand_field()
    banker = hand_field()
    stakes = serializers.ListField(
        child=StakeInSerializer(), min_length=1, max_length=40
    )
    declared_bank = money_field(required=False, allow_null=True)
    expected_seq = IntegerField(
        min_value=1,
        max_value=10_000,
        required=False,
        allow_null=True,
        help_text="The sequence number the tablet expects this coup to get; "
        "a different one is a 409 (the shoe moved on).",
    )
    entered_by = IntegerField(
        min_value=1,
        max_value=USER_ID_MAX,
        required=False,
        allow_null=True,
        help_text="The user id of the croupier who entered this coup on the "
        "tablet (a coup queued while offline keeps its author). Another user's "
        "id than the sender's is refused (403 naming entered_by): only he sends "
        "it, or a pit boss accepts it on his behalf (coups/accept/).",
    )
    entered_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the coup was entered, by the tablet's clock (kept in "
        "the change log; the coup's created_at is the server's).",
    )


class CoupAcceptSerializer(CoupInSerializer):
    entered_by = IntegerField(
        min_value=1,
        max_value=USER_ID_MAX,
        help_text="The user id of the croupier who entered the coup; it stays "
        "his (entered_by), the pit boss is its accepted_by.",
    )
    reason = CharField(
        max_length=500,
        help_text="Why the pit boss stores it on the croupier's behalf (kept on "
        "the coup and in the change log).",
    )


class StakeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Stake
        fields = [
            "position",
            "seat",
            "standing",
            "player_card",
            "announcement",
            "amount",
            "covered",
            "declined",
            "payout",
        ]


class FindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Finding
        fields = ["code", "severity", "side", "detail", "message", "tableau_version"]


class CoupSerializer(serializers.ModelSerializer):
    stakes = StakeSerializer(many=True, read_only=True)
    findings = FindingSerializer(many=True, read_only=True)
    table = serializers.IntegerField(source="shoe.session.table_id", read_only=True)
    session = serializers.IntegerField(source="shoe.session_id", read_only=True)
    cards_left = serializers.SerializerMethodField()
    entered_by = serializers.StringRelatedField()
    accepted_by = serializers.StringRelatedField(
        allow_null=True,  # null: sent by the croupier who entered it
        help_text="The pit boss who stored this coup on the croupier's behalf",
    )
    latest = serializers.SerializerMethodField(
        help_text="No later revision supersedes this one (false: history)"
    )
    corrected_by = serializers.StringRelatedField(
        allow_null=True,  # null: revision 1, the coup as entered at the table
        help_text="The pit boss whose correction wrote this revision",
    )

    class Meta:
        model = Coup
        fields = [
            "id",
            "table",
            "session",
            "shoe",
            "turn",
            "seq",
            "revision",
            "latest",
            "gaming_day",
            "created_at",
            "entered_by",
            "device",
            "punter_cards",
            "banker_cards",
            "punter_total",
            "banker_total",
            "outcome",
            "natural",
            "punter_choice",
            "banker_choice",
            "banker_seat",
            "punter_seat",
            "punter_standing",
            "declared_bank",
            "bank_before",
            "covered",
            "garage",
            "commission",
            "bank_after",
            "next_banker_seat",
            "cards_left_before",
            "cards_left",
            "tableau_version",
            "accepted_by",
            "accepted_reason",
            "corrected_by",
            "corrected_at",
            "correction_reason",
            "stakes",
            "findings",
        ]

    def get_cards_left(self, coup) -> int:
        return coup.cards_left_before - len(coup.punter_cards) - len(coup.banker_cards)

    def get_latest(self, coup) -> bool:
        return is_latest(coup)


def is_latest(coup: Coup) -> bool:
    """Read off coups_queryset()'s annotation, else asked of the database."""
    latest = getattr(coup, "latest", None)
    if latest is None:
        latest = not Coup.objects.filter(
            shoe_id=coup.shoe_id, seq=coup.seq, revision__gt=coup.revision
        ).exists()
    return bool(latest)


class CheckInSerializer(serializers.Serializer):
    punter = hand_field()
    banker = hand_field()
    tableau_version = CharField(max_length=64, default="chemmy-standard-1")


class CheckFindingSerializer(serializers.Serializer):
    code = CharField()
    severity = CharField()
    side = CharField(allow_null=True)
    message = CharField()


class VerdictSerializer(serializers.Serializer):
    punter = serializers.ListField(child=CharField())
    banker = serializers.ListField(child=CharField())
    punter_total = serializers.IntegerField()
    banker_total = serializers.IntegerField()
    outcome = serializers.ChoiceField(choices=["banker", "punter", "tie"])
    natural = CharField(allow_null=True)
    punter_choice = CharField(allow_null=True)
    banker_choice = CharField(allow_null=True)
    tableau_version = CharField()
    findings = serializers.ListField(child=serializers.DictField())


_WHEN = serializers.DateTimeField()
_DAY = serializers.DateField()


def _money(value) -> str | None:
    return None if value is None else f"{value:.2f}"


def coup_payload(coup: Coup, stakes=None, findings=None) -> dict:
    """CoupSerializer(coup).data, built by hand for the recording hot path (DRF
    field machinery costs more than the coup itself). A test keeps the two equal;
    the schema is CoupSerializer's. `stakes` and `findings`: the rows in hand
    (a coup just written), else the coup's own."""
    return {
        "id": coup.pk,
        "table": coup.shoe.session.table_id,
        "session": coup.shoe.session_id,
        "shoe": coup.shoe_id,
        "turn": coup.turn_id,
        "seq": coup.seq,
        "revision": coup.revision,
        # A coup just written is the latest; a replay is read back annotated.
        "latest": bool(getattr(coup, "latest", True)),
        "gaming_day": _DAY.to_representation(coup.gaming_day),
        "created_at": _WHEN.to_representation(coup.created_at),
        "entered_by": str(coup.entered_by),
        "device": coup.device,
        "punter_cards": list(coup.punter_cards),
        "banker_cards": list(coup.banker_cards),
        "punter_total": coup.punter_total,
        "banker_total": coup.banker_total,
        "outcome": coup.outcome,
        "natural": coup.natural,
        "punter_choice": coup.punter_choice,
        "banker_choice": coup.banker_choice,
        "banker_seat": coup.banker_seat,
        "punter_seat": coup.punter_seat,
        "punter_standing": coup.punter_standing,
        "declared_bank": _money(coup.declared_bank),
        "bank_before": _money(coup.bank_before),
        "covered": _money(coup.covered),
        "garage": _money(coup.garage),
        "commission": _money(coup.commission),
        "bank_after": _money(coup.bank_after),
        "next_banker_seat": coup.next_banker_seat,
        "cards_left_before": coup.cards_left_before,
        "cards_left": coup.cards_left_before
        - len(coup.punter_cards)
        - len(coup.banker_cards),
        "tableau_version": coup.tableau_version,
        "accepted_by": None
        if coup.accepted_by_id is None
        else str(coup.accepted_by),
        "accepted_reason": coup.accepted_reason,
        "corrected_by": None
        if coup.corrected_by_id is None
        else str(coup.corrected_by),
        "corrected_at": None
        if coup.corrected_at is None
        else _WHEN.to_representation(coup.corrected_at),
        "correction_reason": coup.correction_reason,
        "stakes": [
            {
                "position": st.position,
                "seat": st.seat,
                "standing": st.standing,
                "player_card": st.player_card,
                "announcement": st.announcement,
                "amount": _money(st.amount),
                "covered": _money(st.covered),
                "declined": _money(st.declined),
                "payout": _money(st.payout),
            }
            for st in (coup.stakes.all() if stakes is None else stakes)
        ],
        "findings": [
            {
                "code": f.code,
                "severity": f.severity,
                "side": f.side,
                "detail": f.detail,
                "message": f.message,
                "tableau_version": f.tableau_version,
            }
            for f in (coup.findings.all() if findings is None else findings)
        ],
    }


def turn_payload(turn: BankerTurn) -> dict:
    """TurnSerializer(turn).data by hand, for the turn a lost bank makes the
    next banker open (nearly one request in two at a live table). A test
    keeps the two equal; the schema is TurnSerializer's."""
    return {
        "id": turn.pk,
        "session": turn.session_id,
        "number": turn.number,
        "seat": turn.seat,
        "player_card": turn.player_card,
        "opening_bank": _money(turn.opening_bank),
        "took_passed_bank": turn.took_passed_bank,
        "bank": _money(turn.bank),
        "coups": turn.coups,
        "garage_total": _money(turn.garage_total),
        "commission_total": _money(turn.commission_total),
        "opened_at": _WHEN.to_representation(turn.opened_at),
        "closed_at": None if turn.closed_at is None
        else _WHEN.to_representation(turn.closed_at),
        "end": turn.end,
        "closing_amount": _money(turn.closing_amount),
    }
