/* The queue of coups (localStorage: survives a reload and a dead battery).
 *
 * A coup is written here BEFORE it is sent (save.js). Each carries an
 * Idempotency-Key made here and the expected_seq it should get; send.js
 * sends the queue in order, so a retry after a lost answer returns the same
 * coup (200) and a second tablet that got there first answers 409 ("the
 * shoe moved on").
 *
 * Each coup keeps who entered it (user id, time on the tablet) and is sent
 * only while he is signed in: after a Lock and a relief's unlock, the coups
 * the first croupier left wait for him (or for a pit boss, who accepts them
 * on his behalf with a reason: accept.js), and the relief's own coups queue
 * behind them, in dealing order. The server refuses a coup whose author is
 * not the sender.
 */
import * as C from "../chemmy.js";
import { bridged, conflicted, S, USER, USER_ID, USER_NAME } from "./state.js";

const QUEUE_KEY = "chemmy.tablet.queue";
const DEVICE_KEY = "chemmy.tablet.device";

export function uuid() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return [h.slice(0, 8), h.slice(8, 12), h.slice(12, 16), h.slice(16, 20), h.slice(20)].join("-");
}

export function device() {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = "tablet-" + uuid().slice(0, 8);
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

export function queue() {
  try {
    return JSON.parse(localStorage.getItem(QUEUE_KEY) || "[]");
  } catch (e) {
    return [];
  }
}

export function saveQueue(q) {
  localStorage.setItem(QUEUE_KEY, JSON.stringify(q));
}

export function mine(q) {
  return q.filter((e) => e.shoe === S.shoe.id);
}

export function removeEntry(key) {
  saveQueue(queue().filter((e) => e.key !== key));
}

// ---- who entered each coup ---------------------------------------------------

export function hasId(e) {
  return e.user_id !== undefined && e.user_id !== null;
}

export function isMine(e) {
  if (hasId(e) && USER_ID !== null) return e.user_id === USER_ID;
  return e.user === USER; // queued before coups kept their author's id
}

export function sameAuthor(a, b) {
  return hasId(a) && hasId(b) ? a.user_id === b.user_id : a.user === b.user;
}

export function authorName(e) {
  return e.name || e.user;
}

/** The coups at the head of the queue that another croupier entered: they
 *  hold the queue (a shoe's coups are stored in dealing order). */
export function heldRun() {
  const q = queue();
  if (!q.length || isMine(q[0])) return [];
  const run = [];
  for (const e of q) {
    if (!sameAuthor(e, q[0])) break;
    run.push(e);
  }
  return run;
}

/** This croupier's own coups queued before their author's id was kept. */
export function adoptOwnEntries() {
  if (USER_ID === null) return;
  const q = queue();
  let changed = false;
  for (const e of q) {
    if (!hasId(e) && e.user === USER) {
      e.user_id = USER_ID;
      e.name = USER_NAME;
      e.body.entered_by = USER_ID;
      changed = true;
    }
  }
  if (changed) saveQueue(q);
}

// ---- the table as it stands ---------------------------------------------------

/** The table as it stands: the server's state plus this shoe's coups that
 *  are still waiting (their figures are provisional, from the same rules). */
export function derive() {
  const v = {
    nextSeq: S.shoe.next_seq,
    cardsLeft: S.shoe.cards_left,
    turnOpen: !!(S.turn && S.turn.open),
    bankerSeat: S.turn ? S.turn.seat : null,
    bank: S.turn ? C.toCents(S.turn.bank) : 0,
    suivi: S.turn ? S.turn.suivi_seat : null,
    // house rule tie_rule "stay": what a tie left on the table (cents)
    tied: S.turn && S.turn.tied_stakes ? S.turn.tied_stakes.map((t) => ({
      seat: t.seat, standing: t.standing || null, amount: C.toCents(t.amount),
    })) : null,
    nextBanker: S.next_banker_seat,
    waiting: 0,
    // house rule hold on error: the coup that stopped play, and its findings
    heldBy: S.shoe.held_by_seq || null,
    heldFindings: S.shoe.held ? S.shoe.held.findings : [],
    heldCodes: S.shoe.held ? S.shoe.held.codes || [] : [],
  };
  // recorded, but the server's state that shows it is still on its way
  const just = bridged();
  if (just && just.body.expected_seq === v.nextSeq - 1) {
    v.cardsLeft -= just.body.punter.length + just.body.banker.length;
    follow(v, just);
  }
  // A refused coup never happened: while the refusal waits for the
  // croupier, the table is the server's, whatever is queued behind it.
  const truth = conflicted();
  for (const e of mine(queue())) {
    if (e.body.expected_seq < v.nextSeq) continue; // recorded, answer lost
    v.waiting += 1;
    if (truth) continue;
    v.nextSeq = e.body.expected_seq + 1;
    v.cardsLeft -= e.body.punter.length + e.body.banker.length;
    follow(v, e);
  }
  return v;
}

/** The table after coup ``e``, from its provisional figures. */
function follow(v, e) {
  const p = e.provisional;
  v.bank = p.bank_after;
  v.suivi = p.suivi;
  v.tied = p.tied || null;
  if (p.holds && !v.heldBy) {
    v.heldBy = e.body.expected_seq; // the server will hold it too
    v.heldFindings = p.holds;
    v.heldCodes = p.hold_codes || [];
  }
  if (p.turn_ends) {
    v.turnOpen = false;
    v.nextBanker = p.next_banker_seat;
  }
}
