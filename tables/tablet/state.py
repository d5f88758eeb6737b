"""What the coup screen is told about its table: read-only, one place.

The page gets this as JSON inside the HTML (so it works on from a reload while
the Wi-Fi is down) and again from ``state/`` after each coup and on a
conflict ("the shoe moved on").
"""

from __future__ import annotations

from decimal import Decimal

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from ..cards import card_strings
from ..models import BankerTurn, Coup, Shoe
from ..services import next_seat, passed_bank_offer
from ..services.holds import hold_of
from ..wording import result_strings


def _money(value: Decimal | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def coup_summary(coup: Coup | None) -> dict | None:
    if coup is None:
        return None
    return {
        "id": coup.pk,
        "seq": coup.seq,
        "punter_cards": coup.punter_cards,
        "banker_cards": coup.banker_cards,
        "punter_total": coup.punter_total,
        "banker_total": coup.banker_total,
        "outcome": coup.outcome,
        "natural": coup.natural or None,
        "bank_before": _money(coup.bank_before),
        "covered": _money(coup.covered),
        "garage": _money(coup.garage),
        "commission": _money(coup.commission),
        "bank_after": _money(coup.bank_after),
        "next_banker_seat": coup.next_banker_seat,
        "entered_by": coup.entered_by.get_username(),
        # A pit boss's correction: the latest revision, marked on the panel.
        "revision": coup.revision,
        "corrected_by": coup.corrected_by.get_username()
        if coup.corrected_by_id
        else None,
        "finding_count": coup.finding_count,
        "cards_left": coup.cards_left_before
        - len(coup.punter_cards)
        - len(coup.banker_cards),
    }


def last_coup(shoe: Shoe) -> Coup | None:
    return (
        Coup.objects.filter(shoe=shoe)
        .select_related("entered_by", "corrected_by")
        .order_by("-seq", "-revision")
        .first()
    )


def turn_dict(turn: BankerTurn | None) -> dict | None:
    if turn is None:
        return None
    return {
        "id": turn.pk,
        "number": turn.number,
        "seat": turn.seat,
        "opening_bank": _money(turn.opening_bank),
        "bank": _money(turn.bank),
        "coups": turn.coups,
        "suivi_seat": turn.suivi_seat,
        # house rule tie_rule "stay": what the last tie left on the table
        "tied_stakes": [
            {"seat": seat, "standing": standing or None, "amount": amount}
            for seat, standing, amount in turn.tied_stakes
        ] if turn.tied_stakes else None,
        "open": turn.is_open,
        "end": turn.end or None,
    }


def shoe_state(shoe: Shoe) -> dict:
    """Everything the coup screen needs, as JSON-ready data."""
    session = shoe.session
    table = session.table
    rules = session.house_rules  # the version this session plays
    turn = session.turns.filter(closed_at__isnull=True).first()
    last_turn, offer = passed_bank_offer(session)
    return {
        # when the server said it: the page keeps the latest state it heard
        # (coup/state.js keepState) and prefers it to an older copy of the page
        "as_of": timezone.now().isoformat(),
        "shoe": {
            "id": shoe.pk,
            "number": shoe.number,
            "decks": shoe.decks,
            "next_seq": shoe.next_seq,
            "cards_left": shoe.cards_left,
            "open": shoe.is_open,
            "held_by_seq": shoe.held_by_seq,
            # what stopped play (house rule hold on error), shown at once
            "held": hold_of(shoe),
        },
        "session": {"id": session.pk, "open": session.is_open},
        "table": {"id": table.pk, "name": table.name, "seats": table.seats},
        "rules": {
            "minimum_banco": _money(rules.minimum_banco),
            "minimum_stake": _money(rules.minimum_banco / 10),
            "commission_rate": str(rules.commission_rate),
            "commission_unit": _money(rules.commission_unit),
            "commission_rounding": rules.commission_rounding,
            "cover_rule": rules.cover_rule,
            "maximum_bank": _money(rules.maximum_bank),
            "tie_rule": rules.tie_rule,
            "hold_on_error": rules.hold_on_error,
            "hold_warnings": rules.hold_warnings or [],
        },
        "tableau": rules.tableau.as_engine().to_dict(),
        # the optional cells this house prescribes (house rules): the pad
        # guides to them and warns before saving against them
        "prescriptions": rules.prescriptions.to_dict(),
        "turn": turn_dict(turn),
        "last_turn": turn_dict(last_turn),
        "passed_bank": _money(offer),
        "next_banker_seat": (
            next_seat(last_turn.seat, table.seats)
            if turn is None and last_turn is not None
            else None
        ),
        "last_coup": coup_summary(last_coup(shoe)),
    }


def quick_amounts(minimum_banco: Decimal) -> list[str]:
    """Chips for the usual stakes: from the minimum stake up to 5 banks."""
    m = minimum_banco
    values = [m / 10, m / 5, m / 2, m, m * 2, m * 5]
    return [_money(v.quantize(Decimal("0.01"))) for v in values]


def js_strings() -> dict[str, str]:
    """Every sentence the page's script shows, in the user's language.

    Placeholders are {name}; the English finding messages are word for word
    the engine's (tables/chemmy/engine.py), which the parity test checks.
    """
    return {
        # guidance
        "punter_must_draw": _("Punter must draw"),
        "punter_may_choose": _("Punter may choose (5: draw or stand)"),
        "punter_must_stand": _("Punter must stand"),
        "banker_must_draw": _("Banker must draw"),
        "banker_may_choose": _("Banker may choose"),
        "banker_must_stand": _("Banker must stand"),
        # an optional cell the house prescribes (house rules)
        "punter_must_draw_house": _("Punter must draw (house rule)"),
        "punter_must_stand_house": _("Punter must stand (house rule)"),
        "banker_must_draw_house": _("Banker must draw (house rule)"),
        "banker_must_stand_house": _("Banker must stand (house rule)"),
        "banker_waits": _("Banker: waiting for the punter"),
        "natural_punter": _("Natural {total} for the punter: nobody draws"),
        "natural_banker": _("Natural {total} for the banker: nobody draws"),
        "deal_next": _("Next card: {slot}"),
        "coup_complete": _("All cards in: save the coup"),
        "next_punter_choice": _(
            "Punter on 5: deal his third card, or tap “Next card to banker” "
            "if he stands"
        ),
        "next_banker_choice": _(
            "Banker's choice: deal his third card, or save the coup if he stands"
        ),
        "all_in_more": _(
            "All cards are in: save the coup. To deal one more card, tap "
            "“Next card to punter” or “Next card to banker” first."
        ),
        "punter_stood_on": _("punter stood"),
        "against": _("against a {value}"),
        # slots
        "slot_p1": _("punter's first card"),
        "slot_b1": _("banker's first card"),
        "slot_p2": _("punter's second card"),
        "slot_b2": _("banker's second card"),
        "slot_p3": _("punter's third card"),
        "slot_b3": _("banker's third card"),
        "choose_suit": _("{rank}: now the suit"),
        # findings, word for word the engine's messages in English
        "fd_punter_stood": _("Punter stood on {p2}: the rule requires a draw."),
        "fd_punter_drew": _("Punter drew on {p2}: the rule requires standing."),
        "fd_banker_stood_standing": _(
            "Banker stood on {b2} with the punter standing: "
            "the tableau requires a draw."
        ),
        "fd_banker_drew_standing": _(
            "Banker drew on {b2} with the punter standing: "
            "the tableau requires standing."
        ),
        "fd_banker_stood_against": _(
            "Banker stood on {b2} against a {third}: the tableau requires a draw."
        ),
        "fd_banker_drew_against": _(
            "Banker drew on {b2} against a {third}: the tableau requires standing."
        ),
        "dan_punter_punter": _(
            "Punter was dealt a third card ({card}) after the punter's natural "
            "{total}: it does not count."
        ),
        "dan_punter_banker": _(
            "Punter was dealt a third card ({card}) after the banker's natural "
            "{total}: it does not count."
        ),
        "dan_banker_punter": _(
            "Banker was dealt a third card ({card}) after the punter's natural "
            "{total}: it does not count."
        ),
        "dan_banker_banker": _(
            "Banker was dealt a third card ({card}) after the banker's natural "
            "{total}: it does not count."
        ),
        # house_choice, word for word tables/chemmy/house.py's messages
        "hc_punter_stood": _("Punter stood on {p2}: this house prescribes a draw."),
        "hc_punter_drew": _("Punter drew on {p2}: this house prescribes standing."),
        "hc_banker_stood_standing": _(
            "Banker stood on {b2} with the punter standing: "
            "this house prescribes a draw."
        ),
        "hc_banker_drew_standing": _(
            "Banker drew on {b2} with the punter standing: "
            "this house prescribes standing."
        ),
        "hc_banker_stood_against": _(
            "Banker stood on {b2} against a {third}: this house prescribes a draw."
        ),
        "hc_banker_drew_against": _(
            "Banker drew on {b2} against a {third}: this house prescribes standing."
        ),
        # the other findings a recorded coup may carry (tables/finding_words.py)
        "bank_mismatch": _(
            "The croupier declared a bank of {declared}; the bank carried forward "
            "is {carried}."
        ),
        "below_seven_one": ngettext(
            "The coup began with {left} card left in the shoe; at least 7 are "
            "required.",
            "The coup began with {left} cards left in the shoe; at least 7 are "
            "required.",
            1,
        ),
        "below_seven_many": ngettext(
            "The coup began with {left} card left in the shoe; at least 7 are "
            "required.",
            "The coup began with {left} cards left in the shoe; at least 7 are "
            "required.",
            2,
        ),
        "card_count": _(
            "{card} has been seen {count} times in a {decks}-deck shoe: at most "
            "{decks} can be in it."
        ),
        "record_as_happened": _("Record it as it happened?"),
        "confirm_tableau": _("The tableau disagrees"),
        "confirm_house": _("The house rules disagree"),
        # stakes
        "seat_n": _("Seat {n}"),
        "standing_n": _("Standing {n}"),
        "standing_label": pgettext("stored label of a standing player", "standing"),
        "stake_line": _("{amount}"),
        "covered_line": _("covered {amount}"),
        "declined_line": _("declined {amount}"),
        "holds_hand": _("holds the punter hand"),
        "banker_seat": _("Banker"),
        "no_stakes": _("Tap a seat to place a stake"),
        "coverage": _("Bank {bank} · covered {covered} · garage {garage}"),
        # a bank above the house's maximum: only the maximum is in play
        "coverage_capped": _(
            "Bank {bank} · in play {in_play} (the house maximum) · covered "
            "{covered} · garage {garage}"
        ),
        "need_stake": _("Place at least one stake."),
        "need_cards": _("Deal at least two cards to each side."),
        "below_minimum": _("{amount} is below the minimum stake {minimum}."),
        "suivi_only": _("Only seat {n} may call suivi."),
        "no_suivi": _("Nobody may call suivi now."),
        "select_seat_first": _("Tap a seat first."),
        "announce_banco_solo": _("banco solo"),
        "announce_banco_deux": _("banco deux"),
        "announce_banco_avec": _("banco avec"),
        "announce_suivi": _("suivi"),
        # outcome
        # results: one wording (tables.wording), resultText() in coup/words.js
        **result_strings(),
        "tie_stakes_stay": _("The stakes stay on the table for the next coup."),
        "tie_stakes_returned": _(
            "The stakes go back to the punters: the next coup's stakes are placed "
            "afresh."
        ),
        "coup_n": _("Coup {n}"),
        "commission": _("Commission"),
        "payouts": _("Payouts"),
        "payout_seat": _("Seat {n}"),
        "bank_carried": _("Bank carried forward"),
        "bank_before": _("Bank"),
        "covered_at_risk": _("Covered (at risk)"),
        "garage_withdrawn": _("Garage (withdrawn by the banker)"),
        "garage_note_banker": _(
            "The banker wins: {after} carried forward, plus his garage of "
            "{garage}: {total} in all."
        ),
        "garage_note_punter": _(
            "The bank is lost; the banker keeps his garage of {garage}."
        ),
        "garage_note_tie": _(
            "The garage of {garage} goes back to the banker: the bank stands "
            "at {after}."
        ),
        "bank_lost": _("The bank is lost: the shoe passes to seat {n}."),
        "open_next_bank": _("Open the next bank"),
        "cards_left": _("Cards left in the shoe"),
        "cards_left_bar": _("{n} cards left"),
        "cards_low": _(
            "Only {n} cards left: no coup may begin with fewer than 7. "
            "Close the shoe."
        ),
        "findings": _("Flagged for the pit boss"),
        "provisional": _("Waiting to be sent: figures are provisional"),
        "recorded_by": _("Recorded by {user}"),
        # queue and network
        "waiting_one": _("1 coup waiting"),
        "waiting_many": _("{n} coups waiting"),
        "offline": _("Offline: coups are kept on this tablet"),
        "online": _("Online"),
        "moved_on": _("The shoe moved on: here is the latest coup."),
        "moved_on_detail": _(
            "Coup {seq} was recorded by {user}: {punter} / {banker}. {outcome}."
        ),
        "resend": _("Record mine after it"),
        "discard": _("Discard mine"),
        "refused": _("The server refused this coup: {detail}"),
        # refusals in the croupier's words (static/tablet/refusals.js)
        "refused_generic": _(
            "The server did not take this coup ({detail}). Check the coup, or "
            "call the pit boss."
        ),
        # after a refusal: the coup never happened, the screen is the server's
        "refused_what_now": _(
            "This coup was not recorded: the screen shows the table as the "
            "server holds it. Back to the pad to correct it, or discard it."
        ),
        "refused_what_now_many": _(
            "These {n} coups were not recorded: the screen shows the table as "
            "the server holds it. Discard them and key them again."
        ),
        "conflict_first": _(
            "The last coup was not recorded: answer the message first (back to "
            "the pad, or discard)."
        ),
        # a field the server names, in words (refusals.js, a refusal the page
        # has no sentence for)
        "field_amount": _("amount"),
        "field_seat": _("seat"),
        "field_standing": _("standing player"),
        "field_announcement": _("announcement"),
        "field_player_card": _("player's card number"),
        "field_stakes": _("stakes"),
        "field_punter": _("punter's cards"),
        "field_banker": _("banker's cards"),
        "field_expected_seq": _("coup number"),
        "field_shoe": _("shoe"),
        "field_turn": _("bank"),
        "field_bank": _("bank"),
        "field_declared_bank": _("declared bank"),
        "field_entered_by": _("who keyed the coup"),
        "field_entered_at": _("time on the tablet"),
        "stake_n": _("Stake {n}"),
        "refused_below_minimum": _(
            "{who}: {amount} is below the table minimum of {minimum}. Raise the "
            "stake or remove it."
        ),
        # the bank in play: at a bank above the house's maximum, the maximum
        # (docs/rules.md, "Stakes and announcements"); {cap} says so
        "refused_whole_bank": _(
            "{who}: {announcement} takes the whole bank in play, {bank}{cap}. "
            "Set the stake to {bank} or cancel the announcement."
        ),
        "refused_banco_avec": _(
            "{who}: banco avec takes exactly half the bank in play, {half}{cap}."
        ),
        "refused_banco_deux_total": _(
            "Banco deux: the two stakes must make up the whole bank in play, "
            "{bank}{cap}."
        ),
        "house_maximum_note": _(" (the house maximum)"),
        "refused_banco_deux_alone": _(
            "{who}: banco deux needs a second punter. Announce it for a second "
            "player too, or cancel it."
        ),
        "refused_banco_deux_third": _(
            "{who}: banco deux is two punters; a third cannot join."
        ),
        "refused_amount": _(
            "{who}: that is not a stake the table takes (a positive amount, two "
            "decimals at most)."
        ),
        "refused_seat_banker": _(
            "{who} holds the bank: the banker does not stake against himself."
        ),
        "refused_seat_range": _("{who}: there is no such seat at this table."),
        "refused_duplicate": _("{who} already has a stake: one stake per player."),
        "refused_seat_or_standing": _(
            "Each stake needs a seat or a standing player."
        ),
        "refused_announcement": _("{who}: that announcement is not known here."),
        "refused_stakes": _("Place at least one stake, and at most 40."),
        "refused_tie_stays": _(
            "{who}: the stake of {amount} stays on the table after the tie. It "
            "may be raised, not taken back."
        ),
        "refused_cards_punter": _(
            "The punter's cards are not valid (two or three cards): check them."
        ),
        "refused_cards_banker": _(
            "The banker's cards are not valid (two or three cards): check them."
        ),
        # {why}: what stopped play, named (stops_<code> below)
        "refused_shoe_held": _(
            "{why} Play is stopped at this shoe since coup {n}: call the pit "
            "boss, he releases the shoe before the next coup."
        ),
        # house rule hold on error: each finding that can stop play, named
        "stops_false_draw": _("A false draw stops play at this table (house rule)."),
        "stops_draw_after_natural": _(
            "A third card dealt after a natural stops play at this table "
            "(house rule)."
        ),
        "stops_deal_below_seven": _(
            "A coup begun with fewer than 7 cards in the shoe stops play at "
            "this table (house rule)."
        ),
        "stops_house_choice": _(
            "A cell the house prescribes, played the other way, stops play at "
            "this table (house rule)."
        ),
        "stops_card_count_exceeded": _(
            "A card seen more often than the shoe holds it stops play at this "
            "table (house rule)."
        ),
        "stops_bank_mismatch": _(
            "A declared bank that differs from the bank carried forward stops "
            "play at this table (house rule)."
        ),
        "stops_other": _("A finding stops play at this table (house rule)."),
        "stopped": _(
            "Play is stopped at this shoe: coup {n} has a finding that stops "
            "play (house rule: hold on error). Call the pit boss: he releases "
            "the shoe, then this screen unlocks."
        ),
        "refused_shoe_closed": _(
            "This shoe is closed: the coup cannot go into it. Call the pit boss."
        ),
        "refused_shoe_short": _(
            "Only {n} cards are left in the shoe: not enough for this coup. "
            "Close the shoe."
        ),
        "refused_ledger_max": _(
            "This coup's amounts go past what the ledger can hold: call the pit "
            "boss."
        ),
        "refused_bank_max": _(
            "The bank has grown past what the ledger can hold: pass the bank and "
            "open a new one."
        ),
        "refused_key": _(
            "This tablet already sent a different coup under the same key: call "
            "the pit boss."
        ),
        "refused_not_yours": _(
            "This coup was entered by {name}: it is sent when {name} signs in, "
            "or a pit boss accepts it."
        ),
        "refused_key_bad": _(
            "The tablet's key for this coup is not valid: call the pit boss."
        ),
        "refused_author_unknown": _(
            "The croupier who entered this coup is not known here: call the pit "
            "boss."
        ),
        "refused_clock": _(
            "The tablet's clock gave a time the server cannot read: call the pit "
            "boss."
        ),
        "refused_declared_bank": _("The declared bank is not a valid amount."),
        "refused_not_your_table": _(
            "You are not the croupier of this session: a pit boss hands the "
            "table over, or take it over as the relief."
        ),
        "refused_not_found": _(
            "The server does not know this shoe any more: call the pit boss."
        ),
        "refused_role": _("Your role may not record coups: call the pit boss."),
        "refused_password": _("Unknown user name or wrong password."),
        "refused_own_coups": _(
            "These are your own coups: unlock the tablet under your name and "
            "they are sent."
        ),
        "refused_not_pitboss": _(
            "{name} is not a pit boss: only a pit boss accepts coups on a "
            "croupier's behalf."
        ),
        "signed_out": _(
            "You are signed out: sign in again, the waiting coups will be sent."
        ),
        "lock_waiting_one": _(
            "1 of your coups is not sent yet. It stays on this tablet under "
            "your name and is sent when you unlock it again, or a pit boss "
            "accepts it. Tap Lock again to lock."
        ),
        "lock_waiting_many": _(
            "{n} of your coups are not sent yet. They stay on this tablet under "
            "your name and are sent when you unlock it again, or a pit boss "
            "accepts them. Tap Lock again to lock."
        ),
        # coups queued under another croupier (relieved since): they wait
        "held_one": _(
            "Waiting for {name}: 1 coup entered by {name} is kept on this "
            "tablet. It is sent when {name} unlocks it again, or a pit boss "
            "accepts it for {name}."
        ),
        "held_many": _(
            "Waiting for {name}: {n} coups entered by {name} are kept on this "
            "tablet. They are sent when {name} unlocks it again, or a pit boss "
            "accepts them for {name}."
        ),
        "held_behind": _(
            "The coups you enter now wait behind them, in dealing order."
        ),
        "held_accept": _("Pit boss: accept for {name}"),
        "accept_summary_one": _("1 coup entered by {name} at {from}."),
        "accept_summary_many": _("{n} coups entered by {name}, from {from} to {to}."),
        "accept_need_sign": _("The pit boss's user name and password are needed."),
        "accept_need_reason": _("Give the reason."),
        "accept_refused": _("Not accepted: {detail}"),
        "accepted_one": _("1 coup of {name} accepted by {by}."),
        "accepted_many": _("{n} coups of {name} accepted by {by}."),
        "accepted_line": _("Entered by {user}, accepted by {by}"),
        "no_turn": _("No bank is open: open the next bank first."),
        "no_bank_felt": _("No bank open"),  # on the felt: short, clear of the seats
        "cards_full": _("Both hands are full."),
        "no_target": _("Choose who takes the next card."),
        "undo_nothing": _("Nothing to undo."),
        "shoe_empty": _("Only {n} cards left in the shoe."),
        "corrected_line": _("Revision {n}: corrected by {who}"),
        # a card in words, for screen readers (tables/cards.py)
        **card_strings(),
    }
