"""The load generator of bench_http.py: an asyncio HTTP/1.1 client on
keep-alive connections (reconnecting when the server says Connection: close),
run in its own process so the server's workers get the CPU they would get.

Every loop is bounded by a deadline and by a request cap, and stops by itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
import zlib
from dataclasses import dataclass, field

MAX_REQUESTS_PER_CLIENT = 100_000


class Conn:
    def __init__(self, port: int, token: str):
        self.port, self.reader, self.writer = port, None, None
        self.head = (
            f"Host: 127.0.0.1:{port}\r\nAuthorization: Token {token}\r\n"
            "Content-Type: application/json\r\nUser-Agent: bench\r\n"
        )

    async def post(self, path: str, body: dict, extra: str = "") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(
                "127.0.0.1", self.port
            )
        data = json.dumps(body).encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\n{self.head}{extra}"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip().lower()
        if headers.get("transfer-encoding") == "chunked":
            payload = b""
            while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                payload += (await self.reader.readexactly(size + 2))[:-2]
            await self.reader.readuntil(b"\r\n")
        else:
            payload = await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("connection") == "close":
            self.close()
        return status, payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    done_201: int = 0  # every 201 of the endpoint, warm-up included
    aux: int = 0  # shoe and turn requests the coup clients needed
    aux_s: float = 0.0  # time the clients spent on them, in the window
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def bare_client(conn, tally, start, stop, tag):
    for _ in range(MAX_REQUESTS_PER_CLIENT):
        t0 = time.perf_counter()
        if t0 >= stop:
            break
        status, _ = await conn.post("/api/v1/bench/bare/", {})
        t1 = time.perf_counter()
        if status != 201:
            tally.error(f"bare {status}")
            continue
        tally.done_201 += 1
        if t0 >= start and t1 <= stop:
            tally.latencies.append(t1 - t0)


async def _aux(conn, tally, start, stop, path, body):
    t0 = time.perf_counter()
    status, payload = await conn.post(path, body)
    t1 = time.perf_counter()
    tally.aux += 1
    if t0 >= start and t1 <= stop:
        tally.aux_s += t1 - t0
    return status, payload


async def coup_client(conn, tally, start, stop, tag, table, seed):
    from _dealer import House

    # The tables of bench_http.py play the default house rules
    # (_benchdb.open_table): nothing read in the window.
    house, rng = House(), random.Random(seed)
    session, shoe, seat, fails = table["session"], table["shoe"], 1, 0
    staying = None  # the stakes a tie left on the table
    cards = house.new_shoe(rng)
    for k in range(MAX_REQUESTS_PER_CLIENT):
        if time.perf_counter() >= stop:
            break
        if len(cards) < 7:  # the cut card: close this shoe, open the next
            burned = rng.randint(1, 10)
            await _aux(conn, tally, start, stop, f"/api/v1/shoes/{shoe}/close/", {})
            status, body = await _aux(
                conn,
                tally,
                start,
                stop,
                f"/api/v1/sessions/{session}/shoes/",
                {"burned": burned},
            )
            if status != 201:
                tally.error(f"shoe open {status}")
                break
            shoe = json.loads(body)["id"]
            cards = house.new_shoe(rng, burned)
        punter, banker = house.deal(rng, cards)
        # house rule tie "stay": a tie's stakes stay for the next coup
        stakes = staying or house.stakes(rng, banker_seat=seat)
        t0 = time.perf_counter()
        status, body = await conn.post(
            f"/api/v1/shoes/{shoe}/coups/",
            {"punter": punter, "banker": banker, "stakes": stakes},
            f"Idempotency-Key: {tag}-{k}\r\n",
        )
        t1 = time.perf_counter()
        if status != 201:
            tally.error(f"coup {status} {body[:100]!r}")
            if status == 409 and b'"shoe"' in body:
                cards = []  # the server's shoe ran out first: open a new one
            fails += 1
            if fails >= 20:
                break  # a broken server: stop this client, the report shows it
            continue
        fails = 0
        tally.done_201 += 1
        answer = json.loads(body)
        staying = house.stays(answer)
        if t0 >= start and t1 <= stop:
            tally.latencies.append(t1 - t0)
        nxt = answer["next_banker_seat"]
        if nxt is not None:  # the bank was lost: the next seat opens a turn
            seat = nxt
            status, _ = await _aux(
                conn,
                tally,
                start,
                stop,
                f"/api/v1/sessions/{session}/turns/",
                {"seat": seat, "bank": "100.00"},
            )
            if status != 201:
                tally.error(f"turn open {status}")
                break


def _cpu_ticks(match) -> int:
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if match(int(pid), int(stat[1]), cmd):
            total += int(stat[11]) + int(stat[12])  # utime + stime
    return total


def run(cfg: dict) -> dict:
    """One measurement: cfg has kind, clients, port, token, warmup, duration,
    tables, tag, master (gunicorn's pid) and db (the database name)."""
    master, db = cfg["master"], cfg["db"]

    def server(pid, ppid, cmd):
        return ppid == master

    def postgres(pid, ppid, cmd):
        return cmd.startswith("postgres:") and f" {db} " in cmd

    return asyncio.run(_run(cfg, server, postgres))


async def _run(cfg, server, postgres):
    tally = Tally()
    now = time.perf_counter()
    start = now + cfg["warmup"]
    stop = start + cfg["duration"]
    conns = [Conn(cfg["port"], cfg["token"]) for _ in range(cfg["clients"])]
    jobs = []
    for i, conn in enumerate(conns):
        tag = f"{cfg['tag']}-{i}"
        if cfg["kind"] == "bare":
            jobs.append(bare_client(conn, tally, start, stop, tag))
        else:
            jobs.append(
                coup_client(
                    conn,
                    tally,
                    start,
                    stop,
                    tag,
                    cfg["tables"][i],
                    seed=zlib.crc32(tag.encode()),
                )
            )
    tasks = [asyncio.ensure_future(j) for j in jobs]
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    cpu0 = (_cpu_ticks(server), _cpu_ticks(postgres), time.process_time())
    await asyncio.sleep(max(0.0, stop - time.perf_counter()))
    cpu1 = (_cpu_ticks(server), _cpu_ticks(postgres), time.process_time())
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
    for conn in conns:
        conn.close()
    hz = os.sysconf("SC_CLK_TCK")
    return {
        "latencies": tally.latencies,
        "done_201": tally.done_201,
        "aux": tally.aux,
        "aux_s": tally.aux_s,
        "errors": tally.errors,
        "server_cpu_s": (cpu1[0] - cpu0[0]) / hz,
        "postgres_cpu_s": (cpu1[1] - cpu0[1]) / hz,
        "client_cpu_s": cpu1[2] - cpu0[2],
    }
