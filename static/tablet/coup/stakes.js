/* The stakes on the table map: seats and standing players, quick amounts,
 * the announcements (banco solo / deux / avec, suivi), the player's card
 * number, the coverage of the bank as the house covers it (chemmy.js cover)
 * and a stake the server would refuse, said before saving.
 */
import * as C from "../chemmy.js";
import { $, el, hideAlert, showAlert } from "./dom.js";
import { conflicted, draft, render, S, stopped, T, view } from "./state.js";
import { fmt, money, stakeName } from "./words.js";

/** The house's maximum bank in cents, or null (no maximum). */
export function maximumBank() {
  return S.rules.maximum_bank ? C.toCents(S.rules.maximum_bank) : null;
}

/** The bank in play, in cents: the bank, or the house's maximum when the
 *  bank is above it (docs/rules.md, "Stakes and announcements"). What a
 *  banco solo or a suivi takes, what a banco avec takes half of and what a
 *  banco deux's two stakes make up; the rest goes to the garage. */
export function bankInPlay() {
  const top = maximumBank();
  return top === null ? view.bank : Math.min(view.bank, top);
}

/** Whether the bank in play is the house's maximum (the bank is above it). */
export function capped() {
  const top = maximumBank();
  return top !== null && view.bank > top;
}

/** Whether ``cents`` is what ``announcement`` takes of the bank in play
 *  (a banco deux: a share of it; "none": any amount). */
function fits(announcement, cents) {
  const play = bankInPlay();
  if (announcement === "banco_solo" || announcement === "suivi") return cents === play;
  if (announcement === "banco_avec") return cents * 2 === play;
  if (announcement === "banco_deux") return cents < play;
  return true;
}

export function engineStakes() {
  return draft.stakes.map((s) => ({
    seat: s.seat,
    standing: s.standing,
    amount: s.amount,
    announcement: s.announcement,
  }));
}

export function coverage() {
  if (!view.turnOpen || !draft.stakes.length) return null;
  return C.cover(engineStakes(), view.bank, view.bankerSeat, S.table.seats,
    S.rules.cover_rule, maximumBank());
}

/** Opened after a tie (house rule tie_rule "stay"): its stakes are still on
 *  the table, as the server keeps them (at least what was covered), or as
 *  the tie still waiting in the queue left them (derive: the last waiting
 *  coup's). Either way they survive a reload and an offline spell. */
export function restoreTiedStakes() {
  if (!view.tied) return;
  draft.stakes = view.tied.map((t) => ({
    seat: t.seat, standing: t.standing, amount: t.amount, announcement: "none",
  }));
  draft.standingCount = draft.stakes.filter((t) => t.seat === null || t.seat === undefined).length;
}

/** The stakes as the engine would refuse them, said before saving (the
 *  server stays the judge: refusals.js words what it answers). */
export function stakeProblem() {
  const min = C.toCents(S.rules.minimum_stake);
  const bank = bankInPlay();
  const cap = capped() ? T.house_maximum_note : "";
  const pair = [];
  // After a tie the stakes stay on the table: raised, never taken back.
  for (const t of view.tied || []) {
    const i = draft.stakes.findIndex((s) => (t.seat !== null && t.seat !== undefined
      ? s.seat === t.seat : s.standing === t.standing));
    if (i < 0 || draft.stakes[i].amount < t.amount) {
      return {
        index: i < 0 ? null : i,
        text: fmt(T.refused_tie_stays, { who: stakeName(t), amount: money(t.amount) }),
      };
    }
  }
  for (let i = 0; i < draft.stakes.length; i++) {
    const s = draft.stakes[i];
    const v = { who: stakeName(s), amount: money(s.amount), minimum: money(min) };
    if (s.amount < min) return { index: i, text: fmt(T.refused_below_minimum, v) };
    const whole = s.announcement === "banco_solo" || s.announcement === "suivi";
    if (whole && s.amount !== bank) {
      return {
        index: i,
        text: fmt(T.refused_whole_bank, {
          who: v.who, announcement: T["announce_" + s.announcement], bank: money(bank), cap: cap,
        }),
      };
    }
    if (s.announcement === "banco_avec" && s.amount * 2 !== bank) {
      return {
        index: i, text: fmt(T.refused_banco_avec, { who: v.who, half: money(bank / 2), cap: cap }),
      };
    }
    if (s.announcement === "banco_deux") pair.push(i);
  }
  if (pair.length === 1) {
    return { index: pair[0], text: fmt(T.refused_banco_deux_alone, { who: stakeName(draft.stakes[pair[0]]) }) };
  }
  if (pair.length > 2) {
    return { index: pair[2], text: fmt(T.refused_banco_deux_third, { who: stakeName(draft.stakes[pair[2]]) }) };
  }
  if (pair.length === 2 && draft.stakes[pair[0]].amount + draft.stakes[pair[1]].amount !== bank) {
    return { index: pair[1], text: fmt(T.refused_banco_deux_total, { bank: money(bank), cap: cap }) };
  }
  return null;
}

