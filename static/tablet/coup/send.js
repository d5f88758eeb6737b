/* Sending the queue: in order, each coup with its Idempotency-Key, only the
 * signed-in croupier's own (queue.js); the server's answer replaces the
 * provisional result, and the state is asked again. A refusal or "the shoe
 * moved on" (409) pauses the queue until the croupier says what to do:
 * send again after the latest coup, back to the pad, or discard.
 */
import * as C from "../chemmy.js";
import { clearCards } from "./cards.js";
import { $, showAlert } from "./dom.js";
import { device, isMine, mine, queue, removeEntry, saveQueue } from "./queue.js";
import { fromServer, fromSummary, resultPanel } from "./result.js";
import { adopt, bridge, draft, render, S, setConflict, T, URLS } from "./state.js";
import { cardText, fmt, REFUSAL, resultText } from "./words.js";

export let paused = null; // {kind, entry} while a conflict waits for the croupier
let flushing = false;

export function csrf() {
  const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (m) return decodeURIComponent(m[1]);
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

async function send(entry) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), 15000);
  try {
    return await fetch(entry.url, {
      method: "POST",
      credentials: "same-origin",
      signal: ctrl.signal,
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRFToken": csrf(),
        "Idempotency-Key": entry.key,
        "X-Device": device(),
      },
      body: JSON.stringify(entry.body),
    });
  } finally {
    clearTimeout(timer);
  }
}

export async function flush() {
  if (flushing || paused) return;
  if (navigator.onLine === false) return render(); // the "online" event resumes
  flushing = true;
  try {
    for (;;) {
      const q = queue();
      if (!q.length || paused) break;
      const entry = q[0];
      // Another croupier's coup waits for him (renderHeld says so), and so
      // does everything behind it: the shoe's coups go in dealing order.
      if (!isMine(entry)) break;
      let r;
      try {
        r = await send(entry);
      } catch (err) {
        break; // offline or timed out: the coup waits, nothing is lost
      }
      if (r.status === 200 || r.status === 201) {
        const coup = await r.json();
        removeEntry(entry.key);
        await recorded(entry, coup);
        continue;
      }
      let data = {};
      try {
        data = await r.json();
      } catch (e) {
        data = {};
      }
      if (r.status >= 500 || r.status === 429) break; // try again later
      if (r.status === 403 && data.entered_by) break; // not his: it waits
      if (r.status === 401 || (r.status === 403 && !data.session)) {
        showAlert(T.signed_out);
        break;
      }
      await pauseFor({
        kind: r.status === 409 && data.expected_seq ? "moved" : "refused",
        entry: entry,
        data: data,
        status: r.status,
      });
      break;
    }
  } finally {
    flushing = false;
    render();
  }
}

/** The server's state of the shoe, adopted. A closed shoe sends the page
 *  to the session, unless ``stay``: a refusal is read first (leaveIfClosed
 *  after the croupier's answer). */
export async function refreshState(stay) {
  try {
    const r = await fetch(URLS.state, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!r.ok) return false;
    const fresh = await r.json();
    adopt(fresh);
    if (!stay) leaveIfClosed();
    return true;
  } catch (e) {
    return false;
  }
}

export async function recorded(entry, coup) {
  if (coup.shoe === S.shoe.id) {
    // Keep the server's answer; a later waiting coup's provisional panel
    // would otherwise be replaced by an older recorded one.
    const later = mine(queue()).length;
    if (!later) resultPanel(fromServer(coup));
    if (coup.seq >= S.shoe.next_seq && entry && entry.provisional) {
      bridge(Object.assign({}, entry, { body: Object.assign({}, entry.body, { expected_seq: coup.seq }) }));
    }
    S.shoe.next_seq = Math.max(S.shoe.next_seq, coup.seq + 1);
  }
  document.body.dispatchEvent(new CustomEvent("coup-recorded"));
  await refreshState();
}

// ---- a conflict: the queue waits for the croupier ---------------------------------

/** Pause the queue on a conflict and say so (accept.js: the shoe moved on). */
export async function pauseFor(conflict) {
  paused = conflict;
  setConflict(conflict);
  await showConflict();
}

function leaveIfClosed() {
  if (!S.shoe.open || !S.session.open) window.location.assign(URLS.session);
}

/** The result panel as the server holds the shoe: its last coup, or
 *  nothing before the first. A refused coup's provisional result goes. */
function serverResult() {
  if (S.last_coup) resultPanel(fromSummary(S.last_coup));
  else $("result").replaceChildren();
}

async function showConflict() {
  const box = $("conflict");
  const p = paused;
  const resend = $("conflict-resend");
  const onlyOne = mine(queue()).length === 1;
  $("conflict-edit").hidden = !onlyOne;
  if (p.kind === "moved") {
    await refreshState();
    $("conflict-text").textContent = T.moved_on;
    const last = S.last_coup;
    $("conflict-coup").textContent = last
      ? fmt(T.moved_on_detail, {
          seq: last.seq,
          user: last.entered_by,
          punter: last.punter_cards.map(cardText).join(" "),
          banker: last.banker_cards.map(cardText).join(" "),
          outcome: resultText(last.outcome, last.punter_total, last.banker_total),
        })
      : "";
    if (last) {
      resultPanel(fromSummary(last));
    }
    resend.hidden = false;
    resend.textContent = T.resend;
  } else {
    // The coup never happened: the screen goes back to what the server
    // holds (the bank, the banker, the shoe), then says why and what now.
    await refreshState(true);
    serverResult();
    const d = p.data || {};
    const said = REFUSAL.words(p.status, d, p.entry.body);
    $("conflict-text").textContent = said.text;
    $("conflict-text").dataset.refusal = said.key;
    const n = mine(queue()).length;
    $("conflict-coup").textContent = onlyOne
      ? T.refused_what_now
      : fmt(T.refused_what_now_many, { n: n });
    resend.hidden = true;
  }
  $("conflict-discard").textContent = T.discard;
  box.hidden = false;
  document.body.dispatchEvent(new CustomEvent("coup-recorded"));
  render();
}

function closeConflict() {
  $("conflict").hidden = true;
  paused = null;
  setConflict(null);
}

export function resendAfter() {
  // Number this shoe's waiting coups after the latest one and send them.
  const q = queue();
  let seq = S.shoe.next_seq;
  for (const e of q) if (e.shoe === S.shoe.id) e.body.expected_seq = seq++;
  saveQueue(q);
  closeConflict();
  flush();
}

export function discard() {
  saveQueue(queue().filter((e) => e.shoe !== S.shoe.id));
  closeConflict();
  serverResult(); // the discarded coup's provisional result goes with it
  render();
  leaveIfClosed();
}

export function backToPad() {
  const q = queue();
  const entry = mine(q)[0];
  if (!entry) return closeConflict();
  saveQueue(q.filter((e) => e.key !== entry.key));
  closeConflict();
  serverResult(); // it is on the pad again, not waiting
  clearCards();
  const b = entry.body;
  ["p", "b"].forEach((side) => {
    (side === "p" ? b.punter : b.banker).forEach((code, i) => {
      const slot = side + (i + 1);
      draft.cards[slot] = code;
      draft.steps.push(slot);
    });
  });
  draft.stakes = b.stakes.map((s) => ({
    seat: s.seat === undefined ? null : s.seat,
    standing: s.standing === undefined ? null : s.standing,
    amount: C.toCents(s.amount),
    announcement: s.announcement,
    player_card: s.player_card || "",
  }));
  draft.selected = null;
  render();
}
