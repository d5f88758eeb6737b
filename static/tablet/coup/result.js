/* The last coup's result panel: the server's answer (fromServer), the
 * state's last coup after a reload (fromSummary), or the provisional figures
 * of a coup still waiting in the queue, worked out here by the same rules
 * (chemmy.js cover and settle) and marked as such.
 */
import * as C from "../chemmy.js";
import { hand, twoCardTotals } from "./cards.js";
import { $, el } from "./dom.js";
import { draft, S, T, URLS, view } from "./state.js";
import { engineStakes, maximumBank } from "./stakes.js";
import { findingText, fmt, money, resultText, signed, signedCents, stakeName } from "./words.js";

/** Where the bank went (docs/rules.md, "Coverage and the garage"): the
 *  part of the bank no stake covered is the garage, withdrawn by the
 *  banker; only the covered part was at risk. Without it a bank of 2,000
 *  carried forward as 975 after a banker win reads as a loss. */
function garageNote(r) {
  if (r.garage === null || r.garage === undefined || r.garage <= 0) return null;
  const v = { garage: money(r.garage), after: money(r.bank_after) };
  if (r.outcome === "banker") {
    return fmt(T.garage_note_banker, Object.assign(v, { total: money(r.bank_after + r.garage) }));
  }
  if (r.outcome === "punter") return fmt(T.garage_note_punter, v);
  return fmt(T.garage_note_tie, v);
}

export function resultPanel(r) {
  // r: {seq, outcome, punter_total, banker_total, bank_before, covered,
  //     garage, commission, bank_after, next_banker_seat, cards_left,
  //     stakes:[{label, payout}], findings, by, provisional}; money in cents
  const head = fmt(T.coup_n, { n: r.seq }) + " \u00b7 " +
    resultText(r.outcome, r.punter_total, r.banker_total);
  const box = el("div", { class: "result-box outcome-" + r.outcome, "data-seq": String(r.seq), "data-state": r.provisional ? "waiting" : "recorded" });
  box.append(el("h3", { text: head }));
  if (r.corrected) box.append(el("p", { class: "corrected", text: r.corrected }));
  if (r.provisional) box.append(el("p", { class: "provisional", text: T.provisional }));
  if (r.outcome === "tie") {
    const stay = S.rules.tie_rule !== "returned";
    box.append(el("p", { class: "tie-note", text: stay ? T.tie_stakes_stay : T.tie_stakes_returned }));
  }
  if (r.findings && r.findings.length) {
    const ul = el("ul", { class: "findings", "aria-label": T.findings });
    r.findings.forEach((f) => ul.append(el("li", { text: f })));
    box.append(el("p", { class: "findings-h", text: T.findings }), ul);
  }
  const dl = el("dl");
  const add = (dt, dd, cls) => {
    dl.append(el("dt", { text: dt }), el("dd", { text: dd, class: cls || "" }));
  };
  const known = (x) => x !== null && x !== undefined;
  if (known(r.bank_before)) add(T.bank_before, money(r.bank_before));
  if (known(r.covered)) add(T.covered_at_risk, money(r.covered));
  if (known(r.garage)) add(T.garage_withdrawn, money(r.garage));
  add(T.commission, money(r.commission));
  add(T.bank_carried, money(r.bank_after), "carried");
  add(T.cards_left, String(r.cards_left), r.cards_left < 7 ? "warn" : "");
  box.append(dl);
  const note = garageNote(r);
  if (note) box.append(el("p", { class: "garage-note", text: note }));
  if (r.stakes.length) {
    const ul = el("ul", { class: "payouts", "aria-label": T.payouts });
    r.stakes.forEach((s) =>
      ul.append(el("li", {}, [el("span", { text: s.label }), el("span", { text: signed(s.payout) })]))
    );
    box.append(el("p", { class: "payouts-h", text: T.payouts }), ul);
  }
  if (r.cards_left < 7) box.append(el("p", { class: "warn", text: fmt(T.cards_low, { n: r.cards_left }) }));
  if (r.by && r.acceptedBy) {
    box.append(el("p", { class: "muted", text: fmt(T.accepted_line, { user: r.by, by: r.acceptedBy }) }));
  } else if (r.by) {
    box.append(el("p", { class: "muted", text: fmt(T.recorded_by, { user: r.by }) }));
  }
  // The bank lost: who takes it and the way on, outside the box (which
  // scrolls when a flagged coup makes it long): always on the screen.
  const wayOn = [];
  if (r.outcome === "punter" && r.next_banker_seat) {
    wayOn.push(el("p", { class: "lost", text: fmt(T.bank_lost, { n: r.next_banker_seat }) }));
    if (!r.provisional) {
      wayOn.push(el("a", { class: "btn btn-primary btn-big", href: URLS.session, text: T.open_next_bank }));
    }
  }
  $("result").replaceChildren(box);
  if (wayOn.length) $("result").append(el("div", { class: "way-on" }, wayOn));
}

