/* A refusal from the coup API in a croupier's words.
 *
 * Every 4xx body of the coup API names the field first in `detail`
 * ("stakes[0].amount: 5.00 is below the minimum stake 10.00 ...", the
 * service's and the engine's messages alike; casino/api.py) and says what
 * kind in `code`. The table below maps each refusal the API can answer
 * (tables/api/serializers.py, tables/services/coups.py, ledger.py,
 * ledger_store.py, access.py, tables/chemmy/stakes.py and cards.py) to a
 * sentence of the page's strings table, so it is said in the croupier's
 * language; the seat is named from the coup's own body. Anything not in the
 * table still gets a sentence (refused_generic) with the server's detail.
 * tests/tablet/test_refusals.py provokes each refusal through the real API
 * and reads the sentence the page makes of it, in English and French.
 * An ES module, pure: the page's strings and formatters come in make()
 * (coup/words.js).
 */
const STAKE = /^stakes\[(\d+)\]\.(\w+)$/;

/** [field pattern, message pattern, string key, values(match, ctx)] --
 *  first match wins, so the specific messages come before the catch-alls. */
const RULES = [
  // house rule tie_rule "stay": a tie's stake taken back (or lowered)
  [/^stakes(\[\d+\]\.amount)?$/, /^(.+?)'s stake of (\S+) stays on the table after the tie/,
    "refused_tie_stays", (m, x) => ({ who: x.player(m[1]), amount: x.amount(m[2]) })],
  [/^stakes\[\d+\]\.amount$/, /^(\S+) is below the minimum stake (\S+)/, "refused_below_minimum",
    (m, x) => ({ who: x.who, amount: x.amount(m[1]), minimum: x.amount(m[2]) })],
  // "banco solo takes the whole bank in play (2000.00, the house maximum), not
  // 2110.50" (tables/chemmy/stakes.py): the maximum said when it is the cap
  [/^stakes\[\d+\]\.amount$/, /^(suivi|banco solo) takes the whole bank in play \(([\d.]+)(, the house maximum)?\)/,
    "refused_whole_bank", (m, x) => ({
      who: x.who, announcement: x.announcement(m[1]), bank: x.amount(m[2]), cap: x.cap(m[3]) })],
  [/^stakes\[\d+\]\.amount$/, /^banco avec takes half the bank in play \(([\d.]+)(, the house maximum)?\)/,
    "refused_banco_avec", (m, x) => ({ who: x.who, half: x.amount(m[1]), cap: x.cap(m[2]) })],
  [/^stakes\[\d+\]\.amount$/, /^banco deux .* not the bank in play \(([\d.]+)(, the house maximum)?\)$/,
    "refused_banco_deux_total", (m, x) => ({ bank: x.amount(m[1]), cap: x.cap(m[2]) })],
  [/^stakes\[\d+\]\.amount$/, null, "refused_amount", (m, x) => ({ who: x.who })],
  [/^stakes\[\d+\]\.seat$/, /holds the bank/, "refused_seat_banker", (m, x) => ({ who: x.who })],
  [/^stakes\[\d+\]\.(seat|standing)$/, /already has a stake/, "refused_duplicate",
    (m, x) => ({ who: x.who })],
  [/^stakes\[\d+\]\.seat$/, /^(must be a seat|Ensure this value)/, "refused_seat_range",
    (m, x) => ({ who: x.who })],
  [/^stakes\[\d+\]\.(seat|standing)$/, null, "refused_seat_or_standing", () => ({})],
  [/^stakes\[\d+\]\.announcement$/, /^no suivi is open/, "no_suivi", () => ({})],
  [/^stakes\[\d+\]\.announcement$/, /^only seat (\d+) may call suivi/, "suivi_only",
    (m) => ({ n: m[1] })],
  [/^stakes\[\d+\]\.announcement$/, /needs a second punter/, "refused_banco_deux_alone",
    (m, x) => ({ who: x.who })],
  [/^stakes\[\d+\]\.announcement$/, /a third cannot join/, "refused_banco_deux_third",
    (m, x) => ({ who: x.who })],
  [/^stakes\[\d+\]\.announcement$/, null, "refused_announcement", (m, x) => ({ who: x.who })],
  [/^stakes$/, /running total past the largest amount/, "refused_ledger_max", () => ({})],
  [/^stakes(\[\d+\])?$/, null, "refused_stakes", () => ({})],
  [/^punter(\[\d+\])?$/, null, "refused_cards_punter", () => ({})],
  [/^banker(\[\d+\])?$/, null, "refused_cards_banker", () => ({})],
  [/^expected_seq$/, /moved on/, "moved_on", () => ({})],
  [/^turn$/, null, "no_turn", () => ({})],
  // house rule hold on error: "held since coup 3 (false_draw, ...): ...",
  // what stopped play named in words (the codes, when the server gives them)
  [/^shoe$/, /^held since coup (\d+)(?: \(([\w, ]+)\))?/, "refused_shoe_held",
    (m, x) => ({ n: m[1], why: x.stops(m[2] ? m[2].split(/,\s*/) : null, Number(m[1])) })],
  [/^shoe$/, /is closed/, "refused_shoe_closed", () => ({})],
  [/^shoe$/, /^only (\d+) cards are left/, "refused_shoe_short", (m) => ({ n: m[1] })],
  [/^bank$/, /past the largest amount/, "refused_bank_max", () => ({})],
  [/^Idempotency-Key$/, /already used/, "refused_key", () => ({})],
  [/^Idempotency-Key$/, null, "refused_key_bad", () => ({})],
  [/^entered_by$/, /^this coup was entered by (.+?), not by you/, "refused_not_yours",
    (m) => ({ name: m[1] })],
  [/^entered_by$/, null, "refused_author_unknown", () => ({})],
  [/^entered_at$/, null, "refused_clock", () => ({})],
  [/^declared_bank$/, null, "refused_declared_bank", () => ({})],
  [/^session$/, null, "refused_not_your_table", () => ({})],
  // the pit boss's acceptance of a relieved croupier's coups
  [/^password$/, null, "refused_password", () => ({})],
  [/^username$/, /these are your own coups/, "refused_own_coups", () => ({})],
  [/^username$/, /^(.+?) is not a pit boss/, "refused_not_pitboss", (m) => ({ name: m[1] })],
  [/^reason$/, null, "accept_need_reason", () => ({})],
];

