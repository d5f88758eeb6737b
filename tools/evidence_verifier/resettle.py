"""5. Every coup settled again, a share of the sessions per process.

The ledger part is read by each process; a process parses only the lines of
the sessions it takes (counted by the session lines met) and the lines
before the first session (the tableau versions, tables and house rules
every session needs). A session line is recognised by its top-level
label near the start of the line, as the casino writes it; a line written
otherwise is simply not taken for a session's first, so its rows go to the
session before, in the same process: every line is still taken by exactly
one process (the lines before the first session line are read by all, for
the tables and rules, and taken by the first), a session's rows by the same
one, and a misplaced row is named (outside any session, or a session's
total that does not add up), never skipped or counted twice
(tests/evidence/test_jobs.py). The digests of the rows are checked
elsewhere (verifier.py, `check_ledger`), in the main process, once.

Who takes which session. With processes, a session is taken by the first
process to reach its line (`Claims`: one number shared by all, the highest
session taken; a process reaching a session past it takes it, any other
it leaves). The main process, its own checks done, joins in from the start
of the part: the work is shared as it goes, not split in advance, so the
two cores of a small machine are both busy to the end whatever the mix of
log, rows and coups (issue 34 item 6). Each session is still taken by
exactly one process: each goes through the sessions in order, and the
shared number only grows, so a session none has taken is above it when
the first process reaches it. Without processes (`--jobs 0`), the main
process takes them all.
"""

from __future__ import annotations

import os
from collections import Counter

from .common import Problems, Unreadable, name_of
from .reading import open_bundle, parse, raw_lines
from .session import SessionWalk

SESSION_LINE = b',"label":"tables.tablesession","row":'
GLOBAL = ("tables.tableauversion", "tables.table", "tables.houserules")
IN_SESSION = ("tables.shoe", "tables.bankerturn", "tables.coup", "tables.stake",
              "tables.finding", "audit.cagnottecount", "tables.shoefinding",
              "tables.shoerelease", "audit.cagnotteattestation")


class Claims:
    """The highest session taken so far (-2: none; -1 stands for the lines
    before the first session), shared by the processes (forked)."""

    def __init__(self, context):
        self.high = context.Value("q", -2)  # with its own lock

    def take(self, group: int) -> bool:
        with self.high.get_lock():
            if group > self.high.value:
                self.high.value = group
                return True
            return False


def resettle(v, claims: Claims | None = None) -> dict:
    """Re-settle the sessions this process reaches first (without `claims`:
    all of them); what it found, for the main process (`merge`):
    problems, the commission per table and day, counts."""
    kept = v.problems, v.sums, v.counts, v.corrected
    v.problems, v.sums, v.counts, v.corrected = Problems(), {}, Counter(), []
    try:
        _walk(v, claims)
        return {"problems": list(v.problems), "derived": v.problems.derived,
                "dropped": v.problems.dropped, "sums": v.sums,
                "counts": v.counts, "corrected": v.corrected}
    finally:
        v.problems, v.sums, v.counts, v.corrected = kept


def _walk(v, claims: Claims | None) -> None:
    v.globals = {}
    group, session = -1, None  # -1: the lines before the first session
    # the lines before the first session: every process reads the tables,
    # rules and tableaux among them, one takes the rest
    first = claims is None or claims.take(-1)
    mine = True
    for n, raw in raw_lines(v.zip, "ledger.jsonl"):
        if SESSION_LINE in raw[:256]:
            group += 1
            mine = claims is None or claims.take(group)
        if not mine:
            continue
        v.at = f"ledger.jsonl line {n}"
        item = parse(raw, v.at)
        label, key = item["label"], item["key"]
        if group < 0 and not first and label not in GLOBAL:
            continue  # before the first session: taken by one process
        full = v.full(label, item["row"])
        full["_id"], full["_key"] = item.get("id"), key
        if label in GLOBAL:
            v.globals.setdefault(label, {})[key] = full
        elif label == "tables.tablesession":
            if session is not None:
                session.finish()
            session = SessionWalk(v, full)
        elif label in IN_SESSION:
            if session is not None:
                session.take(label, full)
            else:
                v.problems.add(f"{name_of(label, key)}: outside any session")
    if session is not None:
        session.finish()


def _task(v, claims: Claims, pipe) -> None:
    """In a forked process: the findings of the sessions it took, sent back
    whole."""
    try:
        v.zip = open_bundle(v.path)  # its own file: not the parent's offset
        out = resettle(v, claims)
    except Unreadable as exc:
        out = {"unreadable": str(exc)}
    except MemoryError:
        out = {"unreadable": f"{v.at}: more memory needed than this program "
               "allows itself (--memory-limit)"}
    except Exception as exc:  # noqa: BLE001 - a malformed bundle: exit 2, where
        out = {"unreadable": f"{v.at}: malformed bundle ({type(exc).__name__}: "
               f"{str(exc)[:200]})"}
    pipe.send(out)
    pipe.close()


def default_jobs() -> int:
    """One process per CPU but the main one's (at most 3), which joins them
    when its own checks are done; none when there is one CPU or no fork
    (every session then re-settled in the main process)."""
    import multiprocessing

    cpus = min(os.cpu_count() or 1, 4)
    return cpus - 1 if cpus > 1 and (
        "fork" in multiprocessing.get_all_start_methods()) else 0


class Resettlers:
    """The re-settling processes (forked: they share the engine and the
    opened manifest), started before the main process checks the parts, the
    log and the rows, and waited for after; stopped at once when the main
    process finds the bundle unreadable."""

    def __init__(self, v, jobs: int):
        self.v, self.jobs, self.workers, self.claims = v, jobs, [], None

    def __enter__(self):
        import multiprocessing

        fork = multiprocessing.get_context("fork") if self.jobs > 0 else None
        if fork is not None:
            self.claims = Claims(fork)
        for _ in range(self.jobs):
            mine, theirs = fork.Pipe(duplex=False)
            process = fork.Process(target=_task, args=(self.v, self.claims, theirs),
                                   daemon=True)
            process.start()
            theirs.close()
            self.workers.append((process, mine))
        return self

    def __exit__(self, *exc):
        for process, _ in self.workers:
            if exc[0] is not None:
                process.terminate()
            process.join()
        return False

    def _results(self) -> list[dict]:
        out = []
        for process, pipe in self.workers:
            try:
                out.append(pipe.recv())
            except EOFError:  # it died without a word (killed, out of memory)
                out.append({"unreadable": f"a re-settling process ended with "
                            f"status {process.join() or process.exitcode}"})
        return out

    def merge(self) -> None:
        """Their findings into the verifier's, this process taking the
        sessions none has reached yet (all of them when there are none)."""
        v = self.v
        results = [resettle(v, self.claims), *self._results()]
        for r in results:
            if "unreadable" in r:
                raise Unreadable(r["unreadable"])
        v.sums, v.corrected = {}, []
        for r in results:
            v.corrected += r["corrected"]
            for text in r["problems"]:
                v.problems.add(text)
            for text in r["derived"]:
                v.problems.add_derived(text)
            v.problems.dropped += r["dropped"]
            v.counts.update(r["counts"])
            for cell, sums in r["sums"].items():
                into = v.sums.setdefault(cell, dict.fromkeys(sums, 0))
                for name, value in sums.items():
                    into[name] += value
        v.sums = dict(sorted(v.sums.items()))