// ---- the croupier's taps ----------------------------------------------------------

export function tapSeat(n) {
  if (n === view.bankerSeat || stopped() || conflicted()) return;
  let i = draft.stakes.findIndex((s) => s.seat === n);
  if (i < 0) {
    draft.stakes.push({ seat: n, standing: null, amount: draft.currentAmount, announcement: "none" });
    i = draft.stakes.length - 1;
  }
  draft.selected = i;
  hideAlert();
  render();
}

export function addStanding() {
  if (conflicted()) return;
  draft.standingCount += 1;
  draft.stakes.push({
    seat: null,
    standing: T.standing_label + " " + draft.standingCount,
    amount: draft.currentAmount,
    announcement: "none",
  });
  draft.selected = draft.stakes.length - 1;
  render();
}

export function setAmount(cents) {
  if (cents === null || cents <= 0 || conflicted()) return;
  draft.currentAmount = cents;
  if (draft.selected !== null) {
    const s = draft.stakes[draft.selected];
    s.amount = cents;
    // An amount the announcement takes keeps it ("Set the stake to 2,000"
    // after a refusal of a banco solo of 2,110.50); any other is a plain stake.
    if (!fits(s.announcement, cents)) s.announcement = "none";
  }
  render();
}

export function announce(kind) {
  if (conflicted()) return;
  if (draft.selected === null) return showAlert(T.select_seat_first);
  const s = draft.stakes[draft.selected];
  if (s.announcement === kind) {
    s.announcement = "none";
    return render();
  }
  // What the announcement is worth: the bank in play, capped at the house's
  // maximum (the server refuses anything else: tables/chemmy/stakes.py).
  const bank = bankInPlay();
  if (kind === "suivi") {
    if (view.suivi === null || view.suivi === undefined) return showAlert(T.no_suivi);
    if (s.seat !== view.suivi) return showAlert(fmt(T.suivi_only, { n: view.suivi }));
    s.amount = bank;
  } else if (kind === "banco_solo") {
    s.amount = bank;
  } else if (kind === "banco_avec") {
    s.amount = Math.floor(bank / 2);
  } else if (kind === "banco_deux") {
    const other = draft.stakes.find((o, j) => j !== draft.selected && o.announcement === "banco_deux");
    s.amount = other ? bank - other.amount : Math.floor(bank / 2);
  }
  s.announcement = kind;
  render();
}

// The selected stake's player card number: optional, letters and digits.
function cleanCardNo(value) {
  return String(value || "").toUpperCase().replace(/[^A-Z0-9]/g, "").slice(0, 20);
}

export function setCardNo(value) {
  if (draft.selected === null || !draft.stakes[draft.selected]) return;
  draft.stakes[draft.selected].player_card = cleanCardNo(value);
}

function renderCardNo() {
  const input = $("stake-card");
  if (!input) return;
  const s = draft.selected === null ? null : draft.stakes[draft.selected];
  input.disabled = !s;
  if (document.activeElement !== input) input.value = s ? s.player_card || "" : "";
}

export function removeStake() {
  if (conflicted()) return;
  if (draft.selected === null) return;
  draft.stakes.splice(draft.selected, 1);
  draft.selected = null;
  render();
}

// ---- the stakes as shown -----------------------------------------------------------

