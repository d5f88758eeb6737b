/* The coup-entry screen: stakes on the table map, the card pad, live
 * guidance from the table's own tableau, and a queue that never loses a coup.
 *
 * ES modules, served as they are (no build step), one concern each; a
 * module imports only the ones below it here (tests/tablet/test_modules.py
 * LAYERS, README "Layout"):
 *
 *   coup.js     this file: wires the page's buttons and keys, starts it
 *   keys.js     the USB keypad
 *   accept.js   a pit boss accepts coups queued by another croupier
 *   save.js     checks a coup, queues it, readies the pad
 *   send.js     sends the queue in order; a conflict pauses it
 *   screen.js   draws the screen (render)
 *   result.js   the result panel, provisional while a coup waits
 *   stakes.js   the stakes, the coverage, a stake the server would refuse
 *   cards.js    the cards: where the next one goes (nextStep), the guidance
 *   queue.js    the queue in localStorage, who entered each coup, derive()
 *   words.js    strings, amounts, cards, results, findings, refusals
 *   dom.js      $, el and the alert line
 *   state.js    the server's state, the strings, the coup being entered
 *   ../chemmy.js, ../refusals.js   the rules and the refusals (pure)
 *
 * The page loads this file with <script type="module"> after pad.js (a
 * classic script: the floor's correction page shares it). Every module
 * is in the service worker's list (tables/tablet/coup.py ASSETS), so the
 * screen reloads while the Wi-Fi is down; the same test holds the list to
 * the imports.
 */
import * as C from "./chemmy.js";
import { cancelAccept, openAccept, sendAccept } from "./coup/accept.js";
import { clearCards, sendNextTo, tapRank, tapSuit, undo } from "./coup/cards.js";
import { $, armLock, hideAlert, isLockArmed, showAlert } from "./coup/dom.js";
import { keypad } from "./coup/keys.js";
import { adoptOwnEntries, derive, isMine, mine, queue } from "./coup/queue.js";
import { fromSummary, resultPanel, showProvisional } from "./coup/result.js";
import { confirmed, save } from "./coup/save.js";
import { render } from "./coup/screen.js";
import { backToPad, discard, flush, paused, refreshState, resendAfter } from "./coup/send.js";
import {
  addStanding, announce, removeStake, restoreTiedStakes, setAmount, setCardNo, tapSeat,
} from "./coup/stakes.js";
import { draft, onRender, S, setView, stopped, T } from "./coup/state.js";
import { findingText, fmt, REFUSAL, resultText } from "./coup/words.js";

onRender(render);
setView(derive());
restoreTiedStakes();

// ---- wiring ------------------------------------------------------------------------

document.querySelectorAll(".seat").forEach((b) =>
  b.addEventListener("click", () => tapSeat(Number(b.dataset.seat)))
);
document.querySelectorAll("[data-amount]").forEach((b) =>
  b.addEventListener("click", () => setAmount(C.toCents(b.dataset.amount)))
);
document.querySelectorAll("[data-announce]").forEach((b) =>
  b.addEventListener("click", () => announce(b.dataset.announce))
);
// the shared pad (pad.js); where a card goes is decided in cards.js (nextStep)
window.ChemmyPad.bind(document.querySelector(".pad"), {
  rank: tapRank,
  suit: tapSuit,
});
$("add-standing").addEventListener("click", addStanding);
$("remove-stake").addEventListener("click", removeStake);
$("stake-card").addEventListener("input", function () {
  setCardNo(this.value);
});
$("stake-card").addEventListener("change", function () {
  setCardNo(this.value);
  this.value = draft.selected === null ? "" : draft.stakes[draft.selected].player_card || "";
});
$("set-amount").addEventListener("click", function () {
  const cents = C.toCents($("other-amount").value);
  if (cents) {
    setAmount(cents);
    $("other-amount").value = "";
  }
});
$("other-amount").addEventListener("keydown", function (ev) {
  if (ev.key === "Enter") {
    ev.preventDefault();
    $("set-amount").click();
  }
});
$("undo").addEventListener("click", undo);
$("to-punter").addEventListener("click", () => sendNextTo("punter"));
$("to-banker").addEventListener("click", () => sendNextTo("banker"));
$("save").addEventListener("click", save);
$("confirm-record").addEventListener("click", () => confirmed(true));
$("confirm-cancel").addEventListener("click", () => confirmed(false));
$("conflict-resend").addEventListener("click", resendAfter);
$("conflict-discard").addEventListener("click", discard);
$("conflict-edit").addEventListener("click", backToPad);
document.addEventListener("keydown", keypad);

// Locking with coups of one's own still queued: they stay on the tablet
// under his name (sent when he unlocks again, or a pit boss accepts them);
// the first tap says so, a second one locks (dom.js armLock).
document.querySelectorAll("[data-lock-form]").forEach(function (f) {
  f.addEventListener("submit", function (ev) {
    const n = queue().filter(isMine).length;
    if (n && !isLockArmed()) {
      ev.preventDefault();
      showAlert(n === 1 ? T.lock_waiting_one : fmt(T.lock_waiting_many, { n: n }));
      armLock();
    }
  });
});

// a pit boss accepts the held coups on their author's behalf
$("held-accept").addEventListener("click", openAccept);
$("accept-send").addEventListener("click", sendAccept);
$("accept-cancel").addEventListener("click", cancelAccept);

window.addEventListener("online", () => {
  render();
  flush();
});
window.addEventListener("offline", render);
setInterval(function () {
  if (queue().length && !paused) flush();
  // a stopped shoe: unlock as soon as the pit boss has released it
  else if (stopped() && navigator.onLine) refreshState().then(render);
}, 5000);

// On load: show the last coup, then send anything a reload left waiting.
adoptOwnEntries();
const waiting = mine(queue()).filter((e) => e.body.expected_seq >= S.shoe.next_seq);
if (waiting.length) showProvisional(waiting[waiting.length - 1]);
else if (S.last_coup) {
  resultPanel(fromSummary(S.last_coup));
}
render();
document.body.dataset.wired = ""; // the screen shows now (tablet.css)
flush();

// For the tests (and a curious pit boss's console): the page's own wording,
// and the rules as the page plays them.
window.Chemmy = C;
window.ChemmyTablet = {
  queue: queue,
  render: render,
  flush: flush,
  findingText: findingText,
  resultText: resultText,
  refusalText: function (status, data, body) {
    return REFUSAL.words(status, data, body);
  },
  clearPad: function () {
    clearCards();
    hideAlert();
    render();
  },
  tableau: function () {
    return S.tableau;
  },
};