/** By `code` when the body names no field (DRF's own refusals). */
const CODES = {
  not_found: "refused_not_found",
  permission_denied: "refused_role",
  not_authenticated: "signed_out",
  authentication_failed: "signed_out",
};

/** "stakes[0].amount: 5.00 is below ..." -> ["stakes[0].amount", "5.00 is ..."];
 *  the pit boss's acceptance names the coup first ("coups[2].stakes[0]..."). */
function split(detail) {
  const m = /^([\w\-]+(?:\[\d+\])?(?:\.\w+(?:\[\d+\])?)*): ([\s\S]*)$/.exec(String(detail || ""));
  if (!m) return { field: null, message: String(detail || "") };
  return { field: m[1].replace(/^coups\[\d+\]\./, ""), message: m[2] };
}

/** ctx: {T, fmt, money(cents) -> text, toCents(text), seatName(stake),
 *  heldCodes(seq) -> the codes the page knows hold the shoe since coup
 *  seq, or null (optional)} */
function make(ctx) {
  const T = ctx.T;
  const fmt = ctx.fmt;

  /** What stopped play, in words: "A false draw stops play at this table
   *  (house rule)." for each kind of finding (the page's codes when the
   *  refusal names none). */
  function stops(codes, seq) {
    let known = codes && codes.length ? codes : null;
    if (!known && ctx.heldCodes) known = ctx.heldCodes(seq);
    const texts = (known && known.length ? known : ["other"]).map(
      (c) => T["stops_" + c] || T.stops_other);
    return texts.filter((t, i) => texts.indexOf(t) === i).join(" ");
  }

  /** Play stopped at this shoe since coup n, by findings of these codes. */
  function held(n, codes) {
    return fmt(T.refused_shoe_held, { n: n, why: stops(codes, n) });
  }

  function amount(text) {
    let cents = ctx.toCents(String(text));
    if (cents === null) cents = Math.round(Number(text) * 100);
    return Number.isFinite(cents) ? ctx.money(cents) : String(text);
  }

  function announcement(kind) {
    const code = String(kind).replace(/ /g, "_");
    return T["announce_" + code] || String(kind).replace(/_/g, " ");
  }

  /** ", the house maximum" in the page's words when the server says the
   *  bank in play is the house's cap, else nothing. */
  function cap(said) {
    return said ? T.house_maximum_note : "";
  }

  function who(field, body) {
    const m = STAKE.exec(field || "");
    if (!m) return "";
    const stake = body && body.stakes ? body.stakes[Number(m[1])] : null;
    if (!stake) return fmt(T.stake_n, { n: Number(m[1]) + 1 });
    return ctx.seatName(stake);
  }

  /** "seat 3" or a standing player's name, as the server says it, in the
   *  croupier's words. */
  function player(text) {
    const m = /^seat (\d+)$/.exec(text);
    return ctx.seatName(m ? { seat: Number(m[1]) } : { seat: null, standing: text });
  }

  /** A field the server names, in words: "stakes[0].player_card" -> "Seat 3,
   *  player's card number"; a code the page has no word for, its letters. */
  function fieldWords(field, body) {
    const m = /^stakes\[\d+\]\.(\w+)$/.exec(field);
    const name = (code) => T["field_" + code] || String(code).replace(/_/g, " ");
    if (m) return who(field, body) + ", " + name(m[1]);
    return name(field.replace(/\[\d+\]$/, ""));
  }

  /** The refusal in words: {key, text} (key: the strings table's). */
  function words(status, data, body) {
    data = data && typeof data === "object" ? data : {};
    const detail = data.detail === undefined ? "" : String(data.detail);
    const { field, message } = split(detail);
    if (field) {
      for (const [fieldRe, messageRe, key, values] of RULES) {
        if (!fieldRe.test(field)) continue;
        const m = messageRe ? messageRe.exec(message) : [message];
        if (!m) continue;
        const x = { who: who(field, body), amount: amount, announcement: announcement,
          player: player, stops: stops, cap: cap };
        return { key: key, text: fmt(T[key], values(m, x)) };
      }
    }
    const byCode = CODES[data.code];
    if (byCode && !/CSRF/i.test(detail)) return { key: byCode, text: T[byCode] };
    if (status === 403 && /CSRF/i.test(detail)) return { key: "signed_out", text: T.signed_out };
    // Not in the table: the server's message, its field named in words.
    const said = field ? fieldWords(field, body) + ": " + message : detail;
    return {
      key: "refused_generic",
      text: fmt(T.refused_generic, { detail: said || String(status) }),
    };
  }

  return { words: words, split: split, held: held };
}

export { make, split, RULES };
