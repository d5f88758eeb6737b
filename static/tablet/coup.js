/* The coup-entry screen: stakes on the table map, the card pad, live
 * guidance from the table's own tableau, and a queue that never loses a coup.
 *
 * A coup is written to localStorage BEFORE it is sent. Each carries an
 * Idempotency-Key made here and the expected_seq it should get; the queue is
 * sent in order, so a retry after a lost answer returns the same coup (200)
 * and a second tablet that got there first answers 409 ("the shoe moved on").
 *
 * Each coup keeps who entered it (user id, time on the tablet) and is sent
 * only while he is signed in: after a Lock and a relief's unlock, the coups
 * the first croupier left wait for him (or for a pit boss, who accepts them on
 * his behalf with a reason), and the relief's own coups queue behind them, in
 * dealing order. The server refuses a coup whose author is not the sender.
 */
(function () {
  "use strict";
  const C = window.Chemmy;
  const $ = (id) => document.getElementById(id);
  let S = JSON.parse($("tablet-state").textContent);
  const T = JSON.parse($("tablet-strings").textContent);
  const URLS = S.urls;
  const USER = S.user;
  const USER_ID = S.user_id === undefined ? null : S.user_id;
  const USER_NAME = S.user_name || USER;
  const LANG = S.language || document.documentElement.lang || "en";
  const QUEUE_KEY = "chemmy.tablet.queue";
  const DEVICE_KEY = "chemmy.tablet.device";
  // The server's latest state of this shoe, as the page last heard it
  // (refreshState). Offline, a reload gets the service worker's kept copy of
  // the page, which can be older: a tie's stakes, the bank and the last coup
  // recorded since would be lost with it. Removed when the tablet locks.
  const STATE_KEY = "chemmy.tablet.state";
  const SLOTS = ["p1", "b1", "p2", "b2", "p3", "b3"];
  const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
  const RANK_LABEL = {};
  document.querySelectorAll("[data-rank]").forEach(function (b) {
    RANK_LABEL[b.dataset.rank] = b.textContent.trim();
  });

  // ---- small helpers --------------------------------------------------------

  function fmt(template, values) {
    return String(template).replace(/\{(\w+)\}/g, function (m, k) {
      return Object.prototype.hasOwnProperty.call(values, k) ? String(values[k]) : m;
    });
  }

  function money(cents) {
    const whole = cents % 100 === 0;
    return new Intl.NumberFormat(LANG, {
      minimumFractionDigits: whole ? 0 : 2,
      maximumFractionDigits: 2,
    }).format(cents / 100); // display only: the sums are done in cents
  }

  function signed(cents) {
    if (cents > 0) return "+" + money(cents);
    if (cents < 0) return "\u2212" + money(-cents);
    return money(0);
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v);
    }
    for (const c of children || []) if (c) node.append(c);
    return node;
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return [h.slice(0, 8), h.slice(8, 12), h.slice(12, 16), h.slice(16, 20), h.slice(20)].join("-");
  }

  function device() {
    let id = localStorage.getItem(DEVICE_KEY);
    if (!id) {
      id = "tablet-" + uuid().slice(0, 8);
      localStorage.setItem(DEVICE_KEY, id);
    }
    return id;
  }

  function csrf() {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (m) return decodeURIComponent(m[1]);
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function signedCents(text) {
    const t = String(text);
    const cents = C.toCents(t.replace(/^-/, ""));
    return t.startsWith("-") ? -cents : cents;
  }

  /** A coup's result in the one wording (tables/wording.py, its strings
   *  come from the same catalogue): "Banker wins 7 to 5", "Tie at 6". */
  function resultText(outcome, p, b) {
    const template = T["result_" + outcome];
    return template ? fmt(template, { p: p, b: b }) : String(outcome);
  }

  function cardText(code) {
    return (RANK_LABEL[code[0]] || code[0]) + SUIT_SYMBOL[code[1]];
  }

  /** "KH" -> "king of hearts" / "roi de cœur" (tables/cards.py card_name). */
  function cardName(code) {
    const rank = T["card_rank_" + code[0]] || (code[0] === "T" ? "10" : code[0]);
    return fmt(T.card_name, { rank: rank, suit: T["card_suit_" + code[1]] || code[1] });
  }

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
  (function adoptKeptState() {
    const kept = keptState();
    if (kept && later(kept.as_of, S.as_of)) S = Object.assign({}, S, kept);
  })();

  // ---- the queue (localStorage: survives a reload and a dead battery) -------

  function queue() {
    try {
      return JSON.parse(localStorage.getItem(QUEUE_KEY) || "[]");
    } catch (e) {
      return [];
    }
  }
  function saveQueue(q) {
    localStorage.setItem(QUEUE_KEY, JSON.stringify(q));
  }
  function mine(q) {
    return q.filter((e) => e.shoe === S.shoe.id);
  }

  // ---- who entered each coup ---------------------------------------------------

  function hasId(e) {
    return e.user_id !== undefined && e.user_id !== null;
  }
  function isMine(e) {
    if (hasId(e) && USER_ID !== null) return e.user_id === USER_ID;
    return e.user === USER; // queued before coups kept their author's id
  }
  function sameAuthor(a, b) {
    return hasId(a) && hasId(b) ? a.user_id === b.user_id : a.user === b.user;
  }
  function authorName(e) {
    return e.name || e.user;
  }
  /** The coups at the head of the queue that another croupier entered: they
   *  hold the queue (a shoe's coups are stored in dealing order). */
  function heldRun() {
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
  function adoptOwnEntries() {
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

  /** The table as it stands: the server's state plus this shoe's coups that
   *  are still waiting (their figures are provisional, from the same rules). */
  function derive() {
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
    for (const e of mine(queue())) {
      if (e.body.expected_seq < v.nextSeq) continue; // recorded, answer lost
      const p = e.provisional;
      v.waiting += 1;
      v.nextSeq = e.body.expected_seq + 1;
      v.cardsLeft -= e.body.punter.length + e.body.banker.length;
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
    return v;
  }

  // ---- entry state -------------------------------------------------------------

  let view = derive();
  let stakes = []; // {seat, standing, amount (cents), announcement}
  let selected = null;
  let currentAmount = C.toCents(S.rules.minimum_stake);

  /** The house's maximum bank in cents, or null (no maximum). */
  function maximumBank() {
    return S.rules.maximum_bank ? C.toCents(S.rules.maximum_bank) : null;
  }
  let standingCount = 0;
  // Opened after a tie (house rule tie_rule "stay"): its stakes are still on
  // the table, as the server keeps them (at least what was covered), or as
  // the tie still waiting in the queue left them (derive: the last waiting
  // coup's). Either way they survive a reload and an offline spell.
  if (view.tied) {
    stakes = view.tied.map((t) => ({
      seat: t.seat, standing: t.standing, amount: t.amount, announcement: "none",
    }));
    standingCount = stakes.filter((t) => t.seat === null || t.seat === undefined).length;
  }
  let cards = {};
  // What the croupier did, in order: a slot filled ("p1".."b3"), "stand" (the
  // punter stands: "Next card to banker" before his third card) or
  // "force-p3" / "force-b3" (one more card against the rules). Undo takes
  // back the last one, whatever it was.
  let steps = [];
  let pendingRank = null;
  let paused = null; // {kind, entry} while a conflict waits for the croupier
  let flushing = false;
  let pendingVerdict = null;
  let lockArmed = false; // Lock tapped once with coups of one's own waiting

  function clearCards() {
    cards = { p1: null, b1: null, p2: null, b2: null, p3: null, b3: null };
    steps = [];
    pendingRank = null;
  }
  clearCards();

  function hand(side) {
    return [cards[side + "1"], cards[side + "2"], cards[side + "3"]].filter(Boolean);
  }
  function twoCardTotals() {
    if (!cards.p1 || !cards.p2 || !cards.b1 || !cards.b2) return null;
    return { p: C.total([cards.p1, cards.p2]), b: C.total([cards.b1, cards.b2]) };
  }

  function cardCount() {
    return SLOTS.filter((s) => cards[s]).length;
  }

  /** A "force-" step counts only while it is the last thing done. */
  function forcedSlot() {
    const last = steps[steps.length - 1];
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
  function nextStep() {
    for (const s of ["p1", "b1", "p2", "b2"]) {
      if (!cards[s]) return { slot: s, kind: "deal", third: undefined };
    }
    const t = twoCardTotals();
    const natural = t.p >= 8 || t.b >= 8;
    // the house's prescription turns an optional cell into a draw or a stand
    const pa = C.houseAction(C.punterAction(Math.min(t.p, 7)), S.prescriptions, "punter").action;
    let third;
    if (cards.p3) third = C.point(cards.p3);
    else if (natural || cards.b3 || steps.includes("stand") || pa === "S") third = null;
    const forced = forcedSlot();
    if (forced && !cards[forced]) return { slot: forced, kind: "deal", third: third };
    if (natural || cards.b3) return { slot: null, kind: "complete", third: third };
    if (third === undefined) {
      return { slot: "p3", kind: pa === "O" ? "punter_choice" : "deal", third: third };
    }
    const ba = C.houseAction(C.bankerAction(S.tableau, t.b, third), S.prescriptions,
      "banker", t.b, third).action;
    if (ba === "S") return { slot: null, kind: "complete", third: third };
    return { slot: "b3", kind: ba === "O" ? "banker_choice" : "deal", third: third };
  }

  function target() {
    return nextStep().slot;
  }

  /** The guidance's last line, in the croupier's words, from nextStep(). */
  function promptText(step) {
    if (step.kind === "complete") return T.coup_complete;
    if (step.kind === "punter_choice") return T.next_punter_choice;
    if (step.kind === "banker_choice") return T.next_banker_choice;
    return fmt(T.deal_next, { slot: T["slot_" + step.slot] });
  }

  // ---- stakes ------------------------------------------------------------------

  function engineStakes() {
    return stakes.map((s) => ({
      seat: s.seat,
      standing: s.standing,
      amount: s.amount,
      announcement: s.announcement,
    }));
  }

  function coverage() {
    if (!view.turnOpen || !stakes.length) return null;
    return C.cover(engineStakes(), view.bank, view.bankerSeat, S.table.seats,
      S.rules.cover_rule, maximumBank());
  }

  function stakeName(s) {
    return s.seat !== null && s.seat !== undefined ? fmt(T.seat_n, { n: s.seat }) : s.standing;
  }

  // A server refusal in the croupier's words (static/tablet/refusals.js).
  const REFUSAL = window.ChemmyRefusals.make({
    T: T,
    fmt: fmt,
    money: money,
    toCents: C.toCents,
    seatName: stakeName,
    // what holds this shoe, as the page knows it (house rule hold on error)
    heldCodes: (seq) => (view.heldBy === seq ? view.heldCodes : null),
  });

  /** The stakes as the engine would refuse them, said before saving (the
   *  server stays the judge: refusals.js words what it answers). */
  function stakeProblem() {
    const min = C.toCents(S.rules.minimum_stake);
    const bank = view.bank;
    const pair = [];
    // After a tie the stakes stay on the table: raised, never taken back.
    for (const t of view.tied || []) {
      const i = stakes.findIndex((s) => (t.seat !== null && t.seat !== undefined
        ? s.seat === t.seat : s.standing === t.standing));
      if (i < 0 || stakes[i].amount < t.amount) {
        return {
          index: i < 0 ? null : i,
          text: fmt(T.refused_tie_stays, { who: stakeName(t), amount: money(t.amount) }),
        };
      }
    }
    for (let i = 0; i < stakes.length; i++) {
      const s = stakes[i];
      const v = { who: stakeName(s), amount: money(s.amount), minimum: money(min) };
      if (s.amount < min) return { index: i, text: fmt(T.refused_below_minimum, v) };
      const whole = s.announcement === "banco_solo" || s.announcement === "suivi";
      if (whole && s.amount !== bank) {
        return {
          index: i,
          text: fmt(T.refused_whole_bank, {
            who: v.who, announcement: T["announce_" + s.announcement], bank: money(bank),
          }),
        };
      }
      if (s.announcement === "banco_avec" && s.amount * 2 !== bank) {
        return { index: i, text: fmt(T.refused_banco_avec, { who: v.who, half: money(bank / 2) }) };
      }
      if (s.announcement === "banco_deux") pair.push(i);
    }
    if (pair.length === 1) {
      return { index: pair[0], text: fmt(T.refused_banco_deux_alone, { who: stakeName(stakes[pair[0]]) }) };
    }
    if (pair.length > 2) {
      return { index: pair[2], text: fmt(T.refused_banco_deux_third, { who: stakeName(stakes[pair[2]]) }) };
    }
    if (pair.length === 2 && stakes[pair[0]].amount + stakes[pair[1]].amount !== bank) {
      return { index: pair[1], text: fmt(T.refused_banco_deux_total, { bank: money(bank) }) };
    }
    return null;
  }

  function tapSeat(n) {
    if (n === view.bankerSeat || stopped()) return;
    let i = stakes.findIndex((s) => s.seat === n);
    if (i < 0) {
      stakes.push({ seat: n, standing: null, amount: currentAmount, announcement: "none" });
      i = stakes.length - 1;
    }
    selected = i;
    hideAlert();
    render();
  }

  function addStanding() {
    standingCount += 1;
    stakes.push({
      seat: null,
      standing: T.standing_label + " " + standingCount,
      amount: currentAmount,
      announcement: "none",
    });
    selected = stakes.length - 1;
    render();
  }

  function setAmount(cents) {
    if (cents === null || cents <= 0) return;
    currentAmount = cents;
    if (selected !== null) {
      stakes[selected].amount = cents;
      stakes[selected].announcement = "none";
    }
    render();
  }

  function announce(kind) {
    if (selected === null) return showAlert(T.select_seat_first);
    const s = stakes[selected];
    if (s.announcement === kind) {
      s.announcement = "none";
      return render();
    }
    const bank = view.bank;
    if (kind === "suivi") {
      if (view.suivi === null || view.suivi === undefined) return showAlert(T.no_suivi);
      if (s.seat !== view.suivi) return showAlert(fmt(T.suivi_only, { n: view.suivi }));
      s.amount = bank;
    } else if (kind === "banco_solo") {
      s.amount = bank;
    } else if (kind === "banco_avec") {
      s.amount = Math.floor(bank / 2);
    } else if (kind === "banco_deux") {
      const other = stakes.find((o, j) => j !== selected && o.announcement === "banco_deux");
      s.amount = other ? bank - other.amount : Math.floor(bank / 2);
    }
    s.announcement = kind;
    render();
  }

  // The selected stake's player card number: optional, letters and digits.
  function cleanCardNo(value) {
    return String(value || "").toUpperCase().replace(/[^A-Z0-9]/g, "").slice(0, 20);
  }

  function setCardNo(value) {
    if (selected === null || !stakes[selected]) return;
    stakes[selected].player_card = cleanCardNo(value);
  }

  function renderCardNo() {
    const input = $("stake-card");
    if (!input) return;
    const s = selected === null ? null : stakes[selected];
    input.disabled = !s;
    if (document.activeElement !== input) input.value = s ? s.player_card || "" : "";
  }

  function removeStake() {
    if (selected === null) return;
    stakes.splice(selected, 1);
    selected = null;
    render();
  }

  // ---- cards -------------------------------------------------------------------

  function tapRank(r) {
    hideAlert();
    if (stopped()) return; // the pad is locked: the stop says why
    if (!target()) {
      showAlert(cardCount() >= 6 ? T.cards_full : T.all_in_more);
      return;
    }
    pendingRank = r;
    render();
  }

  function tapSuit(s) {
    if (!pendingRank || stopped()) return;
    const slot = target();
    if (!slot) return;
    cards[slot] = pendingRank + s;
    steps.push(slot);
    pendingRank = null;
    hideAlert();
    render();
  }

  function undo() {
    hideAlert();
    if (pendingRank) {
      pendingRank = null;
    } else if (steps.length) {
      const last = steps.pop();
      if (Object.prototype.hasOwnProperty.call(cards, last)) cards[last] = null;
    } else {
      showAlert(T.undo_nothing);
    }
    render();
  }

  /** "Next card to banker" before the punter's third card means he stands
   *  (the tableau then says whether the banker draws); otherwise, and for
   *  "Next card to punter", it deals one more card than the rules ask for
   *  (recorded as it happens, flagged for the pit boss). */
  function sendNextTo(side) {
    if (!twoCardTotals()) return;
    const slot = side === "punter" ? "p3" : "b3";
    if (cards[slot]) return;
    const now = nextStep();
    hideAlert();
    if (now.slot === slot) return render();
    if (side === "banker" && now.third === undefined) steps.push("stand");
    else steps.push("force-" + slot);
    render();
  }

  // ---- findings in words -------------------------------------------------------

  function findingText(f, totals) {
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

  // ---- rendering -----------------------------------------------------------------

  function render() {
    stopLock(false);
    view = derive();
    renderBar();
    renderSeats();
    renderStakeLines();
    renderCards();
    renderGuidance();
    renderNet();
    renderHeld();
    renderStopped();
  }

  /** House rule hold on error: play is stopped at this shoe (the server's
   *  state says so from the moment the coup screen opens). */
  function stopped() {
    return !!view.heldBy;
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
    $("remove-stake").disabled = selected === null;
  }

  function renderSeats() {
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
      const i = stakes.findIndex((s) => s.seat === n);
      if (i < 0) {
        info.textContent = "";
        return;
      }
      btn.classList.add("staked");
      btn.setAttribute("aria-pressed", i === selected ? "true" : "false");
      if (i === selected) btn.classList.add("selected");
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
    stakes.forEach(function (s, i) {
      if (s.seat !== null) return;
      const b = el("button", {
        type: "button",
        class: "btn chip standing" + (i === selected ? " selected" : ""),
        "aria-pressed": i === selected ? "true" : "false",
        "aria-label": s.standing,
        text: s.standing + " \u00b7 " + stakeInfo(i, cov).replace(/\n/g, " \u00b7 "),
      });
      b.addEventListener("click", function () {
        selected = i;
        render();
      });
      list.append(b);
    });
  }

  /** A stake in words. Short (a seat's bubble), each fact on its own line
   *  and a stake declined whole said once ("declined 500", struck through):
   *  a bubble three lines tall at most fits the map (tablet.css). */
  function stakeInfo(i, cov, long) {
    const s = stakes[i];
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

  function renderStakeLines() {
    const cov = coverage();
    const line = $("selected-line");
    if (selected === null || !stakes[selected]) {
      selected = null;
      line.textContent = T.no_stakes;
    } else {
      const s = stakes[selected];
      let text = stakeName(s) + ": " + stakeInfo(selected, cov, true);
      if (cov && cov.punter_index === selected) text += " \u00b7 " + T.holds_hand;
      const min = C.toCents(S.rules.minimum_stake);
      if (s.amount < min) {
        text += " \u2014 " + fmt(T.below_minimum, { amount: money(s.amount), minimum: money(min) });
      }
      line.textContent = text;
    }
    renderCardNo();
    document.querySelectorAll("[data-announce]").forEach(function (b) {
      const on = selected !== null && stakes[selected].announcement === b.dataset.announce;
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
    document.querySelectorAll("[data-amount]").forEach(function (b) {
      b.setAttribute("aria-pressed", C.toCents(b.dataset.amount) === currentAmount ? "true" : "false");
    });
    $("coverage").textContent = view.turnOpen
      ? fmt(T.coverage, {
          bank: money(view.bank),
          covered: money(cov ? cov.covered : 0),
          garage: money(cov ? cov.garage : view.bank),
        })
      : T.no_turn;
  }

  function renderCards() {
    const t = target();
    for (const s of SLOTS) {
      const slot = $("slot-" + s);
      const code = cards[s];
      slot.textContent = code ? cardText(code) : s === t && pendingRank ? RANK_LABEL[pendingRank] : "";
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
      k.setAttribute("aria-pressed", k.dataset.rank === pendingRank ? "true" : "false");
    });
    document.querySelectorAll("[data-suit]").forEach(function (k) {
      k.classList.toggle("armed", !!pendingRank);
    });
    const four = !!totals;
    $("to-punter").disabled = !four || !!cards.p3;
    $("to-banker").disabled = !four || !!cards.b3;
    $("to-punter").setAttribute("aria-pressed", t === "p3" ? "true" : "false");
    $("to-banker").setAttribute("aria-pressed", t === "b3" ? "true" : "false");
    // All cards in (or the banker's free choice): Save is the next step.
    const kind = nextStep().kind;
    const ready = kind === "complete" || kind === "banker_choice";
    $("save").classList.toggle("ready", ready);
    $("save").dataset.next = ready ? "save" : "card";
    document.querySelector(".pad").classList.toggle("all-in", kind === "complete");
  }

  /** "Banker must draw", "Banker may choose", "Banker must draw (house
   *  rule)": a rule as houseAction() gives it. */
  function ruleText(side, rule) {
    const which = { D: "_must_draw", O: "_may_choose", S: "_must_stand" }[rule.action];
    return T[side + which + (rule.house ? "_house" : "")];
  }

  /** The coup as dealt, judged as the server will: the engine's findings and
   *  the house's (an optional cell played against its prescription). */
  function judge() {
    const v = C.evaluate(hand("p"), hand("b"), S.tableau);
    v.findings = v.findings.concat(C.houseFindings(v, S.prescriptions));
    return v;
  }

  function renderGuidance() {
    const lines = [];
    const step = nextStep();
    const totals = twoCardTotals();
    if (pendingRank) lines.push(["info", fmt(T.choose_suit, { rank: RANK_LABEL[pendingRank] })]);
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

  function showAlert(text) {
    const a = $("alert");
    a.textContent = text;
    a.hidden = false;
  }
  function hideAlert() {
    $("alert").hidden = true;
    lockArmed = false;
  }

  // ---- results -------------------------------------------------------------------

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

  function resultPanel(r) {
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
  function fromSummary(last) {
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

  function fromServer(coup) {
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

  function provisional(verdict) {
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
      tied = stakes
        .map((s, i) => ({ seat: s.seat, standing: s.standing, amount: cov.stakes[i].covered }))
        .filter((t) => t.amount > 0);
      if (!tied.length) tied = null;
    }
    let suivi = null;
    if (verdict.outcome === "banker" && cov.punter_index !== null) {
      const holder = stakes[cov.punter_index];
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
      stakes: stakes.map((s, i) => ({ label: stakeName(s), payout: st.payouts[i] })),
      findings: verdict.findings.map((f) => findingText(f, totals)),
      // house rule hold on error: the findings that will stop play (the
      // tablet stops at once, offline too; the server's state confirms it)
      holds: holding.length ? holding.map((f) => findingText(f, totals)) : null,
      hold_codes: holding.length ? holding.map((f) => f.code) : null,
    };
  }

  function showProvisional(entry) {
    resultPanel(Object.assign({ seq: entry.body.expected_seq, provisional: true }, entry.provisional));
  }

  // ---- saving ----------------------------------------------------------------------

  function save() {
    hideAlert();
    if (paused) return;
    // House rule hold on error: a finding stopped play at this shoe (named).
    if (stopped()) return showAlert(REFUSAL.held(view.heldBy, view.heldCodes));
    if (!view.turnOpen) return showAlert(T.no_turn);
    if (!stakes.length) return showAlert(T.need_stake);
    if (!twoCardTotals()) return showAlert(T.need_cards);
    const problem = stakeProblem();
    if (problem) {
      selected = problem.index;
      render();
      return showAlert(problem.text);
    }
    if (pendingRank) pendingRank = null;
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

  function commit(verdict) {
    const body = {
      punter: hand("p"),
      banker: hand("b"),
      stakes: stakes.map((s) => {
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
      stakes = [];
      standingCount = 0;
    }
    selected = null;
    clearCards();
    render();
    flush();
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

  function removeEntry(key) {
    saveQueue(queue().filter((e) => e.key !== key));
  }

  async function flush() {
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
        paused = {
          kind: r.status === 409 && data.expected_seq ? "moved" : "refused",
          entry: entry,
          data: data,
          status: r.status,
        };
        await showConflict();
        break;
      }
    } finally {
      flushing = false;
      render();
    }
  }

  async function refreshState() {
    try {
      const r = await fetch(URLS.state, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!r.ok) return false;
      const fresh = await r.json();
      S = Object.assign({}, S, fresh);
      keepState(fresh);
      if (!S.shoe.open || !S.session.open) window.location.assign(URLS.session);
      return true;
    } catch (e) {
      return false;
    }
  }

  async function recorded(entry, coup) {
    if (coup.shoe === S.shoe.id) {
      // Keep the server's answer; a later waiting coup's provisional panel
      // would otherwise be replaced by an older recorded one.
      const later = mine(queue()).length;
      if (!later) resultPanel(fromServer(coup));
      S.shoe.next_seq = Math.max(S.shoe.next_seq, coup.seq + 1);
    }
    document.body.dispatchEvent(new CustomEvent("coup-recorded"));
    await refreshState();
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
      const d = p.data || {};
      const said = REFUSAL.words(p.status, d, p.entry.body);
      $("conflict-text").textContent = said.text;
      $("conflict-text").dataset.refusal = said.key;
      // the server's own words, for the pit boss (the generic line has them)
      $("conflict-coup").textContent =
        said.key === "refused_generic" || !d.detail ? "" : fmt(T.server_said, { detail: d.detail });
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
  }

  function resendAfter() {
    // Number this shoe's waiting coups after the latest one and send them.
    const q = queue();
    let seq = S.shoe.next_seq;
    for (const e of q) if (e.shoe === S.shoe.id) e.body.expected_seq = seq++;
    saveQueue(q);
    closeConflict();
    flush();
  }

  function discard() {
    saveQueue(queue().filter((e) => e.shoe !== S.shoe.id));
    closeConflict();
    render();
  }

  function backToPad() {
    const q = queue();
    const entry = mine(q)[0];
    if (!entry) return closeConflict();
    saveQueue(q.filter((e) => e.key !== entry.key));
    closeConflict();
    clearCards();
    const b = entry.body;
    ["p", "b"].forEach((side) => {
      (side === "p" ? b.punter : b.banker).forEach((code, i) => {
        const slot = side + (i + 1);
        cards[slot] = code;
        steps.push(slot);
      });
    });
    stakes = b.stakes.map((s) => ({
      seat: s.seat === undefined ? null : s.seat,
      standing: s.standing === undefined ? null : s.standing,
      amount: C.toCents(s.amount),
      announcement: s.announcement,
      player_card: s.player_card || "",
    }));
    selected = null;
    render();
  }

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
  // the shared pad (pad.js); where a card goes is decided here (nextStep)
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
    this.value = selected === null ? "" : stakes[selected].player_card || "";
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
  $("confirm-record").addEventListener("click", function () {
    $("confirm").close();
    if (pendingVerdict) commit(pendingVerdict);
    pendingVerdict = null;
  });
  $("confirm-cancel").addEventListener("click", function () {
    $("confirm").close();
    pendingVerdict = null;
  });
  $("conflict-resend").addEventListener("click", resendAfter);
  $("conflict-discard").addEventListener("click", discard);
  $("conflict-edit").addEventListener("click", backToPad);

  // A USB keypad: "9h", "kd", "10s", Enter saves, Backspace undoes.
  let ten = false;
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t && t.closest && t.closest("input, textarea, select, dialog, form")) return;
    const k = ev.key;
    if (k === "Enter") {
      ev.preventDefault();
      save();
      return;
    }
    if (k === "Backspace") {
      ev.preventDefault();
      undo();
      return;
    }
    if (k === "Escape") {
      pendingRank = null;
      ten = false;
      render();
      return;
    }
    if (k.length !== 1) return;
    const ch = k.toUpperCase();
    if (ten) {
      ten = false;
      if (ch === "0") {
        tapRank("T");
        return;
      }
    }
    if (ch === "1") {
      ten = true;
      return;
    }
    if (C.RANKS.includes(ch)) tapRank(ch);
    else if (C.SUITS.includes(ch) && pendingRank) tapSuit(ch);
  });

  // Locking with coups of one's own still queued: they stay on the tablet
  // under his name (sent when he unlocks again, or a pit boss accepts them);
  // the first tap says so, a second one locks (lockArmed).
  document.querySelectorAll("[data-lock-form]").forEach(function (f) {
    f.addEventListener("submit", function (ev) {
      const n = queue().filter(isMine).length;
      if (n && !lockArmed) {
        ev.preventDefault();
        showAlert(n === 1 ? T.lock_waiting_one : fmt(T.lock_waiting_many, { n: n }));
        lockArmed = true;
      }
    });
  });

  // ---- a pit boss accepts the held coups on their author's behalf -------------

  function clock(iso) {
    return new Date(iso).toLocaleTimeString(LANG, { hour: "2-digit", minute: "2-digit" });
  }

  function acceptError(text) {
    const box = $("accept-error");
    box.textContent = text;
    box.hidden = false;
  }

  function openAccept() {
    const run = heldRun();
    if (!run.length) return;
    const name = authorName(run[0]);
    $("accept-summary").textContent =
      run.length === 1
        ? fmt(T.accept_summary_one, { name: name, from: clock(run[0].at) })
        : fmt(T.accept_summary_many, {
            n: run.length,
            name: name,
            from: clock(run[0].at),
            to: clock(run[run.length - 1].at),
          });
    $("accept-error").hidden = true;
    $("accept-password").value = "";
    $("accept").showModal();
    $("accept-username").focus();
  }

  async function sendAccept() {
    const run = heldRun();
    if (!run.length || !hasId(run[0])) return $("accept").close();
    const username = $("accept-username").value.trim();
    const password = $("accept-password").value;
    const reason = $("accept-reason").value.trim();
    if (!username || !password) return acceptError(T.accept_need_sign);
    if (!reason) return acceptError(T.accept_need_reason);
    const name = authorName(run[0]);
    const button = $("accept-send");
    button.disabled = true;
    let r;
    let data = {};
    try {
      r = await fetch(URLS.accept, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json",
          "X-CSRFToken": csrf(),
          "X-Device": device(),
        },
        body: JSON.stringify({
          username: username,
          password: password,
          reason: reason,
          entered_by: run[0].user_id,
          coups: run.map((e) => ({ shoe: e.shoe, key: e.key, body: e.body })),
        }),
      });
      try {
        data = await r.json();
      } catch (e) {
        data = {};
      }
    } catch (err) {
      return acceptError(T.offline);
    } finally {
      button.disabled = false;
      $("accept-password").value = ""; // never left on the relief's tablet
    }
    if (r.ok) {
      $("accept-reason").value = "";
      $("accept").close();
      let last = null;
      for (const s of data.stored) {
        const entry = run.find((e) => e.key === s.key);
        removeEntry(s.key);
        if (s.coup.shoe === S.shoe.id) S.shoe.next_seq = Math.max(S.shoe.next_seq, s.coup.seq + 1);
        last = { entry: entry, coup: s.coup };
      }
      if (last) await recorded(last.entry, last.coup);
      const n = data.stored.length;
      showAlert(fmt(n === 1 ? T.accepted_one : T.accepted_many, { n: n, name: name, by: data.accepted_by }));
      render();
      flush(); // the relief's own coups, queued behind them
      return;
    }
    const entry = data.index !== undefined ? run[data.index] : null;
    if (r.status === 409 && entry && data["coups[" + data.index + "].expected_seq"]) {
      $("accept").close();
      paused = { kind: "moved", entry: entry, data: data };
      await showConflict();
      return;
    }
    acceptError(fmt(T.accept_refused, { detail: REFUSAL.words(r.status, data, entry && entry.body).text }));
  }

  $("held-accept").addEventListener("click", openAccept);
  $("accept-send").addEventListener("click", sendAccept);
  $("accept-cancel").addEventListener("click", function () {
    $("accept-password").value = "";
    $("accept").close();
  });

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
  flush();
  // For the tests (and a curious pit boss's console): the page's own wording.
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
})();
