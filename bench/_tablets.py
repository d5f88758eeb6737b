"""Simulated croupier tablets for bench/load.py, bench/faults.py and
bench/bench_floor.py.

A tablet is a thread with its own keep-alive HTTP/1.1 connection (http.client)
and its own API token. It deals real coups from the table's shuffled shoe and
stakes them by the table's house rules (bench/_dealer.py: the decks, the
tableau and prescribed choices, the minimum banco, a tie's stakes carried
under tie "stay"), records them with an Idempotency-Key, as the tablet app
does, and behaves like a tablet on a flaky network:

- sometimes it re-sends a coup it already got a 201 for (a double tap, a
  retry queue replayed): the answer must be a 200 with the same coup id;
- sometimes it gives up waiting after a few milliseconds (a timeout), drops
  the connection and re-sends the same key and body: the first request may
  well have committed, and the retry must then get that coup back (200);
- a transport error, a 5xx, a 503 or a 429 means "fate unknown": retry the
  same key and body on the same shoe, with a short back-off, until answered.

A definite refusal (409: the shoe is full or closed, no open banker turn)
means nothing was written, so the tablet repairs the table (new shoe, new
turn) and sends the same key again, possibly to the new shoe.

Several tablets may share one table (the shared-table case): they share the
table's state (current shoe and session ids, the shoe's cards, what the
latest coup left on the table) under a lock, as tablets at one table would
share what the table shows. Two of them may post at once: a coup sent before
its tablet heard of another's tie is refused (400, the tie's stakes stay on
the table); nothing was written, and the tablet sends it again with them.

Every loop is bounded (deadline and attempt caps) and stops by itself.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field

from _dealer import House

MAX_ATTEMPTS = 400  # per coup; with back-off this is far past any deadline
TIE_NEWS_WAIT = 10.0  # s: a refusal for a tie's stakes waits this long to learn it


@dataclass
class TableState:
    """What the tablets at one table know about it: ids to post to, its house
    rules, the shoe as dealt (one shoe, whichever tablet deals from it) and
    what the latest coup they heard of left on the table (tie "stay")."""

    table: int
    session: int
    shoe: int
    house: House = field(default_factory=House)
    burned: int = 5  # the first shoe's, as opened
    lock: threading.Lock = field(default_factory=threading.Lock)
    shoes_opened: int = 0
    turns_opened: int = 0
    stays: list | None = None  # House.stays of the latest coup heard of
    seen: tuple[int, int] = (0, 0)  # that coup's (shoe, seq)

    def __post_init__(self) -> None:
        self.news = threading.Condition(self.lock)
        self.rng = random.Random(self.table)  # the table's shuffles
        self.cards = self.house.new_shoe(self.rng, self.burned)

    def learn(self, coup: dict) -> None:
        """A coup the server acknowledged: if it is the latest heard of, what
        it leaves on the table is what the next coup must carry."""
        with self.news:
            at = (coup["shoe"], coup["seq"])
            if at > self.seen:
                self.seen, self.stays = at, self.house.stays(coup)
                self.news.notify_all()

    def newer(self, seen: tuple[int, int], timeout: float):
        """Wait until a coup later than `seen` is heard of; its (seen, stays),
        or None after `timeout` seconds."""
        with self.news:
            if self.news.wait_for(lambda: self.seen > seen, timeout=timeout):
                return self.seen, self.stays
        return None


@dataclass
class Tally:
    """One tablet's record of the run. `acked` is the tablet's truth: key ->
    the coup id the server acknowledged (201, or 200 for a replay)."""

    acked: dict[str, int] = field(default_factory=dict)
    ack_times: list[float] = field(default_factory=list)
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (t0, s)
    # each latency's X-Request-ID (the server's access log names it)
    request_ids: list[str] = field(default_factory=list)
    created: int = 0
    replays_asked: int = 0  # deliberate re-sends after a 201
    replays_ok: int = 0  # ... answered 200 with the same coup
    timeouts: int = 0  # gave up waiting, then retried the same key
    timeouts_committed: int = 0  # ... and the retry found the coup committed
    unknown_fate: int = 0  # transport errors and 5xx: retried the same key
    conflicts: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    ties: int = 0  # coups acknowledged as ties (tie "stay": stakes carried)

    def note(self, what: dict, key: str) -> None:
        what[key] = what.get(key, 0) + 1


class Tablet:
    def __init__(self, port: int, token: str, name: str, timeout: float = 30.0):
        self.port, self.name, self.timeout = port, name, timeout
        self.conn: http.client.HTTPConnection | None = None
        self.headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "X-Device": name,
        }

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def request(
        self,
        method: str,
        path: str,
        body=None,
        *,
        headers: dict | None = None,
        wait: float | None = None,
    ) -> tuple[int, dict | None]:
        """One HTTP exchange. Raises OSError / http.client errors on transport
        failure and TimeoutError when `wait` (seconds) runs out; the caller
        decides. Reconnects as needed (keep-alive otherwise)."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(
                "127.0.0.1", self.port, timeout=self.timeout
            )
        data = None if body is None else json.dumps(body).encode()
        try:
            self.conn.request(
                method, path, body=data, headers={**self.headers, **(headers or {})}
            )
            if wait is not None and self.conn.sock is not None:
                self.conn.sock.settimeout(wait)
            resp = self.conn.getresponse()
            payload = resp.read()
            if self.conn.sock is not None:
                self.conn.sock.settimeout(self.timeout)
            if resp.getheader("Connection", "").lower() == "close":
                self.close()
        except TimeoutError:
            self.close()  # the server may still commit what it was sent
            raise TimeoutError from None
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = None
        return resp.status, parsed


