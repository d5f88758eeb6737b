/* The cards of the coup on the pad: where the next card goes (nextStep, the
 * ONE place that decides it, from the punter's rule and this table's
 * tableau), the pad's taps, Undo and "Next card to punter / banker", the
 * coup as the server will judge it, and the cards and guidance as shown.
 * The pad's keys are bound by the shared pad.js (coup.js wires them here).
 */
import * as C from "../chemmy.js";
import { $, el, hideAlert, showAlert } from "./dom.js";
import { conflicted, draft, render, S, SLOTS, stopped, T } from "./state.js";
import { cardName, cardText, findingText, fmt, promptText, RANK_LABEL, ruleText } from "./words.js";

export function clearCards() {
  draft.cards = { p1: null, b1: null, p2: null, b2: null, p3: null, b3: null };
  draft.steps = [];
  draft.pendingRank = null;
}

export function hand(side) {
  return [draft.cards[side + "1"], draft.cards[side + "2"], draft.cards[side + "3"]].filter(Boolean);
}

export function twoCardTotals() {
  if (!draft.cards.p1 || !draft.cards.p2 || !draft.cards.b1 || !draft.cards.b2) return null;
  return { p: C.total([draft.cards.p1, draft.cards.p2]), b: C.total([draft.cards.b1, draft.cards.b2]) };
}

export function cardCount() {
  return SLOTS.filter((s) => draft.cards[s]).length;
}

/** A "force-" step counts only while it is the last thing done. */
function forcedSlot() {
  const last = draft.steps[draft.steps.length - 1];
  return last && last.startsWith("force-") ? last.slice(6) : null;
}

/** What comes next on the pad: the ONE place that decides it, from the
 *  rules the engine applies (the punter's rule, this table's tableau) and
 *  what the croupier said ("Next card to punter / banker"). The highlighted
 *  slot, the guidance's prompt, the two toggles and Save all read it;
 *  tests/tablet/test_prompt_parity.py compares it with tables.chemmy on
 *  every cell.
 *  slot: the slot the next card fills, or null when all cards are in;
 *  kind: "deal" | "punter_choice" (5: draw, or "Next card to banker") |
 *        "banker_choice" (an optional cell: draw, or save) | "complete";
 *  third: the punter's third-card value for the tableau, null when he
 *        stood, undefined while he has not decided. */
export function nextStep() {
  for (const s of ["p1", "b1", "p2", "b2"]) {
    if (!draft.cards[s]) return { slot: s, kind: "deal", third: undefined };
  }
  const t = twoCardTotals();
  const natural = t.p >= 8 || t.b >= 8;
  // the house's prescription turns an optional cell into a draw or a stand
  const pa = C.houseAction(C.punterAction(Math.min(t.p, 7)), S.prescriptions, "punter").action;
  let third;
  if (draft.cards.p3) third = C.point(draft.cards.p3);
  else if (natural || draft.cards.b3 || draft.steps.includes("stand") || pa === "S") third = null;
  const forced = forcedSlot();
  if (forced && !draft.cards[forced]) return { slot: forced, kind: "deal", third: third };
  if (natural || draft.cards.b3) return { slot: null, kind: "complete", third: third };
  if (third === undefined) {
    return { slot: "p3", kind: pa === "O" ? "punter_choice" : "deal", third: third };
  }
  const ba = C.houseAction(C.bankerAction(S.tableau, t.b, third), S.prescriptions,
    "banker", t.b, third).action;
  if (ba === "S") return { slot: null, kind: "complete", third: third };
  return { slot: "b3", kind: ba === "O" ? "banker_choice" : "deal", third: third };
}

export function target() {
  return nextStep().slot;
}

// ---- the pad's taps ------------------------------------------------------------

export function tapRank(r) {
  hideAlert();
  if (stopped()) return; // the pad is locked: the stop says why
  if (conflicted()) return showAlert(T.conflict_first); // and the refusal's box
  if (!target()) {
    showAlert(cardCount() >= 6 ? T.cards_full : T.all_in_more);
    return;
  }
  draft.pendingRank = r;
  render();
}

export function tapSuit(s) {
  if (!draft.pendingRank || stopped() || conflicted()) return;
  const slot = target();
  if (!slot) return;
  draft.cards[slot] = draft.pendingRank + s;
  draft.steps.push(slot);
  draft.pendingRank = null;
  hideAlert();
  render();
}

export function undo() {
  hideAlert();
  if (draft.pendingRank) {
    draft.pendingRank = null;
  } else if (draft.steps.length) {
    const last = draft.steps.pop();
    if (Object.prototype.hasOwnProperty.call(draft.cards, last)) draft.cards[last] = null;
  } else {
    showAlert(T.undo_nothing);
  }
  render();
}

