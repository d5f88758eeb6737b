/* Drawing the coup screen from the state: the bar, the stakes (stakes.js),
 * the cards and the guidance (cards.js), the network line, the coups held
 * for another croupier and a shoe whose play is stopped. coup.js registers
 * render() here as the state's (state.js onRender).
 */
import { renderCards, renderGuidance } from "./cards.js";
import { $, el } from "./dom.js";
import { authorName, derive, hasId, heldRun, queue } from "./queue.js";
import { conflicted, draft, S, setView, stopped, T, URLS, view } from "./state.js";
import { renderSeats, renderStakeLines } from "./stakes.js";
import { fmt } from "./words.js";

export function render() {
  stopLock(false);
  setView(derive());
  renderBar();
  renderSeats();
  renderStakeLines();
  renderCards();
  renderGuidance();
  renderNet();
  renderHeld();
  renderStopped();
  // A refusal waits for the croupier's answer: nothing keyed now could go
  // anywhere (the box on the right says what to do).
  document.body.classList.toggle("coup-refused", conflicted());
  if (conflicted()) {
    stopLock(true);
    $("guidance").replaceChildren(el("p", { class: "g-warn", text: T.conflict_first }));
  }
}

/** Every button and field of the stakes and the pad, disabled while play is
 *  stopped; what this disabled (and only that) is enabled again after. */
function stopLock(on) {
  const all = document.querySelectorAll(
    ".col-stakes button, .col-stakes input, .col-cards button");
  all.forEach(function (b) {
    if (on) {
      if (!b.disabled) {
        b.disabled = true;
        b.dataset.stopLocked = "1";
      }
    } else if (b.dataset.stopLocked) {
      b.disabled = false;
      delete b.dataset.stopLocked;
    }
  });
}

function renderStopped() {
  const box = $("stopped");
  document.body.classList.toggle("play-stopped", stopped());
  if (!stopped()) {
    box.hidden = true;
    return;
  }
  $("stopped-text").textContent = fmt(T.stopped, { n: view.heldBy });
  $("stopped-findings").replaceChildren(
    ...(view.heldFindings || []).map((f) => el("li", { text: f })));
  box.hidden = false;
  stopLock(true);
}

function renderBar() {
  $("bar-seq").textContent = fmt(T.coup_n, { n: view.nextSeq });
  $("bar-left").textContent = fmt(T.cards_left_bar, { n: view.cardsLeft });
  $("bar-left").classList.toggle("warn", view.cardsLeft < 7);
  const pass = $("pass-form");
  if (pass) {
    pass.hidden = !(view.turnOpen && S.turn && S.turn.coups > 0 && !view.waiting);
    if (S.turn) pass.action = URLS.pass_template.replace("/0/", "/" + S.turn.id + "/");
  }
  document.body.classList.toggle("no-turn", !view.turnOpen);
  $("remove-stake").disabled = draft.selected === null;
}

function renderNet() {
  const n = view.waiting + queue().filter((e) => e.shoe !== S.shoe.id).length;
  const net = $("net");
  let text;
  if (n > 0) text = n === 1 ? T.waiting_one : fmt(T.waiting_many, { n: n });
  else text = navigator.onLine ? T.online : T.offline;
  if (n > 0 && !navigator.onLine) text += " \u00b7 " + T.offline;
  net.textContent = text;
  net.className = "net" + (n > 0 ? " net-waiting" : "") + (navigator.onLine ? "" : " net-off");
}

function renderHeld() {
  const run = heldRun();
  const box = $("held");
  if (!run.length) {
    box.hidden = true;
    return;
  }
  const name = authorName(run[0]);
  $("held-text").textContent =
    run.length === 1
      ? fmt(T.held_one, { name: name })
      : fmt(T.held_many, { n: run.length, name: name });
  $("held-behind").textContent = T.held_behind;
  $("held-behind").hidden = false;
  const accept = $("held-accept");
  accept.textContent = fmt(T.held_accept, { name: name });
  accept.hidden = !hasId(run[0]); // the server needs the author's id
  box.hidden = false;
}
