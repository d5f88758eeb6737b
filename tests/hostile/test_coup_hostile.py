"""Hostile input at the coup endpoint: every refusal is a clear 4xx that names
the field, and a refused request writes nothing (Coup, Stake, Finding and
ChangeLog row counts are compared before and after every single request).

The property every test checks, whatever the input: the answer is either a
2xx with exactly one new coup, or a 4xx whose `detail` starts with the name
of the offending field (`punter[1]`, `stakes[0].amount`, ...) with no row
written. Never a 5xx. The targeted tests then insist that input which is
certainly wrong (a non-card, an absurd amount) is refused.

HOSTILE_EXAMPLES sets how many inputs hypothesis tries per test.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal, InvalidOperation

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tables.chemmy.cards import _ALIASES

from .conftest import DERANDOMIZE
from .util import INPUTS, row_counts

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "15"))
HYPOTHESIS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=DERANDOMIZE,
    suppress_health_check=list(HealthCheck),
)
BASE = {
    "punter": ["2H", "3D"],
    "banker": ["8C", "TS"],
    "stakes": [{"seat": 2, "amount": "300.00"}],
}

# JSON of any shape, nested a few levels.
junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
NOT_CARDS = [
    "", " ", "1H", "11H", "10", "1", "AX", "ZZ", "0S", "1S", "10HH", "A♠", "🂡",
    "Ａ S", "ＡS", "TH\u200b", "\u0000H", "\ud800", "AS;DROP TABLE", "A\nS", "9ß",
    "NaN", "null", "[]", "{}", "<b>", "AS" * 1000,
]  # fmt: skip
ABSURD_AMOUNTS = [
    0, "0", "0.00", -1, "-0.01", "-300", 10**20, "1e20", "100000000000000000000",
    1e-9, "1e-9", "0.001", "12.345", 0.1 + 0.2, "NaN", "nan", "-NaN", "sNaN",
    "Infinity", "-Infinity", "inf", "1e400", 1e308, "", " ", "1,000", "€300",
    "300 EUR", "0x12C", "three hundred", True, False, None, [], {}, ["300"],
    {"amount": "300"}, "9" * 40, "1" * 2000, "\ud800",
]  # fmt: skip


# A 409 about the table's state names it, whatever the request: once the
# valid coups the fuzzer sends have filled the shoe, every coup is refused so.
TABLE_STATE = ("shoe:", "turn:", "bank:")


def is_card(value) -> bool:
    """The spellings the API accepts: DRF's CharField turns a number into text
    and strips whitespace; the engine then takes its aliases."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    text = str(value).strip()
    return len(text) <= 3 and text in _ALIASES


def is_hand(value) -> bool:
    return isinstance(value, list) and len(value) in (2, 3) and all(map(is_card, value))


@pytest.fixture
def post(api, croupier, turn, shoe):
    """post(body, field) sends one hostile request and checks the property;
    returns the response. `body` is a dict or raw bytes."""
    api.force_authenticate(user=croupier)
    url = f"/api/v1/shoes/{shoe.pk}/coups/"

    def _post(body, field: str, *, content_type="application/json", **headers):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        before = row_counts()
        r = api.generic("POST", url, raw, content_type=content_type, headers=headers)
        INPUTS["coup endpoint"] += 1
        after = row_counts()
        assert r.status_code < 500, r.content[:500]
        if r.status_code in (200, 201):
            grew = {k: after[k] - before[k] for k in after}
            assert grew["Coup"] == (1 if r.status_code == 201 else 0), grew
            return r
        assert 400 <= r.status_code < 500, r.status_code
        assert after == before, f"a refused request wrote rows: {before} -> {after}"
        data = r.json()
        assert isinstance(data, dict) and isinstance(data.get("detail"), str), data
        if r.status_code == 409 and data["detail"].startswith(TABLE_STATE):
            return r  # the table refuses any coup now (the shoe is full...)
        if field:
            assert data["detail"].startswith(field), (field, data)
            top = field.split("[")[0].split(".")[0]
            assert any(str(k).startswith(top) for k in data), (field, data)
        return r

    return _post


def with_value(path: str, value) -> dict:
    """BASE with one value replaced: "punter", "stakes[0].amount", ..."""
    body = json.loads(json.dumps(BASE))
    target, key = body, path
    if path.startswith("stakes[0]."):
        target, key = body["stakes"][0], path.split(".", 1)[1]
    elif path == "stakes[0]":
        target, key = body["stakes"], 0
    target[key] = value
    return body