@dataclass
class Behaviour:
    replay_rate: float = 0.05  # re-send a 201'd coup
    timeout_rate: float = 0.05  # give up waiting after 1-15 ms
    backoff: float = 0.05  # first back-off after an unknown fate (doubles, capped)
    backoff_cap: float = 0.5


def run_tablet(
    *,
    tablet: Tablet,
    table: TableState,
    tally: Tally,
    seed: int,
    stop: float,
    give_up: float,
    behaviour: Behaviour,
    tag: str,
) -> None:
    """Record coups until `stop`; a coup in flight at `stop` is resolved (its
    fate learned) until `give_up`, then reported unresolved."""
    rng = random.Random(seed)
    k = 0
    while time.monotonic() < stop and k < 1_000_000:
        punter, banker = deal_next(tablet, table, tally, rng)
        fresh = table.house.stakes(rng)
        with table.lock:
            seen, stays = table.seen, table.stays
        key = f"{tag}-{k}"
        k += 1
        # house rule tie "stay": what the last tie left on the table is this
        # coup's stakes (House.stays); otherwise fresh ones
        body = {"punter": punter, "banker": banker, "stakes": stays or fresh}
        record_one(tablet, table, tally, rng, key, body, give_up, behaviour,
                   fresh=fresh, seen=seen)


def deal_next(tablet, table, tally, rng) -> tuple[list, list]:
    """The next coup's cards from the table's shoe, by the house rules; at
    the cut card one tablet closes the shoe and opens the next."""
    with table.lock:
        if len(table.cards) < 7:
            _replace_shoe(tablet, table, tally)
        return table.house.deal(rng, table.cards)


def record_one(tablet, table, tally, rng, key, body, give_up, behaviour, *,
               fresh=None, seen=None):
    """Send one coup until the server has answered for it (201 or 200), or it
    is refused for good, or `give_up` passes. Returns the coup the server
    acknowledged (its JSON), else None.

    `seen` (the table's latest coup when the body was made) and `fresh` (its
    stakes without a tie's): a refusal for a tie's stakes is another tablet's
    tie this one had not heard of yet. It waits to hear of it and sends the
    coup again with what stays (nothing was written: the same key)."""
    with table.lock:
        shoe = table.shoe
    wait = rng.uniform(0.001, 0.015) if rng.random() < behaviour.timeout_rate else None
    timed_out, tried = False, []
    pause = behaviour.backoff
    for _attempt in range(MAX_ATTEMPTS):
        if time.monotonic() > give_up:
            tally.unresolved.append(key)
            return None
        t0 = time.monotonic()
        rid = f"{key}.{_attempt}"
        try:
            status, data = tablet.request(
                "POST",
                f"/api/v1/shoes/{shoe}/coups/",
                body,
                headers={"Idempotency-Key": key, "X-Request-ID": rid},
                wait=wait,
            )
        except TimeoutError:
            tally.timeouts += 1
            timed_out, wait = True, None  # the retry waits as long as it takes
            continue
        except (OSError, http.client.HTTPException):
            tally.unknown_fate += 1
            time.sleep(pause)
            pause = min(pause * 2, behaviour.backoff_cap)
            continue
        tally.latencies.append((t0, time.monotonic() - t0))
        tally.request_ids.append(rid)
        tally.note(tally.statuses, status)
        if status in (200, 201):
            _acked(tablet, table, tally, key, status, data, timed_out)
            if status == 201 and rng.random() < behaviour.replay_rate:
                replay(tablet, tally, shoe, key, body, data["id"])
            return data
        if status in (429, 500, 502, 503, 504):
            tally.unknown_fate += 1
            time.sleep(pause)
            pause = min(pause * 2, behaviour.backoff_cap)
            continue
        if status == 400 and seen is not None and _stays_refused(data):
            tally.note(tally.conflicts, "tie stakes")
            news = table.newer(seen, TIE_NEWS_WAIT)
            if news is not None:
                seen, stays = news
                tried.append(body)
                body = {**body, "stakes": stays or fresh}
                continue
        if status == 409 and data:
            what = next((k for k in data if k not in ("detail", "code")), "?")
            tally.note(tally.conflicts, what)
            if what == "Idempotency-Key" and tried:
                # A body sent before the tie was heard of committed after all
                # (a retry overtook it): ask for that one (200, its coup).
                body = tried.pop()
                continue
            if what == "shoe":  # full or closed: nothing was written
                shoe = repair_shoe(tablet, table, shoe, tally)
                continue
            if what == "turn":  # no open banker turn: another tablet opens it
                time.sleep(0.005)
                ensure_turn(tablet, table, tally)
                continue
        tally.errors.append(f"{key}: {status} {json.dumps(data)[:200]}")
        return None
    tally.unresolved.append(key)
    return None


