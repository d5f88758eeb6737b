"""5. Every coup settled again, a share of the sessions per process.

The ledger part is read by each process; a process parses only the lines of
its own sessions (every `shares`-th, counted by the session lines met) and
the lines before the first session (the tableau versions, tables and house
rules every session needs). A session line is recognised by its top-level
label near the start of the line, as the casino writes it; a line written
otherwise is simply not taken for a session's first, so its rows go to the
session before, in the same process: every line is still taken by exactly
one process (the lines before the first session line are read by all, for
the tables and rules, and taken by the first), a session's rows by the same
one, and a misplaced row is named (outside any session, or a session's
total that does not add up), never skipped or counted twice
(tests/evidence/test_jobs.py). The digests of the rows are checked
elsewhere (verifier.py, `check_ledger`), in the main process, once.
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


def resettle(v, share: int, shares: int) -> dict:
    """Re-settle this share's sessions; what it found, for the main process
    (`merge`): problems, the commission per table and day, counts."""
    kept = v.problems, v.sums, v.counts, v.corrected
    v.problems, v.sums, v.counts, v.corrected = Problems(), {}, Counter(), []
    try:
        _walk(v, share, shares)
        return {"problems": list(v.problems), "derived": v.problems.derived,
                "dropped": v.problems.dropped, "sums": v.sums,
                "counts": v.counts, "corrected": v.corrected}
    finally:
        v.problems, v.sums, v.counts, v.corrected = kept


def _walk(v, share: int, shares: int) -> None:
    v.globals = {}
    group, session = -1, None  # -1: the lines before the first session
    for n, raw in raw_lines(v.zip, "ledger.jsonl"):
        if SESSION_LINE in raw[:256]:
            group += 1
        if group >= 0 and group % shares != share:
            continue
        v.at = f"ledger.jsonl line {n}"
        item = parse(raw, v.at)
        label, key = item["label"], item["key"]
        if group < 0 and share != 0 and label not in GLOBAL:
            continue  # before the first session: share 0 takes all but these
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


def _task(v, share: int, shares: int, pipe) -> None:
    """In a forked process: this share's findings, sent back whole."""
    try:
        v.zip = open_bundle(v.path)  # its own file: not the parent's offset
        out = resettle(v, share, shares)
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
    """One process per CPU (at most 4), none when there is one CPU or no
    fork (each then re-settles in the main process)."""
    import multiprocessing

    cpus = min(os.cpu_count() or 1, 4)
    return cpus if cpus > 1 and "fork" in multiprocessing.get_all_start_methods(
    ) else 0


class Resettlers:
    """The re-settling processes (forked: they share the engine and the
    opened manifest), started before the main process checks the parts, the
    log and the rows, and waited for after; stopped at once when the main
    process finds the bundle unreadable."""

    def __init__(self, v, jobs: int):
        self.v, self.jobs, self.workers = v, jobs, []

    def __enter__(self):
        import multiprocessing

        fork = multiprocessing.get_context("fork") if self.jobs > 0 else None
        for k in range(self.jobs):
            mine, theirs = fork.Pipe(duplex=False)
            process = fork.Process(target=_task, args=(self.v, k, self.jobs, theirs),
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
        """Their findings into the verifier's (in this process when none)."""
        v = self.v
        results = self._results() if self.workers else [resettle(v, 0, 1)]
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