@HYPOTHESIS
@given(
    side=st.sampled_from(["punter", "banker"]),
    hand=st.one_of(
        junk,
        st.lists(st.sampled_from(NOT_CARDS) | st.text(max_size=4) | junk, max_size=5),
        st.lists(st.sampled_from(sorted(_ALIASES)), min_size=0, max_size=6),
    ),
)
def test_garbage_cards_are_refused_naming_the_side(post, side, hand):
    assume(not is_hand(hand))
    r = post(with_value(side, hand), side)
    assert r.status_code == 400


@pytest.mark.parametrize("amount", ABSURD_AMOUNTS, ids=repr)
def test_absurd_amounts_are_refused_naming_the_stake(post, amount):
    r = post(with_value("stakes[0].amount", amount), "stakes[0].amount")
    assert r.status_code == 400


@pytest.mark.parametrize("code", NOT_CARDS, ids=lambda c: repr(c[:12]))
def test_not_cards_are_refused_naming_the_card(post, code):
    r = post(with_value("banker", ["8C", code]), "banker[1]")
    assert r.status_code == 400


@pytest.mark.parametrize("amount", ABSURD_AMOUNTS[:20], ids=repr)
def test_absurd_declared_bank_is_refused(post, amount):
    r = post(with_value("declared_bank", amount), "declared_bank")
    assert r.status_code == 400


def as_decimal(value) -> Decimal | None:
    try:
        return Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None


@HYPOTHESIS
@given(
    amount=st.one_of(
        st.decimals(allow_nan=True, allow_infinity=True).map(str),
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(),
        st.text(max_size=10),
    )
)
def test_any_amount_is_recorded_or_refused_naming_the_stake(post, amount):
    """Valid amounts (10.00 and up, at most 2 places) may be recorded; any
    other is refused. Either way, never a 5xx, never a half-written coup."""
    r = post(with_value("stakes[0].amount", amount), "stakes[0].amount")
    value = as_decimal(amount)
    if value is None or not value.is_finite() or value < Decimal("10.00"):
        assert r.status_code == 400
    elif value.normalize().as_tuple().exponent < -2:  # cents and beyond
        assert r.status_code == 400


FIELDS = [
    "punter", "banker", "stakes", "stakes[0]", "stakes[0].seat",
    "stakes[0].amount", "stakes[0].announcement", "stakes[0].standing",
    "declared_bank", "expected_seq",
]  # fmt: skip


@HYPOTHESIS
@given(path=st.sampled_from(FIELDS), value=junk)
def test_wrong_types_anywhere(post, path, value):
    # Inside a stake, a value of the right type may break a rule about the
    # stake as a whole (a banco avec must be half the bank: its amount is
    # named): the refusal names that stake.
    named = path.rsplit(".", 1)[0] if path.startswith("stakes[0].") else path
    post(with_value(path, value), named)


@HYPOTHESIS
@given(
    path=st.sampled_from(["stakes[0].standing", "punter", "stakes[0].announcement"]),
    text=st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20
    ),
)
def test_unicode(post, path, text):
    """A standing player's label may be any text; a card or an announcement
    in unicode is refused."""
    if path == "stakes[0].standing":
        body = with_value(path, text)
        del body["stakes"][0]["seat"]
        post(body, "stakes[0]")
    elif path == "punter":
        assume(not is_card(text))
        assert post(with_value(path, [text, "3D"]), "punter").status_code == 400
    else:  # "banco_avec" is text too, refused on its amount: name the stake
        post(with_value(path, text), "stakes[0]")