export function renderSeats() {
  const cov = coverage();
  document.querySelectorAll(".seat").forEach(function (btn) {
    const n = Number(btn.dataset.seat);
    const info = btn.querySelector(".seat-info");
    btn.className = "seat";
    btn.removeAttribute("aria-pressed");
    btn.disabled = false;
    if (n === view.bankerSeat && view.turnOpen) {
      btn.classList.add("banker");
      btn.setAttribute("aria-disabled", "true");
      info.textContent = T.banker_seat + " \u00b7 " + money(view.bank);
      return;
    }
    btn.removeAttribute("aria-disabled");
    const i = draft.stakes.findIndex((s) => s.seat === n);
    if (i < 0) {
      info.textContent = "";
      return;
    }
    btn.classList.add("staked");
    btn.setAttribute("aria-pressed", i === draft.selected ? "true" : "false");
    if (i === draft.selected) btn.classList.add("selected");
    info.textContent = stakeInfo(i, cov);
    const c = cov && cov.stakes[i];
    if (c && c.covered === 0) btn.classList.add("declined");
    else if (c && c.declined > 0) btn.classList.add("partly");
    if (cov && cov.punter_index === i) btn.classList.add("holder");
  });
  // The felt speaks only when no bank is open: with one, the banker's
  // seat and the coverage line say it, and a seat a few lines taller
  // (stakes declined) may reach the middle of the map.
  $("felt-bank").textContent = view.turnOpen ? "" : T.no_bank_felt;
  // standing players
  const list = $("standing-list");
  list.replaceChildren();
  draft.stakes.forEach(function (s, i) {
    if (s.seat !== null) return;
    const b = el("button", {
      type: "button",
      class: "btn chip standing" + (i === draft.selected ? " selected" : ""),
      "aria-pressed": i === draft.selected ? "true" : "false",
      "aria-label": s.standing,
      text: s.standing + " \u00b7 " + stakeInfo(i, cov).replace(/\n/g, " \u00b7 "),
    });
    b.addEventListener("click", function () {
      draft.selected = i;
      render();
    });
    list.append(b);
  });
}

/** A stake in words. Short (a seat's bubble), each fact on its own line
 *  and a stake declined whole said once ("declined 500", struck through):
 *  a bubble three lines tall at most fits the map (tablet.css). */
export function stakeInfo(i, cov, long) {
  const s = draft.stakes[i];
  const c = cov && cov.stakes[i];
  const whole = !long && c && c.covered === 0 && c.declined > 0;
  const parts = whole ? [] : [money(s.amount)];
  if (s.announcement !== "none") parts.push(T["announce_" + s.announcement]);
  if (c && c.declined > 0) {
    parts.push(fmt(T.declined_line, { amount: money(c.declined) }));
  } else if (c && long) {
    parts.push(fmt(T.covered_line, { amount: money(c.covered) }));
  }
  return parts.join(long ? " \u00b7 " : "\n");
}

export function renderStakeLines() {
  const cov = coverage();
  const line = $("selected-line");
  if (draft.selected === null || !draft.stakes[draft.selected]) {
    draft.selected = null;
    line.textContent = T.no_stakes;
  } else {
    const s = draft.stakes[draft.selected];
    let text = stakeName(s) + ": " + stakeInfo(draft.selected, cov, true);
    if (cov && cov.punter_index === draft.selected) text += " \u00b7 " + T.holds_hand;
    const min = C.toCents(S.rules.minimum_stake);
    if (s.amount < min) {
      text += " \u2014 " + fmt(T.below_minimum, { amount: money(s.amount), minimum: money(min) });
    }
    line.textContent = text;
  }
  renderCardNo();
  document.querySelectorAll("[data-announce]").forEach(function (b) {
    const on = draft.selected !== null && draft.stakes[draft.selected].announcement === b.dataset.announce;
    b.setAttribute("aria-pressed", on ? "true" : "false");
  });
  document.querySelectorAll("[data-amount]").forEach(function (b) {
    b.setAttribute("aria-pressed", C.toCents(b.dataset.amount) === draft.currentAmount ? "true" : "false");
  });
  $("coverage").textContent = view.turnOpen
    ? fmt(capped() ? T.coverage_capped : T.coverage, {
        bank: money(view.bank),
        in_play: money(bankInPlay()),
        covered: money(cov ? cov.covered : 0),
        garage: money(cov ? cov.garage : view.bank),
      })
    : T.no_turn;
}