/** "Next card to banker" before the punter's third card means he stands
 *  (the tableau then says whether the banker draws); otherwise, and for
 *  "Next card to punter", it deals one more card than the rules ask for
 *  (recorded as it happens, flagged for the pit boss). */
export function sendNextTo(side) {
  if (!twoCardTotals()) return;
  const slot = side === "punter" ? "p3" : "b3";
  if (draft.cards[slot]) return;
  const now = nextStep();
  hideAlert();
  if (now.slot === slot) return render();
  if (side === "banker" && now.third === undefined) draft.steps.push("stand");
  else draft.steps.push("force-" + slot);
  render();
}

// ---- the cards and the guidance as shown -----------------------------------------

export function renderCards() {
  const t = target();
  for (const s of SLOTS) {
    const slot = $("slot-" + s);
    const code = draft.cards[s];
    slot.textContent = code ? cardText(code) : s === t && draft.pendingRank ? RANK_LABEL[draft.pendingRank] : "";
    slot.className = "slot" + (s[1] === "3" ? " slot-third" : "");
    if (code) slot.classList.add("filled", "suit-" + code[1]);
    if (s === t) slot.classList.add("target");
    const base = T["slot_" + s];
    slot.setAttribute("aria-label", code ? base + ": " + cardName(code) : base);
  }
  const p = hand("p");
  const b = hand("b");
  const totals = twoCardTotals();
  let pv = p.length >= 2 ? C.total(p) : null;
  let bv = b.length >= 2 ? C.total(b) : null;
  if (totals && (totals.p >= 8 || totals.b >= 8)) {
    pv = totals.p; // after a natural a third card does not count
    bv = totals.b;
  }
  $("total-p").textContent = pv === null ? "" : String(pv);
  $("total-b").textContent = bv === null ? "" : String(bv);
  document.querySelectorAll("[data-rank]").forEach(function (k) {
    k.setAttribute("aria-pressed", k.dataset.rank === draft.pendingRank ? "true" : "false");
  });
  document.querySelectorAll("[data-suit]").forEach(function (k) {
    k.classList.toggle("armed", !!draft.pendingRank);
  });
  const four = !!totals;
  $("to-punter").disabled = !four || !!draft.cards.p3;
  $("to-banker").disabled = !four || !!draft.cards.b3;
  $("to-punter").setAttribute("aria-pressed", t === "p3" ? "true" : "false");
  $("to-banker").setAttribute("aria-pressed", t === "b3" ? "true" : "false");
  // All cards in (or the banker's free choice): Save is the next step.
  const kind = nextStep().kind;
  const ready = kind === "complete" || kind === "banker_choice";
  $("save").classList.toggle("ready", ready);
  $("save").dataset.next = ready ? "save" : "card";
  document.querySelector(".pad").classList.toggle("all-in", kind === "complete");
}

/** The coup as dealt, judged as the server will: the engine's findings and
 *  the house's (an optional cell played against its prescription). */
export function judge() {
  const v = C.evaluate(hand("p"), hand("b"), S.tableau);
  v.findings = v.findings.concat(C.houseFindings(v, S.prescriptions));
  return v;
}

export function renderGuidance() {
  const lines = [];
  const step = nextStep();
  const totals = twoCardTotals();
  if (draft.pendingRank) lines.push(["info", fmt(T.choose_suit, { rank: RANK_LABEL[draft.pendingRank] })]);
  if (totals) {
    if (totals.p >= 8 || totals.b >= 8) {
      const who = totals.p >= 8 ? "punter" : "banker";
      lines.push(["natural", fmt(T["natural_" + who], { total: who === "punter" ? totals.p : totals.b })]);
    } else {
      const pa = C.houseAction(C.punterAction(totals.p), S.prescriptions, "punter");
      lines.push(["rule", ruleText("punter", pa)]);
      const third = step.third;
      if (third === undefined) {
        lines.push(["rule", T.banker_waits]);
      } else {
        const ba = C.houseAction(C.bankerAction(S.tableau, totals.b, third),
          S.prescriptions, "banker", totals.b, third);
        const context = third === null ? T.punter_stood_on : fmt(T.against, { value: third });
        lines.push(["rule", ruleText("banker", ba) + " (" + totals.b + ", " + context + ")"]);
      }
    }
    const verdict = judge();
    if (!step.slot) {
      for (const f of verdict.findings) lines.push(["warn", findingText(f, totals)]);
    }
  }
  lines.push(["next", promptText(step)]);
  const g = $("guidance");
  g.replaceChildren(...lines.map(([kind, text]) => el("p", { class: "g-" + kind, text: text })));
}
