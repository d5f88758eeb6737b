/* Saving a coup: the stakes and cards checked as the server will (a stake it
 * would refuse is named first; a finding asks "record as it happened?"),
 * then the coup goes into the queue BEFORE it is sent, with its provisional
 * result, and the pad is ready for the next one.
 */
import * as C from "../chemmy.js";
import { clearCards, hand, judge, twoCardTotals } from "./cards.js";
import { $, el, hideAlert, showAlert } from "./dom.js";
import { queue, saveQueue, uuid } from "./queue.js";
import { provisional, showProvisional } from "./result.js";
import { flush, paused } from "./send.js";
import { stakeProblem } from "./stakes.js";
import { draft, render, S, stopped, T, URLS, USER, USER_ID, USER_NAME, view } from "./state.js";
import { findingText, fmt, REFUSAL } from "./words.js";

let pendingVerdict = null; // the coup the confirm dialog asks about

export function save() {
  hideAlert();
  // A refusal waits for the croupier's answer: Save says so, never nothing.
  if (paused) return showAlert(T.conflict_first);
  // House rule hold on error: a finding stopped play at this shoe (named).
  if (stopped()) return showAlert(REFUSAL.held(view.heldBy, view.heldCodes));
  if (!view.turnOpen) return showAlert(T.no_turn);
  if (!draft.stakes.length) return showAlert(T.need_stake);
  if (!twoCardTotals()) return showAlert(T.need_cards);
  const problem = stakeProblem();
  if (problem) {
    draft.selected = problem.index;
    render();
    return showAlert(problem.text);
  }
  if (draft.pendingRank) draft.pendingRank = null;
  const verdict = judge();
  const totals = twoCardTotals();
  const warnings = verdict.findings.map((f) => findingText(f, totals));
  if (view.cardsLeft < 7) warnings.push(fmt(T.shoe_empty, { n: view.cardsLeft }));
  if (warnings.length) {
    pendingVerdict = verdict;
    // a house rule played against, and no tableau finding: say which
    const house = verdict.findings.length &&
      verdict.findings.every((f) => f.code === "house_choice");
    $("confirm-title").textContent = house ? T.confirm_house : T.confirm_tableau;
    const ul = $("confirm-findings");
    ul.replaceChildren(...warnings.map((w) => el("li", { text: w + " " + T.record_as_happened })));
    $("confirm").showModal();
    $("confirm-record").focus();
    return;
  }
  commit(verdict);
}

/** The confirm dialog's answer: record the coup as it happened, or not. */
export function confirmed(record) {
  $("confirm").close();
  if (record && pendingVerdict) commit(pendingVerdict);
  pendingVerdict = null;
}

function commit(verdict) {
  const body = {
    punter: hand("p"),
    banker: hand("b"),
    stakes: draft.stakes.map((s) => {
      const out = { amount: C.centsToString(s.amount), announcement: s.announcement };
      if (s.seat !== null) out.seat = s.seat;
      else out.standing = s.standing;
      // The player's card number, when the croupier entered one (optional).
      if (s.player_card) out.player_card = s.player_card;
      return out;
    }),
    expected_seq: view.nextSeq,
  };
  const at = new Date().toISOString();
  // Who entered it travels with it: the server refuses it from anyone else.
  if (USER_ID !== null) body.entered_by = USER_ID;
  body.entered_at = at;
  const entry = {
    key: uuid(),
    shoe: S.shoe.id,
    url: URLS.record,
    body: body,
    at: at,
    user: USER,
    user_id: USER_ID,
    name: USER_NAME,
    provisional: provisional(verdict),
  };
  // First of all, the coup is on the tablet.
  const q = queue();
  q.push(entry);
  saveQueue(q);
  showProvisional(entry);
  // Ready for the next coup: a tie leaves the stakes on the table, unless
  // the house returns them (house rule tie_rule).
  if (verdict.outcome !== "tie" || S.rules.tie_rule === "returned") {
    draft.stakes = [];
    draft.standingCount = 0;
  }
  draft.selected = null;
  clearCards();
  render();
  flush();
}
