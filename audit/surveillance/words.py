"""The surveillance's tests and subjects in words (translated on the pages)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

TESTS = {
    "false_draw_rate": _("False draws above the floor's rate"),
    "correction_rate": _("Coups corrected more often than on the floor"),
    "bank_mismatch_rate": _("Bank mismatches above the floor's rate"),
    "banker_wins": _("The banker won more coups than the odds give"),
    "banker_money": _("The banker won more money than the odds give"),
    "banker_share": _("Banker wins away from the odds on a gaming day"),
    "levy": _("Commission away from the expected levy"),
    "cusum_banker_share": _("The banker-win rate fell (CUSUM over its limit)"),
    "cusum_banker_share_up": _("The banker-win rate rose (CUSUM over its limit)"),
    "outcomes": _("The shoe's outcomes are away from the odds"),
    "runs": _("The shoe's wins come in runs the odds do not give"),
    "count": _("Cards dealt, burned and left do not make the shoe"),
    "rank_over": _("A rank seen more often than the shoe holds"),
    "rank_short": _("A rank short at the shoe's close"),
}

KINDS = {
    "croupier": _("croupier"),
    "banker": _("banker"),
    "table_day": _("table, gaming day"),
    "table_cusum": _("table"),
    "shoe": _("shoe"),
    "shoe_count": _("shoe count"),
}


def test_label(code: str) -> str:
    return str(TESTS.get(code, code.replace("_", " ")))


FIGURES = {
    "coups": _("coups"),
    "count": _("count"),
    "rate": _("rate"),
    "floor_rate": _("floor's rate"),
    "rest_of_floor_rate": _("rate of the rest of the floor"),
    "ratio_to_rest": _("ratio to the rest of the floor"),
    "wins": _("banker wins"),
    "banker_wins": _("banker wins"),
    "expected_wins": _("expected banker wins"),
    "win_share": _("banker-win share"),
    "share": _("banker-win share"),
    "expected_share": _("expected share"),
    "money": _("banker's money"),
    "expected_money": _("expected money"),
    "sd": _("standard deviation"),
    "sd_money": _("standard deviation of the money"),
    "z": "z",
    "levy": _("commission"),
    "expected_levy": _("expected commission"),
    "chi_square": "χ²",
    "runs": _("runs"),
    "runs_z": _("runs (z)"),
    "p0": _("expected banker-win rate"),
    "p1": _("rate the CUSUM watches for"),
    "limit_h": _("CUSUM limit"),
    "arl0": _("in-control run length (coups)"),
    "false_alarm_probability": _("false-alarm probability"),
    "crossed_at_coup": _("crossed at coup"),
    "crossing_day": _("crossing day"),
    "q_value": _("adjusted p-value (q)"),
    "fdr": _("false discovery rate"),
    "decks": _("decks"),
    "burned": _("burned"),
    "dealt": _("dealt"),
    "left_counted": _("counted left"),
    "accounted": _("accounted for"),
    "expected": _("expected"),
    "difference": _("difference"),
    "rank": _("rank"),
    "seen": _("seen"),
    "allowed": _("allowed"),
    "table": _("table"),
    "shoe": _("shoe"),
    "day": _("gaming day"),
}
