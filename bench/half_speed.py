"""Run a bench on this machine made about half as fast (issue 26: the floor's
aims must hold on a machine half as fast as the one measured on).

    sudo .venv/bin/python bench/half_speed.py [--share 0.5] -- \\
        .venv/bin/python bench/bench_floor.py

How: one CPU hog per core, each pinned to its core and in a cgroup of its
own, and the bench with PostgreSQL and Redis in another (Linux cgroups, the
`cpu` controller, v1 or v2), weighted so that when the bench's processes want
a core they get `--share` of it and the hog the rest; idle, the hog takes it
all. Every process of the bench, gunicorn, the Celery worker, the client and
the database, so runs at about `--share` of each core's speed, with the
scheduler's time slices (a few ms) as the grain.

The slow-down is measured, not assumed: a fixed CPU loop is timed in the
bench's group without the hogs and with them, alone and once per core at
the same time (the scheduler splits a group's weight between the cores by
where its load is, so one busy process gets more than two do), and both
factors are printed before the command runs. Root is needed (cgroups);
everything it made is undone when it ends, whatever the outcome (the
PostgreSQL and Redis processes are moved back to where they were).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")
NAME = "bench_half_speed"
LOOP = 6_000_000  # about half a second of Python on these machines
SERVICES = ("postgres", "redis-server")


class Groups:
    """The bench's group and one hog group per core (v1: cpu.shares, v2:
    cpu.weight); `weight` of each hog relative to the bench's 1024 (v1) or
    100 (v2)."""

    def __init__(self, share: float) -> None:
        self.v2 = (V2 / "cgroup.controllers").exists()
        base = V2 if self.v2 else V1
        if not (base / "cgroup.procs").exists():
            sys.exit(f"no cgroup cpu controller at {base}: cannot slow this machine")
        if self.v2 and "cpu" not in (base / "cgroup.subtree_control").read_text():
            (base / "cgroup.subtree_control").write_text("+cpu")
        self.root = base
        self.top = base / NAME
        self.cores = os.cpu_count() or 1
        self.top.mkdir(exist_ok=True)
        self.fast = self.top / "bench"
        self.fast.mkdir(exist_ok=True)
        if self.v2:
            (self.top / "cgroup.subtree_control").write_text("+cpu")
        unit = 100 if self.v2 else 1024
        # The bench's group weight is split between the cores by where its
        # load is: with its load on every core, each core's part is
        # unit/cores, so a hog of unit/cores * (1-share)/share leaves it
        # `share` of that core.
        hog = max(2, round(unit / self.cores * (1 - share) / share))
        self._weight(self.fast, unit)
        self.hogs = []
        for core in range(self.cores):
            g = self.top / f"hog{core}"
            g.mkdir(exist_ok=True)
            self._weight(g, hog)
            self.hogs.append(g)
        self.moved: list[int] = []
        self.hog_procs: list[subprocess.Popen] = []

    def _weight(self, group: Path, value: int) -> None:
        (group / ("cpu.weight" if self.v2 else "cpu.shares")).write_text(str(value))

    @staticmethod
    def put(group: Path, pid: int) -> None:
        (group / "cgroup.procs").write_text(str(pid))

    def in_fast(self) -> None:  # a child's preexec_fn
        self.put(self.fast, os.getpid())

    def move_services(self) -> None:
        for name in SERVICES:
            out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True)
            for pid in map(int, out.stdout.split()):
                try:
                    for task in os.listdir(f"/proc/{pid}/task"):
                        self.put(self.fast, int(task))
                    self.moved.append(pid)
                except (OSError, ValueError):
                    pass  # gone meanwhile
        if not self.moved:
            print("warning: no PostgreSQL or Redis process found to slow down")

    def start_hogs(self) -> None:
        for core, group in enumerate(self.hogs):
            def enter(group=group, core=core):
                self.put(group, os.getpid())
                os.sched_setaffinity(0, {core})
            self.hog_procs.append(subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], preexec_fn=enter))
        time.sleep(0.5)

    def stop_hogs(self) -> None:
        for p in self.hog_procs:
            p.kill()
            p.wait()
        self.hog_procs = []

    def undo(self) -> None:
        self.stop_hogs()
        for group in [self.fast, *self.hogs]:
            procs = (group / "cgroup.procs").read_text().split()
            for pid in procs:  # the services, and anything the bench left
                try:
                    self.put(self.root, int(pid))
                except OSError:
                    pass
        for group in [self.fast, *self.hogs, self.top]:
            for _ in range(50):
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def spin_seconds(groups: Groups, parallel: int) -> float:
    """Median seconds of LOOP iterations, `parallel` processes at once in
    the bench's group."""
    code = (f"import time\nt=time.perf_counter()\nx=0\nfor i in range({LOOP}): x+=i*i\n"
            "print(time.perf_counter()-t)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              text=True, preexec_fn=groups.in_fast)
             for _ in range(parallel)]
    return statistics.median(float(p.communicate()[0]) for p in procs)


def calibrate(groups: Groups, rounds: int = 3) -> dict[int, float]:
    """The slow-down factor alone and with every core busy, rounds of
    without/with the hogs interleaved (the machine's own speed drifts)."""
    factors = {}
    for parallel in sorted({1, groups.cores}):
        ratios = []
        for _ in range(rounds):
            plain = spin_seconds(groups, parallel)
            groups.start_hogs()
            slow = spin_seconds(groups, parallel)
            groups.stop_hogs()
            ratios.append(slow / plain)
        factors[parallel] = statistics.median(ratios)
    return factors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--share", type=float, default=0.5,
                    help="the share of each core the bench gets (0.5: half as fast)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("a command to run is required, after --")
    if not 0.05 <= args.share <= 1:
        ap.error("--share: between 0.05 and 1")
    if os.geteuid() != 0:
        sys.exit("root is needed to make cgroups")
    groups = Groups(args.share)
    child = None

    def stop(signum, _frame):
        if child is not None and child.poll() is None:
            child.send_signal(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    status = 1
    try:
        groups.move_services()
        factors = calibrate(groups)
        said = ", ".join(f"{n} process{'es' if n > 1 else ''} at once: "
                         f"{f:.2f}x slower" for n, f in factors.items())
        print(f"half_speed: share {args.share:.2f} of each core; measured {said}",
              flush=True)
        groups.start_hogs()
        child = subprocess.Popen(command, preexec_fn=groups.in_fast)
        status = child.wait()
        groups.stop_hogs()
        after = calibrate(groups, rounds=1)
        said = ", ".join(f"{n}: {f:.2f}x" for n, f in after.items())
        print(f"half_speed: measured again after the run: {said}", flush=True)
    except KeyboardInterrupt:
        if child is not None:
            child.wait()
        status = 130
    finally:
        groups.undo()
    sys.exit(status)


if __name__ == "__main__":
    main()
