/* The rules the tablet needs while it may be offline, read from the server's
 * data. The banker's tableau is NOT written here: it comes from the page
 * (TableauVersion.rows of this table's house rules, json_script "tableau").
 * What is here is the arithmetic of docs/rules.md that the engine applies around
 * that table: points, naturals, the punter's rule, coverage and settlement.
 * tests/tablet/test_guidance_parity.py runs every tableau cell and a few
 * hundred stake sets through this file and through tables/chemmy and
 * requires the same answers.
 *
 * An ES module, pure (no DOM): the coup screen imports it (coup/*.js), and
 * coup.js puts it on window.Chemmy for the tests and the console.
 *
 * Money is held in integer cents (Number is exact to 2^53 cents, far beyond
 * any bank); rates are exact decimal fractions in BigInt.
 */
const RANKS = "A23456789TJQK";
const SUITS = "SHDC";
const POINTS = { A: 1, T: 0, J: 0, Q: 0, K: 0 };
for (let n = 2; n <= 9; n++) POINTS[String(n)] = n;

/** "9h", "10H", "kd", " TS " -> canonical "9H", "TH", "KD", "TS"; else null. */
function parseCard(text) {
  if (typeof text !== "string") return null;
  let t = text.trim().toUpperCase();
  if (t.startsWith("10")) t = "T" + t.slice(2);
  if (t.length !== 2 || !RANKS.includes(t[0]) || !SUITS.includes(t[1])) return null;
  return t;
}

function point(card) {
  return POINTS[card[0]];
}

function total(cards) {
  let sum = 0;
  for (const c of cards) sum += point(c);
  return sum % 10;
}

/** Punter's rule on his two-card total 0..7: "D" draw, "O" optional, "S" stand. */
function punterAction(t) {
  if (t <= 4) return "D";
  if (t === 5) return "O";
  return "S";
}

/** The tableau cell: banker two-card total 0..7, punter's third-card value
 *  (null when the punter stood). Straight from the server's rows. */
function bankerAction(tableau, bankerTotal, third) {
  const row = tableau.rows[String(bankerTotal)];
  return row[third === null || third === undefined ? 0 : 1 + third];
}

function falseDraw(side, p2, b2, third, requiredDraw) {
  return {
    code: "false_draw",
    severity: "warning",
    side: side,
    punter_total: p2,
    banker_total: b2,
    punter_third: third,
    required: requiredDraw ? "draw" : "stand",
    actual: requiredDraw ? "stand" : "draw",
  };
}

function afterNatural(side, natural, card) {
  return {
    code: "draw_after_natural",
    severity: "warning",
    side: side,
    natural: natural,
    card: card,
  };
}

/** Judge a coup as dealt: the same fields as the engine's Verdict.to_dict()
 *  (findings without their message: messages() words them). */
function evaluate(punter, banker, tableau) {
  const p = punter.slice();
  const b = banker.slice();
  const p2 = (point(p[0]) + point(p[1])) % 10;
  const b2 = (point(b[0]) + point(b[1])) % 10;
  const base = {
    punter: p,
    banker: b,
    tableau_version: tableau.version,
  };
  if (p2 >= 8 || b2 >= 8) {
    const natural = p2 >= 8 ? "punter" : "banker";
    const findings = [];
    if (p.length === 3) findings.push(afterNatural("punter", natural, p[2]));
    if (b.length === 3) findings.push(afterNatural("banker", natural, b[2]));
    return Object.assign(base, {
      punter_total: p2,
      banker_total: b2,
      outcome: b2 > p2 ? "banker" : p2 > b2 ? "punter" : "tie",
      natural: natural,
      punter_third: null,
      punter_choice: null,
      banker_choice: null,
      findings: findings,
    });
  }
  const findings = [];
  const punterDrew = p.length === 3;
  const rule = punterAction(p2);
  let punterChoice = null;
  if (rule === "O") punterChoice = punterDrew ? "draw" : "stand";
  else if ((rule === "D") !== punterDrew) {
    findings.push(falseDraw("punter", p2, b2, null, rule === "D"));
  }
  const third = punterDrew ? point(p[2]) : null;
  const pt = punterDrew ? (p2 + third) % 10 : p2;
  const action = bankerAction(tableau, b2, third);
  let bankerChoice = null;
  let bt = b2;
  if (b.length === 3) {
    bt = (b2 + point(b[2])) % 10;
    if (action === "O") bankerChoice = "draw";
    else if (action !== "D") findings.push(falseDraw("banker", p2, b2, third, false));
  } else if (action === "O") bankerChoice = "stand";
  else if (action === "D") findings.push(falseDraw("banker", p2, b2, third, true));
  return Object.assign(base, {
    punter_total: pt,
    banker_total: bt,
    outcome: bt > pt ? "banker" : pt > bt ? "punter" : "tie",
    natural: null,
    punter_third: third,
    punter_choice: punterChoice,
    banker_choice: bankerChoice,
    findings: findings,
  });
}

