"""Issue 35: each alert in one sentence a manager reads, from its own
evidence; the statistics stay one click away on the page."""

from __future__ import annotations

from django.utils import translation

from audit.surveillance.words import alert_sentence, chance_words


def test_the_chance_in_words():
    with translation.override("en"):
        assert chance_words(3e-8) == (
            "this happens by chance less than once in 10,000,000")
        assert chance_words(0.004) == "this happens by chance less than once in 100"
        assert chance_words(2.4e-18) == (
            "this happens by chance less than once in 1,000,000,000")
        assert chance_words(0.0) == "this is a fact, not chance"
        assert chance_words(0.7) == "this happens by chance about every other time"
        assert chance_words(None) == ""


def test_a_croupier_alert_in_one_sentence():
    ev = {"coups": 4550, "count": 44, "rate": 0.00967,
          "rest_of_floor_rate": 0.0032, "ratio_to_rest": 3.02}
    with translation.override("en"):
        assert alert_sentence("false_draw_rate", "Croupier X", ev, 4e-8) == (
            "Croupier X false-draws 3.0 times as often as the rest of the floor "
            "over 4,550 coups; this happens by chance less than once in "
            "10,000,000.")
        # the rest never did: no ratio to give
        never = {**ev, "ratio_to_rest": None, "rest_of_floor_rate": 0.0}
        assert alert_sentence("false_draw_rate", "Croupier X", never, 0.001) == (
            "Croupier X false-drew 44 times in 4,550 coups, where the rest of "
            "the floor never did; this happens by chance less than once in "
            "1,000.")
        assert alert_sentence("banker_wins", "Card P0105",
                              {"wins": 60, "expected_wins": 41.27}, 2e-5) == (
            "Card P0105 won 60 coups as banker where the odds give 41.3; this "
            "happens by chance less than once in 10,000.")
        # a test with no sentence of its own still reads as one
        assert alert_sentence("runs", "shoe #12", {}, 0.0004) == (
            "The shoe's wins come in runs the odds do not give: shoe #12; this "
            "happens by chance less than once in 1,000.")
    with translation.override("fr"):
        said = alert_sentence("false_draw_rate", "Le croupier X", ev, 4e-8)
        assert said.startswith("Le croupier X fait 3,0 fois plus de tirages faux")
        assert "10\u202f000\u202f000" in said or "10 000 000" in said \
            or "10\xa0000\xa0000" in said, said
        # a name in the middle of the French sentence is not "de Le croupier"
        corrected = alert_sentence("correction_rate", "Le croupier X", ev, 4e-8)
        assert corrected.startswith("Le croupier X : ses coups sont corrigés 3,0 "
                                    "fois"), corrected
        assert " de Le " not in corrected



def test_a_live_alert_in_one_sentence_in_english_and_french():
    """The queue's words for the live alerts (issue 38), from their evidence."""
    from django.utils import translation

    from audit.surveillance.words import live_sentence

    croupier = {"table": "Table 4", "who": "X", "count": 9, "coups": 310,
                "expected": 0.93, "once_in_shifts": 20000}
    banker = {**croupier, "who": "card P0107", "count": 40, "coups": 60,
              "expected": 27.5}
    table = {**banker, "who": "", "count": 120, "expected": 142.3}
    with translation.override("en"):
        assert live_sentence("live_croupier", croupier) == (
            "Table 4: croupier X has false-drawn 9 times in 310 coups tonight; "
            "the floor's rate would give 0.9; this happens by chance about once "
            "in 20,000 shifts.")
        assert live_sentence("live_banker", banker) == (
            "Table 4: the banker (card P0107) has won 40 of 60 coups tonight; "
            "the odds would give 28; this happens by chance about once in "
            "20,000 shifts.")
        assert live_sentence("live_table", table).startswith(
            "Table 4: the bank has won 120 of 60 coups tonight; the odds would "
            "give 142;")
    with translation.override("fr"):
        said = live_sentence("live_banker", {**banker, "who": "seat 3"})
        assert said.startswith("Table 4 : le banquier (place 3) a gagné 40 coups "
                               "sur 60 ce soir"), said
        assert "environ une fois en 20\u00a0000 soirées" in said
