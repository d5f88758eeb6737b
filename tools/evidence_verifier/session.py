"""One session re-settled coup by coup."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from .common import COUP_MONEY, ZERO, dec

MONEY = frozenset((*COUP_MONEY, "declared_bank"))
OUTCOMES = {"banker": "banker_wins", "punter": "punter_wins", "tie": "ties"}


class SessionWalk:
    """One session, coup by coup, as audit/ledger_check/walk.py walks it."""

    def __init__(self, v, session: dict):  # v: the Verifier walking it
        self.v, self.session = v, session
        self.shoes: dict[int, dict] = {}
        self.turns: dict[int, dict] = {}
        self.state: dict[int, dict] = {}
        self.shoe_runs: dict[int, dict] = {}
        self.counts: list[dict] = []
        self.group: list[dict] = []  # revisions of one (shoe, seq)
        self.current: dict | None = None
        self.stored = self.resettled = ZERO
        self.name = f"session {session['_id']}"

    def take(self, label: str, row: dict) -> None:
        pk = row["_id"]
        if label == "tables.shoe":
            self.shoes[pk] = row
            self.shoe_runs[pk] = {"dealt": 0, "seen": Counter(), "seqs": []}
        elif label == "tables.bankerturn":
            self.turns[pk] = row
            self.state[pk] = {"bank": dec(row["opening_bank"]), "coups": 0,
                              "garage": ZERO, "commission": ZERO, "last": None,
                              "suivi": None, "tied": None}
        elif label == "tables.coup":
            self.flush_if_new(row)
            row["_stakes"], row["_findings"] = [], []
            self.group.append(row)
        elif label == "tables.stake":
            self.group[-1]["_stakes"].append(row) if self.group else None
        elif label == "tables.finding":
            self.group[-1]["_findings"].append(row) if self.group else None
        elif label == "audit.cagnottecount":
            self.counts.append(row)

    def flush_if_new(self, row: dict) -> None:
        if self.group and (self.group[-1]["shoe_id"], self.group[-1]["seq"]) != (
                row["shoe_id"], row["seq"]):
            self.flush()

    def flush(self) -> None:
        if self.group:
            revisions = [c["revision"] for c in self.group]
            if revisions != list(range(1, len(revisions) + 1)):
                self.v.problems.add_derived(
                    f"coup {self.group[-1]['_key']} (shoe {self.group[-1]['shoe_id']}"
                    f", seq {self.group[-1]['seq']}): revisions {revisions}, "
                    "expected 1 to n")
            if len(self.group) > 1:  # checked against the log in the main process
                self.v.corrected.append([
                    {"_key": c["_key"], "shoe_id": c["shoe_id"], "seq": c["seq"]}
                    for c in self.group])
            self.coup(self.group[-1])
        self.group = []

    def coup(self, c: dict) -> None:
        v, ch = self.v, self.v.engine
        shoe = self.shoes.get(c["shoe_id"])

        def add(what: str) -> None:  # the subject written only when needed
            v.problems.add_derived(
                f"coup {c['_key']} (shoe {c['shoe_id']}, seq {c['seq']}, rev "
                f"{c['revision']}): {what}")

        rules = v.globals.get("tables.houserules", {}).get(str(c["rules_id"]))
        turn = self.turns.get(c["turn_id"])
        if shoe is None or rules is None or turn is None:
            add("its " + ("shoe" if shoe is None else "house rules" if rules is None
                          else "banker turn") + " is not in the bundle")
            return
        table = v.globals.get("tables.table", {}).get(str(rules["table_id"]))
        tableau_row = v.globals.get("tables.tableauversion", {}).get(
            str(rules["tableau_id"]))
        if table is None or tableau_row is None:
            add("its table or tableau version is not in the bundle")
            return
        if rules["table_id"] != self.session["table_id"]:
            add(f"house rules of table {rules['table_id']}, session of table "
                f"{self.session['table_id']}")
        tableau = tableau_row.get("_engine")
        if tableau is None:  # parsed once per version
            tableau = tableau_row["_engine"] = ch.Tableau.from_dict(
                {"version": tableau_row["version"], "rows": tableau_row["rows"]})
        if c["tableau_version"] != tableau.version:
            add(f"tableau_version {c['tableau_version']}, its house rules' is "
                f"{tableau.version}")
        local = datetime.fromisoformat(c["created_at"]).astimezone(v.tz)
        day = (local - timedelta(hours=rules["gaming_day_cutoff"])).date()
        if c["gaming_day"] != day.isoformat():
            add(f"gaming_day {c['gaming_day']}, recorded at {c['created_at']} it "
                f"is {day}")
        if c["banker_seat"] != turn["seat"]:
            add(f"banker_seat {c['banker_seat']}, its turn's seat is {turn['seat']}")
        state, run = self.state[c["turn_id"]], self.shoe_runs[c["shoe_id"]]
        carried = state["bank"]
        bank = carried if carried is not None and carried > 0 else dec(
            c["bank_before"])
        try:
            values, stakes, codes, suivi, tied = self.resettle(
                c, rules, tableau, table["seats"], bank, shoe, run)
        except (ch.CoupError, ValueError, TypeError, KeyError) as exc:
            add(f"refused by the rules ({exc})")
            values = None
        if values is not None:
            for name, expected in values.items():
                stored = c.get(name)
                if name in MONEY:
                    stored = dec(stored)
                if stored != expected:
                    add(f"{name} stored {stored}, re-settled {expected}")
            rows = sorted(c["_stakes"], key=lambda s: s["position"])
            if [s["position"] for s in rows] != list(range(len(stakes))):
                add(f"stakes at positions {[s['position'] for s in rows]}, the "
                    f"coup has {len(stakes)}")
            for s, (covered, declined, payout) in zip(rows, stakes, strict=False):
                who = f"seat {s['seat']}" if s.get("seat") is not None else s.get(
                    "standing")
                for name, expected in (("covered", covered), ("declined", declined),
                                       ("payout", payout)):
                    if dec(s[name]) != expected:
                        add(f"stake {s['position']} ({who}) {name} stored "
                            f"{s[name]}, re-settled {expected}")
            stored_codes = sorted((f["code"], f.get("side") or "")
                                  for f in c["_findings"])
            if stored_codes != codes:
                add(f"findings stored {stored_codes or 'none'}, re-derived "
                    f"{codes or 'none'}")
        else:
            values = {n: dec(c[n]) for n in COUP_MONEY}
            values["outcome"] = c["outcome"]
            suivi = tied = None
        cards = list(c["punter_cards"]) + list(c["banker_cards"])
        run["dealt"] += len(cards)
        run["seen"].update(cards)
        run["seqs"].append(c["seq"])
        state.update(bank=values["bank_after"], last=values["outcome"],
                     suivi=suivi, tied=tied)
        state["coups"] += 1
        state["garage"] += values["garage"]
        state["commission"] += values["commission"]
        self.stored += dec(c["commission"])
        self.resettled += values["commission"]
        v.counts["coups re-settled"] += 1
        where = (rules["table_id"], c["gaming_day"])
        cell = v.sums.get(where)
        if cell is None and v.in_period(*where):
            cell = v.sums[where] = {
                "coups": 0, "banker_wins": 0, "punter_wins": 0, "ties": 0,
                "covered": ZERO, "commission": ZERO}
        if cell is not None:
            cell["coups"] += 1
            outcome = OUTCOMES.get(values["outcome"])
            if outcome:
                cell[outcome] += 1
            cell["covered"] += values["covered"]
            cell["commission"] += values["commission"]

    def resettle(self, c, rules, tableau, seats, bank, shoe, run):
        ch = self.v.engine
        verdict = ch.evaluate(c["punter_cards"], c["banker_cards"], tableau=tableau)
        stakes = sorted(c["_stakes"], key=lambda s: s["position"])
        inputs = [ch.StakeIn(amount=dec(s["amount"]), seat=s.get("seat"),
                             standing=s.get("standing") or None,
                             announcement=ch.Announcement(s["announcement"]))
                  for s in stakes]
        called = next((s.seat for s in inputs
                       if s.announcement is ch.Announcement.SUIVI), None)
        coverage = ch.cover_stakes(
            inputs, bank=bank, banker_seat=c["banker_seat"], seats=seats,
            minimum_banco=dec(rules["minimum_banco"]), suivi_seat=called,
            cover=rules["cover_rule"], maximum_bank=dec(rules["maximum_bank"]))
        settlement = ch.settle(
            verdict.outcome, coverage,
            commission_rate=dec(rules["commission_rate"]),
            commission_unit=dec(rules["commission_unit"]),
            rounding=ch.rounding_mode(rules["commission_rounding"]))
        cards = list(verdict.punter) + list(verdict.banker)
        prescriptions = ch.Prescriptions(
            punter_five=rules["punter_five"],
            banker=rules.get("banker_prescriptions") or {})
        findings = [*verdict.findings,
                    *ch.house_findings(verdict, prescriptions)] + ch.shoe_findings(
            decks=shoe["decks"], burned=shoe["burned"], dealt_before=run["dealt"],
            seen={k: run["seen"][k] for k in set(cards) if k in run["seen"]},
            new_cards=cards)
        if c.get("declared_bank") is not None:
            mismatch = ch.bank_mismatch_finding(declared=dec(c["declared_bank"]),
                                                carried=bank)
            if mismatch is not None:
                findings.append(mismatch)
        lost = settlement.turn_ends
        values = {
            "punter_cards": list(verdict.punter), "banker_cards": list(verdict.banker),
            "punter_total": verdict.punter_total,
            "banker_total": verdict.banker_total,
            "outcome": verdict.outcome.value, "natural": verdict.natural or "",
            "punter_choice": verdict.punter_choice or "",
            "banker_choice": verdict.banker_choice or "",
            "punter_seat": coverage.punter_seat,
            "punter_standing": coverage.punter_standing or "",
            "bank_before": settlement.bank_before, "covered": settlement.covered,
            "garage": settlement.garage, "commission": settlement.commission,
            "bank_after": settlement.bank_after,
            "cards_left_before": 52 * shoe["decks"] - shoe["burned"] - run["dealt"],
            "next_banker_seat": (c["banker_seat"] % seats + 1) if lost else None,
            "finding_count": len(findings),
        }
        holder = (coverage.stakes[coverage.punter_index]
                  if coverage.punter_index is not None else None)
        suivi = None
        if (settlement.outcome is ch.Outcome.BANKER and holder is not None
                and holder.stake.announcement in (ch.Announcement.BANCO_SOLO,
                                                  ch.Announcement.SUIVI)):
            suivi = holder.stake.seat
        tied = None
        if rules["tie_rule"] == "stay" and settlement.outcome is ch.Outcome.TIE:
            tied = [[s.stake.seat, s.stake.standing or "", f"{s.covered:.2f}"]
                    for s in coverage.stakes if s.covered > 0] or None
        stakes_out = [(s.covered, s.declined, p)
                      for s, p in zip(coverage.stakes, settlement.payouts,
                                      strict=True)]
        codes = sorted((f.code, f.side or "") for f in findings)
        return values, stakes_out, codes, suivi, tied

    def finish(self) -> None:
        self.flush()
        v = self.v
        for pk, turn in sorted(self.turns.items()):
            st = self.state[pk]
            subject = f"banker turn {pk} ({self.name}, number {turn['number']})"
            bank = st["bank"] if st["coups"] else dec(turn["opening_bank"])
            expected = {"bank": bank, "coups": st["coups"],
                        "garage_total": st["garage"],
                        "commission_total": st["commission"]}
            if turn.get("closed_at") is not None:
                lost = st["last"] == "punter"
                expected["closing_amount"] = st["garage"] if lost else (
                    bank + st["garage"])
            for name, value in expected.items():
                stored = turn.get(name)
                stored = stored if name == "coups" else dec(stored)
                if stored != value:
                    v.problems.add_derived(f"{subject}: {name} stored {stored}, "
                                   f"re-computed {value}")
        for pk, shoe in sorted(self.shoes.items()):
            run = self.shoe_runs[pk]
            subject = f"shoe {pk} ({self.name}, number {shoe['number']})"
            top = max(run["seqs"], default=0)
            if run["seqs"] != list(range(1, top + 1)):
                missing = sorted(set(range(1, top + 1)) - set(run["seqs"]))
                v.problems.add_derived(f"{subject}: coups {missing} missing from the "
                               "bundle (seqs not contiguous)")
            if shoe["next_seq"] != top + 1:
                v.problems.add_derived(f"{subject}: next_seq {shoe['next_seq']}, the "
                               f"bundle's coups end at seq {top}")
            if shoe["dealt"] != run["dealt"]:
                v.problems.add_derived(f"{subject}: dealt {shoe['dealt']}, re-computed "
                               f"{run['dealt']}")
            if dict(shoe["card_counts"] or {}) != dict(run["seen"]):
                v.problems.add_derived(
                    f"{subject}: card_counts differ from its coups' cards")
        if self.stored != self.resettled:
            v.problems.add_derived(f"{self.name}: cagnotte (commission over its coups) "
                           f"stored {self.stored}, re-settled {self.resettled}")
        for count in self.counts:
            if dec(count["variance"]) != dec(count["counted"]) - dec(
                    count["computed"]):
                v.problems.add_derived(f"cagnotte count {count['_id']} ({self.name}): "
                               "variance is not counted - computed")