// ---- house rules: the optional cells a house prescribes ----------------

/** "draw" | "stand" | "free": what the house prescribes at the punter's 5
 *  (side "punter") or at a banker's optional cell. prescriptions is the
 *  server's Prescriptions.to_dict() ({punter_five, banker: {"3/9": ...}}). */
function prescribed(prescriptions, side, bankerTotal, third) {
  if (!prescriptions) return "free";
  if (side === "punter") return prescriptions.punter_five || "free";
  const key = bankerTotal + "/" + (third === null || third === undefined ? "stood" : third);
  return (prescriptions.banker || {})[key] || "free";
}

/** The action the pad plays: the rule's "O" becomes "D" or "S" where the
 *  house prescribes the choice (house = true then). */
function houseAction(action, prescriptions, side, bankerTotal, third) {
  if (action !== "O") return { action: action, house: false };
  const p = prescribed(prescriptions, side, bankerTotal, third);
  if (p === "free") return { action: "O", house: false };
  return { action: p === "draw" ? "D" : "S", house: true };
}

function houseChoice(side, p2, b2, third, wanted, rule) {
  return {
    code: "house_choice",
    severity: "warning",
    side: side,
    punter_total: p2,
    banker_total: b2,
    punter_third: third,
    required: wanted,
    actual: wanted === "draw" ? "stand" : "draw",
    house_rule: rule,
  };
}

/** house_choice findings for a verdict, as tables/chemmy/house.py's
 *  house_findings: a free choice played against the house's prescription. */
function houseFindings(verdict, prescriptions) {
  const found = [];
  if (!prescriptions) return found;
  const p2 = (point(verdict.punter[0]) + point(verdict.punter[1])) % 10;
  const b2 = (point(verdict.banker[0]) + point(verdict.banker[1])) % 10;
  const five = prescriptions.punter_five || "free";
  if (verdict.punter_choice !== null && five !== "free" && verdict.punter_choice !== five) {
    found.push(houseChoice("punter", p2, b2, null, five, "punter_five"));
  }
  if (verdict.banker_choice !== null) {
    const key = b2 + "/" + (verdict.punter_third === null ? "stood" : verdict.punter_third);
    const wanted = (prescriptions.banker || {})[key] || "free";
    if (wanted !== "free" && verdict.banker_choice !== wanted) {
      found.push(houseChoice("banker", p2, b2, verdict.punter_third, wanted, key));
    }
  }
  return found;
}

// ---- money --------------------------------------------------------------

