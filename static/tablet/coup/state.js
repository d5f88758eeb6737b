/* The coup screen's state: what the server said about this shoe (the page's
 * json_script "tablet-state", or a later copy kept on the tablet), the
 * page's strings (json_script "tablet-strings": js_strings() of
 * tables/tablet/state.py, in the croupier's language), who is signed in,
 * the table as it stands (view) and the coup being entered (draft).
 *
 * Every module of the screen reads it and none draws the whole screen
 * itself: render() asks screen.js to (coup.js registers it with onRender),
 * so the imports run one way, from coup.js down to this module.
 */
import * as C from "../chemmy.js";

const json = (id) => JSON.parse(document.getElementById(id).textContent);

// The server's latest state of this shoe, as the page last heard it
// (refreshState). Offline, a reload gets the service worker's kept copy of
// the page, which can be older: a tie's stakes, the bank and the last coup
// recorded since would be lost with it. Removed when the tablet locks
// (tablet.js).
const STATE_KEY = "chemmy.tablet.state";
export let S = json("tablet-state");
export const T = json("tablet-strings");
export const URLS = S.urls;
export const USER = S.user;
export const USER_ID = S.user_id === undefined ? null : S.user_id;
export const USER_NAME = S.user_name || USER;
export const LANG = S.language || document.documentElement.lang || "en";
export const SLOTS = ["p1", "b1", "p2", "b2", "p3", "b3"];

// ---- the shoe's state, kept on the tablet ---------------------------------

function keptState() {
  try {
    const kept = JSON.parse(localStorage.getItem(STATE_KEY) || "null");
    return kept && kept.shoe && kept.shoe.id === S.shoe.id ? kept : null;
  } catch (e) {
    return null;
  }
}

function keepState(fresh) {
  try {
    localStorage.setItem(STATE_KEY, JSON.stringify(fresh));
  } catch (e) {
    /* storage full: the queue matters more, and the page still works */
  }
}

/** Whether the server said `a` after `b` (state.py as_of, its clock). */
function later(a, b) {
  const ta = Date.parse(a || "");
  const tb = Date.parse(b || "");
  return Number.isFinite(ta) && (!Number.isFinite(tb) || ta > tb);
}

/** The server's newer state: the page's from now on, and kept. */
export function adopt(fresh) {
  S = Object.assign({}, S, fresh);
  keepState(fresh);
  justRecorded = null;
}

// A coup the server has just recorded, out of the queue, whose effects (the
// bank, who may call suivi, a tie's stakes, the turn's end) its state does
// not show until refreshState's answer: derive() keeps the coup's
// provisional figures until then, so that a croupier who taps at once does
// not act on the table as it stood before that coup.
let justRecorded = null;
export function bridge(entry) {
  justRecorded = entry;
}
export function bridged() {
  return justRecorded;
}

(function adoptKeptState() {
  const kept = keptState();
  if (kept && later(kept.as_of, S.as_of)) S = Object.assign({}, S, kept);
})();

// ---- the table as it stands, and the coup being entered ---------------------

// The server's state plus this shoe's coups still waiting in the queue
// (queue.js derive()), worked out again at every render.
export let view = null;
export function setView(v) {
  view = v;
}

/** House rule hold on error: play is stopped at this shoe (the server's
 *  state says so from the moment the coup screen opens). */
export function stopped() {
  return !!view.heldBy;
}

// A refusal (or "the shoe moved on") the croupier has not answered yet
// (send.js): until he does, the screen shows the table as the server holds
// it, not as the waiting coups would leave it (queue.js derive), and the
// stakes and the pad take nothing: the answer is "back to the pad",
// "discard" or "record mine after it", in the box that says why.
let conflict = null;
export function setConflict(c) {
  conflict = c || null;
}
export function conflicted() {
  return conflict !== null;
}

/** The coup on the pad, until it is saved. */
export const draft = {
  stakes: [], // {seat, standing, amount (cents), announcement, player_card}
  selected: null, // the index of the stake the amount keys change
  currentAmount: C.toCents(S.rules.minimum_stake),
  standingCount: 0,
  cards: { p1: null, b1: null, p2: null, b2: null, p3: null, b3: null },
  // What the croupier did, in order: a slot filled ("p1".."b3"), "stand" (the
  // punter stands: "Next card to banker" before his third card) or
  // "force-p3" / "force-b3" (one more card against the rules). Undo takes
  // back the last one, whatever it was.
  steps: [],
  pendingRank: null,
};

// ---- drawing the screen again ------------------------------------------------

let draw = function () {};

/** Draw the screen again after a change (what screen.js registered). */
export function render() {
  draw();
}

export function onRender(fn) {
  draw = fn;
}