const centsOrNull = (x) => (x === null || x === undefined ? null : C.toCents(x));

/** The state's last_coup (tables/tablet/state.py coup_summary). */
export function fromSummary(last) {
  return {
    seq: last.seq,
    outcome: last.outcome,
    punter_total: last.punter_total,
    banker_total: last.banker_total,
    bank_before: centsOrNull(last.bank_before),
    covered: centsOrNull(last.covered),
    garage: centsOrNull(last.garage),
    commission: C.toCents(last.commission),
    bank_after: C.toCents(last.bank_after),
    next_banker_seat: last.next_banker_seat,
    cards_left: last.cards_left,
    stakes: [],
    findings: [],
    by: last.entered_by,
    provisional: false,
    // the latest revision of a coup a pit boss corrected, said so
    corrected: last.revision > 1
      ? fmt(T.corrected_line, { n: last.revision, who: last.corrected_by || "" })
      : null,
  };
}

export function fromServer(coup) {
  const totals = { p: coup.punter_total, b: coup.banker_total };
  return {
    seq: coup.seq,
    outcome: coup.outcome,
    punter_total: coup.punter_total,
    banker_total: coup.banker_total,
    bank_before: centsOrNull(coup.bank_before),
    covered: centsOrNull(coup.covered),
    garage: centsOrNull(coup.garage),
    commission: C.toCents(coup.commission),
    bank_after: C.toCents(coup.bank_after),
    next_banker_seat: coup.next_banker_seat,
    cards_left: coup.cards_left,
    stakes: coup.stakes.map((s) => ({
      label: s.seat !== null ? fmt(T.payout_seat, { n: s.seat }) : s.standing,
      payout: signedCents(s.payout),
    })),
    findings: coup.findings.map((f) => findingText(Object.assign({}, f.detail || {}, f), totals)),
    by: coup.entered_by,
    acceptedBy: coup.accepted_by,
    provisional: false,
  };
}

export function provisional(verdict) {
  const also = S.rules.hold_warnings || [];
  const holding = S.rules.hold_on_error
    ? verdict.findings.filter((f) => f.severity === "critical" || also.includes(f.code))
    : [];
  const cov = C.cover(engineStakes(), view.bank, view.bankerSeat, S.table.seats,
    S.rules.cover_rule, maximumBank());
  const st = C.settle(verdict.outcome, cov, S.rules.commission_rate,
    C.toCents(S.rules.commission_unit), S.rules.commission_rounding);
  let tied = null;
  if (verdict.outcome === "tie" && S.rules.tie_rule !== "returned") {
    tied = draft.stakes
      .map((s, i) => ({ seat: s.seat, standing: s.standing, amount: cov.stakes[i].covered }))
      .filter((t) => t.amount > 0);
    if (!tied.length) tied = null;
  }
  let suivi = null;
  if (verdict.outcome === "banker" && cov.punter_index !== null) {
    const holder = draft.stakes[cov.punter_index];
    if (holder.announcement === "banco_solo" || holder.announcement === "suivi") suivi = holder.seat;
  }
  const totals = twoCardTotals();
  return {
    outcome: verdict.outcome,
    punter_total: verdict.punter_total,
    banker_total: verdict.banker_total,
    bank_before: view.bank,
    covered: cov.covered,
    garage: cov.garage,
    commission: st.commission,
    bank_after: st.bank_after,
    turn_ends: st.turn_ends,
    suivi: suivi,
    tied: tied,
    next_banker_seat: st.turn_ends ? (view.bankerSeat % S.table.seats) + 1 : null,
    cards_left: view.cardsLeft - hand("p").length - hand("b").length,
    stakes: draft.stakes.map((s, i) => ({ label: stakeName(s), payout: st.payouts[i] })),
    findings: verdict.findings.map((f) => findingText(f, totals)),
    // house rule hold on error: the findings that will stop play (the
    // tablet stops at once, offline too; the server's state confirms it)
    holds: holding.length ? holding.map((f) => findingText(f, totals)) : null,
    hold_codes: holding.length ? holding.map((f) => f.code) : null,
  };
}

export function showProvisional(entry) {
  resultPanel(Object.assign({ seq: entry.body.expected_seq, provisional: true }, entry.provisional));
}
