/* The coup screen's words, in the croupier's language: the page's strings
 * table (state.js T) filled in, amounts and cards as the pad labels them,
 * results in the one wording (tables/wording.py), findings in words
 * (tables/finding_words.py) and the server's refusals (refusals.js).
 * tests/tablet/test_result_panel.py, test_guidance_parity.py and
 * test_refusals.py read them through window.ChemmyTablet (coup.js). */
import * as C from "../chemmy.js";
import * as refusals from "../refusals.js";
import { LANG, T, view } from "./state.js";

const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
// The pad's own labels (R/D/V in French), read from its keys.
export const RANK_LABEL = {};
document.querySelectorAll("[data-rank]").forEach(function (b) {
  RANK_LABEL[b.dataset.rank] = b.textContent.trim();
});

export function fmt(template, values) {
  return String(template).replace(/\{(\w+)\}/g, function (m, k) {
    return Object.prototype.hasOwnProperty.call(values, k) ? String(values[k]) : m;
  });
}

export function money(cents) {
  const whole = cents % 100 === 0;
  return new Intl.NumberFormat(LANG, {
    minimumFractionDigits: whole ? 0 : 2,
    maximumFractionDigits: 2,
  }).format(cents / 100); // display only: the sums are done in cents
}

export function signed(cents) {
  if (cents > 0) return "+" + money(cents);
  if (cents < 0) return "\u2212" + money(-cents);
  return money(0);
}

export function signedCents(text) {
  const t = String(text);
  const cents = C.toCents(t.replace(/^-/, ""));
  return t.startsWith("-") ? -cents : cents;
}

/** A coup's result in the one wording (tables/wording.py, its strings
 *  come from the same catalogue): "Banker wins 7 to 5", "Tie at 6". */
export function resultText(outcome, p, b) {
  const template = T["result_" + outcome];
  return template ? fmt(template, { p: p, b: b }) : String(outcome);
}

export function cardText(code) {
  return (RANK_LABEL[code[0]] || code[0]) + SUIT_SYMBOL[code[1]];
}

/** "KH" -> "king of hearts" / "roi de cœur" (tables/cards.py card_name). */
export function cardName(code) {
  const rank = T["card_rank_" + code[0]] || (code[0] === "T" ? "10" : code[0]);
  return fmt(T.card_name, { rank: rank, suit: T["card_suit_" + code[1]] || code[1] });
}

export function stakeName(s) {
  return s.seat !== null && s.seat !== undefined ? fmt(T.seat_n, { n: s.seat }) : s.standing;
}

// ---- findings in words -------------------------------------------------------

export function findingText(f, totals) {
  if (f.code === "false_draw") {
    const drew = f.actual === "draw";
    if (f.side === "punter") {
      return fmt(drew ? T.fd_punter_drew : T.fd_punter_stood, { p2: f.punter_total });
    }
    const standing = f.punter_third === null || f.punter_third === undefined;
    const key =
      "fd_banker_" + (drew ? "drew" : "stood") + (standing ? "_standing" : "_against");
    return fmt(T[key], { b2: f.banker_total, third: f.punter_third });
  }
  if (f.code === "house_choice") {
    const drew = f.actual === "draw";
    if (f.side === "punter") {
      return fmt(drew ? T.hc_punter_drew : T.hc_punter_stood, { p2: f.punter_total });
    }
    const standing = f.punter_third === null || f.punter_third === undefined;
    const key =
      "hc_banker_" + (drew ? "drew" : "stood") + (standing ? "_standing" : "_against");
    return fmt(T[key], { b2: f.banker_total, third: f.punter_third });
  }
  if (f.code === "draw_after_natural" && totals) {
    const total = f.natural === "punter" ? totals.p : totals.b;
    return fmt(T["dan_" + f.side + "_" + f.natural], { card: cardText(f.card), total: total });
  }
  // the server's findings of a recorded coup, in the croupier's language
  if (f.code === "bank_mismatch" && f.declared_bank !== undefined) {
    return fmt(T.bank_mismatch, {
      declared: money(C.toCents(f.declared_bank)),
      carried: money(C.toCents(f.carried_forward)),
    });
  }
  if (f.code === "deal_below_seven" && f.cards_left !== undefined) {
    const key = Number(f.cards_left) === 1 ? "below_seven_one" : "below_seven_many";
    return fmt(T[key], { left: f.cards_left });
  }
  if (f.code === "card_count_exceeded" && f.card) {
    return fmt(T.card_count, { card: cardText(f.card), count: f.count, decks: f.decks });
  }
  return f.message || f.code;
}

/** "Banker must draw", "Banker may choose", "Banker must draw (house
 *  rule)": a rule as houseAction() gives it. */
export function ruleText(side, rule) {
  const which = { D: "_must_draw", O: "_may_choose", S: "_must_stand" }[rule.action];
  return T[side + which + (rule.house ? "_house" : "")];
}

/** The guidance's last line, in the croupier's words, from nextStep(). */
export function promptText(step) {
  if (step.kind === "complete") return T.coup_complete;
  if (step.kind === "punter_choice") return T.next_punter_choice;
  if (step.kind === "banker_choice") return T.next_banker_choice;
  return fmt(T.deal_next, { slot: T["slot_" + step.slot] });
}

// A server refusal in the croupier's words (static/tablet/refusals.js).
export const REFUSAL = refusals.make({
  T: T,
  fmt: fmt,
  money: money,
  toCents: C.toCents,
  seatName: stakeName,
  // what holds this shoe, as the page knows it (house rule hold on error)
  heldCodes: (seq) => (view.heldBy === seq ? view.heldCodes : null),
});
