#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Seeded, deterministic idle-trace generators for the workloads of
DESIGN.md section 7, in the harness's trace format (version 1).

    workloads.py --list
    workloads.py WORKLOAD [--seed N] [--periods N] > FILE.trace

Times are in ns; capacity is 1024; utilization follows the CPU's duty
cycle the way PELT would settle on it (about 32 ms half-life), which is
what util-aware selection will look at.
"""
import argparse
import random
import sys

CAP = 1024
US = 1000
MS = 1000 * US


def rtapp(duty):
    """rt-app style: a 5 ms period with a duty cycle of `duty` percent."""
    def gen(r, n):
        busy = 5 * MS * duty // 100
        for _ in range(n):
            jitter = r.randint(-20 * US, 20 * US)
            yield (5 * MS - busy + jitter, None, CAP * duty // 100, busy)
    return gen


def task_500us(r, n):
    """500 us of work every 19.457 ms (the 2-state Arm regression)."""
    for _ in range(n):
        yield (19457 * US - 500 * US, None, 26, 500 * US)


def pingpong(r, n):
    """Microsecond ping-pong with another CPU; the next timer is far."""
    for _ in range(n):
        yield (100 * MS, r.randint(5 * US, 30 * US), 300, r.randint(2 * US, 5 * US))


def bimodal(r, n):
    """Half the idle periods end by an interrupt at 40-120 us, half by a
    timer at 2-4 ms."""
    for _ in range(n):
        timer = r.randint(2 * MS, 4 * MS)
        irq = r.randint(40 * US, 120 * US) if r.random() < 0.5 else None
        yield (timer, irq, 150, r.randint(20 * US, 60 * US))


def idle_desktop(r, n):
    """Mostly idle: timers at assorted long periods, rare interrupts."""
    periods = [4 * MS, 10 * MS, 16 * MS, 50 * MS, 100 * MS, 250 * MS]
    for _ in range(n):
        timer = r.choice(periods) - r.randint(0, 2 * MS)
        irq = r.randint(10 * US, timer) if r.random() < 0.05 else None
        yield (timer, irq, 5, r.randint(50 * US, 200 * US))


def io_completions(r, n):
    """Block I/O: completions 80-300 us after the request, far timers."""
    for _ in range(n):
        yield (r.randint(20 * MS, 50 * MS), r.randint(80 * US, 300 * US), 300,
               r.randint(20 * US, 60 * US))


def periodic_73hz(r, n):
    """A 73 Hz periodic thread (the x86 polling-state regression)."""
    period = MS * 1000 // 73
    for _ in range(n):
        busy = r.randint(150 * US, 250 * US)
        yield (period - busy, None, 25, busy)


def burst_decay(r, n):
    """A busy burst, then a light 4 ms periodic load while utilization
    decays (about 150 ms to settle)."""
    t = 0
    for i in range(n):
        if i % 400 < 100:
            # Burst: 5 ms of work, short interrupt-ended idles.
            util, busy = 900, 5 * MS
            yield (r.randint(1 * MS, 3 * MS), r.randint(50 * US, 150 * US), util, busy)
            t = 0
        else:
            busy = 200 * US
            util = 50 + int(850 * 0.5 ** (t / (32 * MS)))
            t += 4 * MS
            yield (4 * MS - busy, None, util, busy)


def frames_60hz(r, n):
    """60 Hz frame rendering: three 1 ms chunks of work separated by GPU
    interrupts at 200-800 us, then idle until the next vsync timer."""
    frame = MS * 1000 // 60
    i = 0
    while i < n:
        used = 0
        for _ in range(3):
            wait = r.randint(200 * US, 800 * US)
            yield (frame - used, wait, 400, 1 * MS)
            used += wait + 1 * MS
            i += 1
        yield (frame - used, None, 400, 0)
        i += 1


WORKLOADS = {
    **{f"rtapp-5ms-{d}pct": rtapp(d) for d in (1, 3, 5, 10, 20, 30, 40)},
    "task-500us-19.457ms": task_500us,
    "pingpong-us": pingpong,
    "bimodal-irq-timer": bimodal,
    "idle-desktop": idle_desktop,
    "io-completions": io_completions,
    "periodic-73hz": periodic_73hz,
    "burst-decay": burst_decay,
    "frames-60hz": frames_60hz,
}


def write(name, seed, periods, out):
    r = random.Random(f"{name}:{seed}")
    out.write("teo-trace v1\n")
    out.write(f"# workload {name}, seed {seed}, {periods} periods\n")
    out.write("# timer_ns irq_ns util capacity latency_ns cpu busy_ns\n")
    for k, (timer, irq, util, busy) in enumerate(WORKLOADS[name](r, periods)):
        if k == periods:
            break
        irq_s = "-" if irq is None else str(max(irq, 0))
        out.write(f"{max(timer, 1)} {irq_s} {min(util, CAP)} {CAP} - 0 {busy}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", nargs="?")
    ap.add_argument("--list", action="store_true", help="list the workloads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--periods", type=int, default=4000)
    a = ap.parse_args()
    if a.list:
        print("\n".join(WORKLOADS))
        return 0
    if a.workload not in WORKLOADS:
        print(f"workloads.py: unknown workload {a.workload!r}; --list shows them",
              file=sys.stderr)
        return 2
    if a.periods < 1:
        print("workloads.py: --periods must be at least 1", file=sys.stderr)
        return 2
    write(a.workload, a.seed, a.periods, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