@HYPOTHESIS
@given(extra=st.dictionaries(st.text(max_size=10), junk, max_size=5))
def test_unknown_top_level_keys_change_nothing(post, extra):
    """Unknown keys are ignored: the coup is the same coup (and its replay)."""
    body = {**extra, **BASE}
    r1 = post(body, "", **{"Idempotency-Key": "same"})
    r2 = post({**BASE}, "", **{"Idempotency-Key": "same"})
    if r1.status_code == 201:
        assert r2.status_code == 200 and r2.json()["id"] == r1.json()["id"]


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"null",
        b"[]",
        b'"coup"',
        b"\xff\xfe\x00",
        json.dumps(BASE).replace('"300.00"', "NaN").encode(),
        json.dumps(BASE).replace('"300.00"', "Infinity").encode(),
        json.dumps(BASE).replace('"300.00"', "-Infinity").encode(),
        json.dumps(BASE).replace('"2H"', '"\\ud800"').encode(),
        json.dumps(BASE).replace('"2H"', '"\\u0000"').encode(),
        b'{"punter": ' * 5000 + b"1" + b"}" * 5000,
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=lambda raw: repr(raw[:24]),
)
def test_broken_json_is_refused(post, raw):
    r = post(raw, "")
    assert r.status_code == 400
    detail = r.json()["detail"]
    assert detail.startswith(("JSON parse error", "non_field_errors", "punter")), r


def test_oversized_body_is_refused_before_parsing(post):
    body = {**BASE, "junk": "x" * 300_000}
    r = post(body, "")
    assert r.status_code == 413 and "too large" in r.json()["detail"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({**BASE, "stakes": [{"seat": 2, "amount": "10"}] * 41}, "stakes"),
        (with_value("punter", ["2H"] * 10_000), "punter"),
        (with_value("punter", ["2H" * 50_000, "3D"]), "punter[0]"),
        (with_value("stakes[0].standing", "x" * 10_000), "stakes[0]"),
        (with_value("declared_bank", "9" * 999), "declared_bank"),
    ],
    ids=["41-stakes", "10000-cards", "100k-card", "10k-label", "999-digits"],
)
def test_oversized_fields(post, body, field):
    assert post(body, field).status_code == 400


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x"],
)
def test_the_api_takes_json_only(post, content_type):
    r = post(b"punter=2H&banker=8C", "", content_type=content_type)
    assert r.status_code == 415


@pytest.mark.parametrize("key", ["k" * 101, "k" * 10_000])
def test_oversized_idempotency_key(post, key):
    r = post(dict(BASE), "Idempotency-Key", **{"Idempotency-Key": key})
    assert r.status_code == 400


@pytest.mark.django_db
def test_cards_beyond_what_the_shoe_holds(api, croupier, manager):
    """More cards than are left in the shoe: a 409 naming the shoe, nothing
    written. The same card more often than the shoe holds it (decks) is not a
    refusal but a critical card_count_exceeded finding for the pit boss
    (docs/rules.md, "The shoe": a mis-keyed or foreign card must reach a pit boss)."""
    from tables import services

    table = services.table_create(
        user=manager, name="One deck", decks=1, minimum_banco=Decimal("100.00")
    )
    session = services.session_open(table=table, user=croupier)
    shoe = services.shoe_open(session=session, user=croupier, burned=45)  # 7 left
    services.banker_turn_open(
        session=session, user=croupier, seat=1, bank=Decimal("1000.00")
    )
    api.force_authenticate(user=croupier)
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    body = {**BASE, "punter": ["AS", "AS", "AS"], "banker": ["AS", "2S"]}
    before = row_counts()
    r = api.post(url, body, format="json")
    assert r.status_code == 201, r.json()
    codes = [f["code"] for f in r.json()["findings"]]
    assert "card_count_exceeded" in codes
    assert row_counts()["Coup"] == before["Coup"] + 1
    # 2 cards left: a four-card coup does not fit.
    before = row_counts()
    r = api.post(url, {**BASE, "punter": ["2H", "3D"]}, format="json")
    assert r.status_code == 409 and r.json()["detail"].startswith("shoe"), r.json()
    assert row_counts() == before


@pytest.mark.django_db
def test_a_bank_past_the_ledger_columns_is_refused(api, croupier, session, shoe):
    """A bank opened at the largest amount, won by the banker, would not fit
    the ledger's columns: a 409 naming the bank, not a database overflow."""
    api.force_authenticate(user=croupier)
    r = api.post(
        f"/api/v1/sessions/{session.pk}/turns/",
        {"seat": 1, "bank": "999999999999.99"},
        format="json",
    )
    assert r.status_code == 201
    stake = {"seat": 2, "amount": "999999999999.99", "announcement": "banco_solo"}
    before = row_counts()
    r = api.post(
        f"/api/v1/shoes/{shoe.pk}/coups/", {**BASE, "stakes": [stake]}, format="json"
    )
    assert r.status_code == 409 and r.json()["detail"].startswith("bank"), r.json()
    assert row_counts() == before
