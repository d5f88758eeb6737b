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
    return re.sub(r"<[^>]+>", " ", html)


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
