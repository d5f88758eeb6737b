"""One wording for a coup's result: the winner first with his total, in
English and French, the same from the template filter, tables.wording and
the strings the tablet's script words them with."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.utils import translation

from tables.tablet.state import js_strings
from tables.wording import RESULTS, coup_result, result_text


@pytest.mark.parametrize(
    ("lang", "outcome", "p", "b", "want"),
    [
        ("en", "banker", 7, 8, "Banker wins 8 to 7"),
        ("en", "punter", 9, 7, "Punter wins 9 to 7"),
        ("en", "tie", 6, 6, "Tie at 6"),
        ("fr", "banker", 7, 8, "Le banquier gagne 8 à 7"),
        ("fr", "punter", 9, 7, "Le ponte gagne 9 à 7"),
        ("fr", "tie", 6, 6, "Égalité à 6"),
    ],
)
def test_the_winner_and_his_total_come_first(lang, outcome, p, b, want):
    with translation.override(lang):
        assert result_text(outcome, p, b) == want


def test_every_outcome_every_total_puts_the_winners_total_first():
    with translation.override("en"):
        for p in range(10):
            for b in range(10):
                outcome = "banker" if b > p else "punter" if p > b else "tie"
                text = result_text(outcome, p, b)
                high = max(p, b)
                assert text.split()[2] == str(high) if outcome != "tie" else (
                    text == f"Tie at {p}"
                )


def test_the_filter_and_the_script_read_the_same_sentences():
    tpl = Template("{% load coups %}{{ c|result }}")
    for lang in ("en", "fr"):
        with translation.override(lang):
            strings = js_strings()
            for outcome in RESULTS:
                c = {"outcome": outcome, "punter_total": 3, "banker_total": 5}
                rendered = tpl.render(Context({"c": c}))
                assert rendered == coup_result(c)
                assert strings[f"result_{outcome}"].format(p=3, b=5) == rendered


def test_an_object_reads_like_a_dict():
    class Coup:
        outcome, punter_total, banker_total = "banker", 5, 7

    with translation.override("en"):
        assert coup_result(Coup()) == "Banker wins 7 to 5"
        assert result_text("void", 1, 2) == "void"
