"""The floor's pages write cards as the tablet's pad labels them (R, D, V in
French for K, Q, J), name them in words in the tooltip, and never show a
stored code ("KS") to a person."""

from __future__ import annotations

import re

import pytest

from tables import services

from .conftest import stake

FACES = (["KS", "QH"], ["JD", "8C"])  # 0 against a natural 8


@pytest.fixture
def faces(shoe, turn, deal, pitboss):
    coup = deal(shoe, FACES, [stake("100")])
    services.coup_correct(
        coup=coup, user=pitboss, reason="the 8 was a 9", punter=["KS", "QH"],
        banker=["JD", "9C"], stakes=[stake("100")],
    )
    return coup


def page(client, user, url, language):
    client.force_login(user)
    r = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert r.status_code == 200
    return r.content.decode()


def shown(html: str) -> str:
    """The text a person reads: tags and attributes dropped."""
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.parametrize(
    "language, labels, names, codes",
    [
        ("en", ["K♠", "Q♥", "J♦", "9♣"], ["king of spades", "queen of hearts"],
         ["KS", "QH", "JD", "9C"]),
        ("fr", ["R♠", "D♥", "V♦", "9♣"], ["roi de pique", "dame de cœur"],
         ["KS", "QH", "JD", "9C", "K♠", "Q♥", "J♦"]),
    ],
)
def test_the_coup_page_writes_cards_as_the_pad(
    client, pitboss, faces, language, labels, names, codes
):
    html = page(client, pitboss, f"/floor/coups/{faces.pk}/", language)
    text = shown(html)
    for label in labels:
        assert label in text, label
    for name in names:
        assert f'title="{name}' in html or f"{name}," in html, name
    for code in codes:
        assert not re.search(rf"(?<![\w-]){code}(?![\w-])", text), code
    # both revisions are on the page (the history), the latest marked
    assert "8♣" in text and "9♣" in text
    if language == "fr":
        assert "ponte" in text and "banquier" in text  # the dealing order


def test_the_preview_of_a_correction_writes_cards_as_the_pad(
    client, pitboss2, faces
):
    from tables.models import Coup

    current = Coup.objects.get(seq=faces.seq, revision=2)
    client.force_login(pitboss2)
    data = {"p1": "KS", "b1": "JD", "p2": "QH", "b2": "7C", "p3": "", "b3": "",
            "declared_bank": "", "action": "preview", "reason": "",
            "stake-TOTAL_FORMS": "1", "stake-INITIAL_FORMS": "0",
            "stake-0-seat": "2", "stake-0-standing": "", "stake-0-amount": "100",
            "stake-0-announcement": "none"}
    r = client.post(f"/floor/coups/{current.pk}/correct/", data,
                    HTTP_ACCEPT_LANGUAGE="fr")
    text = shown(r.content.decode())
    assert r.status_code == 200, text[:2000]
    assert "R♠ D♥ / V♦ 9♣" in text and "R♠ D♥ / V♦ 7♣" in text


# Coups whose findings cover every sentence: a punter's false draw either
# way, a banker's against a third card and with the punter standing, either
# way, and a third card after each side's natural, dealt to either side.
FINDING_COUPS = [
    (["2H", "3D"], ["8C", "TS"]),  # no finding
    (["2H", "2D"], ["5C", "KS"]),  # punter stood on 4
    (["3H", "4D", "2C"], ["TC", "KS", "5D"]),  # punter drew on 7
    (["2H", "2D", "6C"], ["3S", "2C"]),  # banker stood on 5 against a 6
    (["2H", "2D", "9C"], ["3S", "4C", "5D"]),  # banker drew on 7 against a 9
    (["3H", "4D"], ["2S", "3C"]),  # banker stood on 5, punter standing
    (["3H", "4D"], ["6S", "TC", "2D"]),  # banker drew on 6, punter standing
    (["9H", "KD", "KC"], ["5C", "2S"]),  # punter's third card after his natural
    (["2H", "3D", "QH"], ["8C", "TS"]),  # punter's third card after banker's 8
    (["9H", "KD"], ["5C", "2S", "JD"]),  # banker's third card after punter's 9
    (["2H", "3D"], ["8C", "TS", "JS"]),  # banker's third card after his 8
]


def _engine_findings():
    """(finding, coup) pairs as the engine judges FINDING_COUPS: the finding
    with a row's attributes, the coup with its totals."""
    from types import SimpleNamespace

    from tables.chemmy import evaluate

    out = []
    for punter, banker in FINDING_COUPS:
        verdict = evaluate(punter, banker)
        coup = SimpleNamespace(
            punter_total=verdict.punter_total, banker_total=verdict.banker_total
        )
        for f in verdict.findings:
            out.append((SimpleNamespace(
                code=f.code, side=f.side, detail=dict(f.detail), message=f.message,
            ), coup))
    assert {(f.code, f.side) for f, _ in out} >= {
        ("false_draw", "punter"), ("false_draw", "banker"),
        ("draw_after_natural", "punter"), ("draw_after_natural", "banker"),
    }
    return out


def test_findings_read_as_stored_in_english_and_in_french_otherwise():
    from django.utils import translation

    from tables.cards import card_label
    from tables.finding_words import finding_text

    rows = _engine_findings()
    with translation.override("en"):
        for f, coup in rows:
            card = f.detail.get("card")
            stored = f.message.replace(f"({card})", f"({card_label(card)})")
            assert finding_text(f, coup) == stored
    with translation.override("fr"):
        french = [finding_text(f, coup) for f, coup in rows]
    assert "Le ponte est resté à 4 : la règle impose de tirer." in french
    assert (
        "Le banquier est resté à 5 contre un 6 : le tableau impose de tirer."
        in french
    )
    assert (
        "Le ponte a reçu une troisième carte (D♥) après le naturel 8 du "
        "banquier : elle ne compte pas." in french
    )
    assert not any(f.message in french for f, _ in rows)


def test_the_floor_shows_findings_in_the_readers_language(
    client, pitboss, shoe, turn, deal
):
    from audit.models import Flag
    from audit.services import flags_sync

    # the punter's third card after the banker's natural 8: the banker wins
    coup = deal(shoe, (["2H", "3D", "QH"], ["8C", "TS"]), [stake("100")])
    finding = coup.findings.get()
    wanted = "Le ponte a reçu une troisième carte (D♥) après le naturel 8 du banquier"
    html = page(client, pitboss, f"/floor/coups/{coup.pk}/", "fr")
    assert wanted in html and finding.message not in html
    flags_sync()
    flag = Flag.objects.get(finding=finding)
    html = page(client, pitboss, f"/floor/flags/{flag.pk}/", "fr")
    assert f"<strong>{wanted}" in html
    html = page(client, pitboss, "/floor/queue/", "fr")
    assert "Le ponte a reçu une troisième carte (D♥)" in html
    assert finding.message[:40] not in html


def test_the_coup_page_words_stored_values(client, pitboss, shoe, turn, deal):
    # a natural, a punter's choice at 5, an announcement: words, not codes
    coup = deal(shoe, (["2H", "3D"], ["8C", "TS"]), [stake("100")])
    chose = deal(shoe, (["2H", "3D"], ["3C", "TS"]), [stake("100")])
    for c, wanted in [(coup, r"naturel ?: banquier"), (chose, r"à 5 ?: est resté")]:
        text = shown(page(client, pitboss, f"/floor/coups/{c.pk}/", "fr"))
        assert re.search(wanted, text), text
        assert not re.search(r"\b(none|banker|punter|stand|draw)\b", text)