def _stays_refused(data) -> bool:
    """A 400 saying a tie's stake stays on the table (tables/services/ledger.py
    tied_stakes_check)."""
    return "stays on the table after the tie" in json.dumps(data)


def _acked(tablet, table, tally, key, status, data, timed_out) -> None:
    """The server answered for `key`: note it, and what it changes at the
    table (a tie's stakes, a lost bank)."""
    coup = data["id"]
    if key in tally.acked and tally.acked[key] != coup:
        tally.errors.append(f"{key}: coup {tally.acked[key]} then {coup}")
    if status == 201:
        # After a timeout a 201 is fine (the first request had not
        # committed); after an acknowledgement it would be a double.
        tally.created += 1
        if key in tally.acked:
            tally.errors.append(f"{key}: a retry created a second coup")
    elif timed_out:
        tally.timeouts_committed += 1
    if data["outcome"] == "tie":
        tally.ties += 1
    tally.acked[key] = coup
    tally.ack_times.append(time.monotonic())
    table.learn(data)
    after_coup(tablet, table, data, tally)


def replay(tablet, tally, shoe, key, body, coup) -> None:
    tally.replays_asked += 1
    for _ in range(20):
        try:
            status, data = tablet.request(
                "POST",
                f"/api/v1/shoes/{shoe}/coups/",
                body,
                headers={"Idempotency-Key": key},
            )
        except (OSError, http.client.HTTPException):
            time.sleep(0.05)
            continue
        if status == 200 and data["id"] == coup:
            tally.replays_ok += 1
        elif status in (429, 500, 502, 503, 504):
            time.sleep(0.05)
            continue
        else:
            tally.errors.append(f"{key}: replay answered {status}")
        return


def after_coup(tablet, table, coup: dict, tally) -> None:
    """The bank was lost: the shoe passes, the next seat opens a turn."""
    if coup.get("next_banker_seat") is not None:
        ensure_turn(tablet, table, tally, seat=coup["next_banker_seat"])


def ensure_turn(tablet, table, tally, seat: int | None = None) -> None:
    """Open a banker turn unless one is open (a 409 says another tablet did)."""
    body = {"seat": seat or 1, "bank": table.house.opening_bank}
    for _ in range(50):
        try:
            status, _data = tablet.request(
                "POST", f"/api/v1/sessions/{table.session}/turns/", body
            )
        except (OSError, http.client.HTTPException):
            time.sleep(0.05)
            continue
        if status == 201:
            with table.lock:
                table.turns_opened += 1
            return
        if status == 409:
            return
        time.sleep(0.05)


def repair_shoe(tablet, table, shoe: int, tally) -> int:
    """The shoe is full or closed. One tablet closes it and opens the next;
    the others (and that one) then post to the new shoe."""
    with table.lock:
        if table.shoe != shoe:
            return table.shoe  # someone already moved the table on
        return _replace_shoe(tablet, table, tally)


def _replace_shoe(tablet, table, tally) -> int:
    """Close the table's shoe, open the next (table.lock held): its cards
    are the house's decks, shuffled, 5 burned."""
    for _ in range(50):
        try:
            tablet.request("POST", f"/api/v1/shoes/{table.shoe}/close/", {})
            status, data = tablet.request(
                "POST", f"/api/v1/sessions/{table.session}/shoes/", {"burned": 5}
            )
        except (OSError, http.client.HTTPException):
            time.sleep(0.05)
            continue
        if status == 201:
            table.shoe = data["id"]
            table.shoes_opened += 1
            table.cards = table.house.new_shoe(table.rng, 5)
            return table.shoe
        time.sleep(0.05)
    tally.errors.append(f"could not open a new shoe at table {table.table}")
    table.cards = table.house.new_shoe(table.rng, 5)  # dealt to a refusal
    return table.shoe


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def table_at(port: int, token: str, ids: tuple[int, int, int], *,
             burned: int = 5) -> TableState:
    """The state of a table just opened (table, session, shoe ids; its shoe
    opened with `burned` cards burned), its house rules read over the API as
    its croupier's tablet reads them."""
    tablet = Tablet(port, token, "setup")
    try:
        house = House.read(lambda m, p: tablet.request(m, p), ids[0])
    finally:
        tablet.close()
    return TableState(*ids, house=house, burned=burned)