/** "1,234.5" / "1234.50" / 12 -> cents (integer), or null if not money. */
function toCents(value) {
  if (typeof value === "number") value = String(value);
  if (typeof value !== "string") return null;
  const t = value.replace(/[\s\u00a0\u202f,']/g, "");
  const m = /^(\d{1,12})(?:\.(\d{1,2}))?$/.exec(t);
  if (!m) return null;
  return Number(m[1]) * 100 + Number((m[2] || "").padEnd(2, "0"));
}

/** cents -> "1234.50", the API's form. */
function centsToString(cents) {
  const neg = cents < 0;
  const a = Math.abs(cents);
  const s = Math.floor(a / 100) + "." + String(a % 100).padStart(2, "0");
  return (neg ? "-" : "") + s;
}

/** "0.0500" -> [500n, 10000n]: an exact fraction. */
function fraction(text) {
  const [whole, frac = ""] = String(text).split(".");
  return [BigInt(whole + frac), 10n ** BigInt(frac.length)];
}

/** Commission on C cents: rate x C, rounded to a multiple of unit in the
 *  house's mode (docs/rules.md, "House rules"): half_up (the default),
 *  half_even, or down (toward zero). */
function commission(coveredCents, rate, unitCents, mode) {
  const [num, den] = fraction(rate);
  const n = BigInt(coveredCents) * num; // exact commission x den, in cents
  const d = den * BigInt(unitCents);
  let steps;
  if (mode === "down") {
    steps = n / d; // n >= 0: truncation is toward zero
  } else if (mode === "half_even") {
    const q = n / d;
    const twice = 2n * (n - q * d); // compare the remainder with d / 2
    steps = twice > d || (twice === d && q % 2n === 1n) ? q + 1n : q;
  } else {
    steps = (2n * n + d) / (2n * d); // half up, n >= 0
  }
  return Number(steps * BigInt(unitCents));
}

// ---- stakes -------------------------------------------------------------

const PRIORITY = { suivi: 0, banco_solo: 1, banco_deux: 2, banco_avec: 3, none: 4 };

/** Cover stakes [{seat|standing, amount (cents), announcement}] from the bank,
 *  as chemmy.cover_stakes does for valid input. Returns cents. */
function cover(stakes, bank, bankerSeat, seats, rule, maximumBank) {
  // House rules (docs/rules.md): a maximum bank caps what is in play (the
  // excess is garaged); "all_or_nothing" declines whole a stake that does
  // not fit in what is left.
  const inPlay =
    maximumBank !== null && maximumBank !== undefined ? Math.min(bank, maximumBank) : bank;
  const whole = rule === "all_or_nothing";
  const valid = stakes.map(function (s, i) {
    const rotation =
      s.seat !== null && s.seat !== undefined
        ? (((s.seat - bankerSeat - 1) % seats) + seats) % seats
        : seats + i;
    return { index: i, stake: s, rotation: rotation };
  });
  const order = valid.slice().sort(function (a, b) {
    const pa = PRIORITY[a.stake.announcement || "none"];
    const pb = PRIORITY[b.stake.announcement || "none"];
    return pa - pb || a.rotation - b.rotation;
  });
  let remaining = inPlay;
  const covered = {};
  for (const v of order) {
    let take = Math.min(v.stake.amount, remaining);
    if (whole && take < v.stake.amount) take = 0;
    covered[v.index] = take;
    remaining -= take;
  }
  let holder = null;
  for (const v of valid) {
    const c = covered[v.index];
    if (c <= 0) continue;
    if (holder === null) {
      holder = v;
      continue;
    }
    const h = covered[holder.index];
    if (c > h || (c === h && v.rotation < holder.rotation)) holder = v;
  }
  return {
    bank: bank,
    covered: inPlay - remaining,
    garage: bank - (inPlay - remaining),
    stakes: valid.map(function (v) {
      return {
        index: v.index,
        covered: covered[v.index],
        declined: v.stake.amount - covered[v.index],
      };
    }),
    punter_index: holder === null ? null : holder.index,
    punter_seat: holder === null ? null : holder.stake.seat ?? null,
    punter_standing: holder === null ? null : holder.stake.standing ?? null,
  };
}

/** Settle on the covered amount (docs/rules.md, "Settlement"). */
function settle(outcome, coverage, rate, unitCents, mode) {
  const c = coverage.covered;
  if (outcome === "banker") {
    const com = commission(c, rate, unitCents, mode);
    return {
      outcome: outcome,
      covered: c,
      garage: coverage.garage,
      commission: com,
      bank_after: c + c - com,
      payouts: coverage.stakes.map((s) => -s.covered),
      turn_ends: false,
    };
  }
  if (outcome === "punter") {
    return {
      outcome: outcome,
      covered: c,
      garage: coverage.garage,
      commission: 0,
      bank_after: 0,
      payouts: coverage.stakes.map((s) => s.covered),
      turn_ends: true,
    };
  }
  return {
    outcome: outcome,
    covered: c,
    garage: coverage.garage,
    commission: 0,
    bank_after: c,
    payouts: coverage.stakes.map(() => 0),
    turn_ends: false,
  };
}

export {
  RANKS,
  SUITS,
  parseCard,
  point,
  total,
  punterAction,
  bankerAction,
  evaluate,
  prescribed,
  houseAction,
  houseFindings,
  toCents,
  centsToString,
  commission,
  cover,
  settle,
};
