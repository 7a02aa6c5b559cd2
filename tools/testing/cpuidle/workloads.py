#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Seeded, deterministic idle-trace generators for the workloads the judge
replays, in the harness's trace format (version 1).

    workloads.py --list
    workloads.py --list-noise
    workloads.py WORKLOAD [--seed N] [--periods N] > FILE.trace

Times are in ns; capacity is 1024.  A generator gives, per idle period,
the time to the next timer, the time to a non-timer wakeup (or None) and
the run time after the wakeup; the utilization of each line is what PELT
(a geometric average with a 32 ms half-life) makes of the run/idle
timeline so far, as sched_cpu_util() would report it when the CPU goes
idle.
"""
import os
import random
import sys

# scripts/teo/teoargs.py: one-line usage errors.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "teo"))
import teoargs  # noqa: E402

CAP = 1024
US = 1000
MS = 1000 * US


def rtapp(duty):
    """rt-app style: a 5 ms period with a duty cycle of `duty` percent."""
    def gen(r, n):
        busy = 5 * MS * duty // 100
        for _ in range(n):
            jitter = r.randint(-20 * US, 20 * US)
            yield (5 * MS - busy + jitter, None, busy)
    return gen


def task_500us(r, n):
    """500 us of work every 19.457 ms (the 2-state Arm regression)."""
    for _ in range(n):
        yield (19457 * US - 500 * US, None, 500 * US)


def pingpong(r, n):
    """Microsecond ping-pong with another CPU; the next timer is far."""
    for _ in range(n):
        yield (100 * MS, r.randint(5 * US, 30 * US), r.randint(2 * US, 5 * US))


def bimodal(r, n):
    """Half the idle periods end by an interrupt at 40-120 us, half by a
    timer at 2-4 ms."""
    for _ in range(n):
        timer = r.randint(2 * MS, 4 * MS)
        irq = r.randint(40 * US, 120 * US) if r.random() < 0.5 else None
        yield (timer, irq, r.randint(20 * US, 60 * US))


def idle_desktop(r, n):
    """Mostly idle: timers at assorted long periods, rare interrupts."""
    periods = [4 * MS, 10 * MS, 16 * MS, 50 * MS, 100 * MS, 250 * MS]
    for _ in range(n):
        timer = r.choice(periods) - r.randint(0, 2 * MS)
        irq = r.randint(10 * US, timer) if r.random() < 0.05 else None
        yield (timer, irq, r.randint(50 * US, 200 * US))


def io_completions(r, n):
    """Block I/O: completions 80-300 us after the request, far timers."""
    for _ in range(n):
        yield (r.randint(20 * MS, 50 * MS), r.randint(80 * US, 300 * US),
               r.randint(20 * US, 60 * US))


def periodic_73hz(r, n):
    """A 73 Hz periodic thread (the x86 polling-state regression), busy
    enough (about 3%) to keep the CPU above the utilization threshold."""
    period = MS * 1000 // 73
    for _ in range(n):
        busy = r.randint(300 * US, 500 * US)
        yield (period - busy, None, busy)


def burst_decay(r, n):
    """A busy burst, then a light 4 ms periodic load while utilization
    decays (about 150 ms to settle)."""
    for i in range(n):
        if i % 400 < 100:
            # Burst: 5 ms of work, short interrupt-ended idles.
            yield (r.randint(1 * MS, 3 * MS), r.randint(50 * US, 150 * US), 5 * MS)
        else:
            busy = 200 * US
            yield (4 * MS - busy, None, busy)


def frames_60hz(r, n):
    """60 Hz frame rendering: three 1 ms chunks of work separated by GPU
    interrupts at 200-800 us, then idle until the next vsync timer."""
    frame = MS * 1000 // 60
    i = 0
    while i < n:
        used = 0
        for _ in range(3):
            wait = r.randint(200 * US, 800 * US)
            yield (frame - used, wait, 1 * MS)
            used += wait + 1 * MS
            i += 1
        yield (frame - used, None, 0)
        i += 1


def irq_reentry(r, n):
    """Interrupts handled in interrupt context (no task woken, so the CPU
    re-enters idle with the tick still stopped) 0.2-6 ms apart, and a
    timer every 50 ms that wakes a task for 300 us."""
    i, t = 0, 0
    while i < n:
        left = 50 * MS - t
        irq = r.randint(200 * US, 6 * MS)
        if irq < left:
            yield (left, irq, 0)
            t += irq
        else:
            yield (left, None, 300 * US)
            t = 0
        i += 1


def quiet(r, ms):
    """A reading phase of about `ms` ms: only a 4-16 ms timer with a little
    work each time, so utilization decays."""
    t = 0
    while t < ms * MS:
        timer = r.randint(4 * MS, 16 * MS)
        busy = r.randint(100 * US, 300 * US)
        t += timer + busy
        yield (timer, None, busy)


def interactive(active):
    """Touch phases of 50-200 ms running `active`, between reading phases of
    50-400 ms (quiet()), as a phone's UI threads see them."""
    def gen(r, n):
        while True:
            t = 0
            for timer, irq, busy in active(r):
                yield (timer, irq, busy)
                t += (timer if irq is None else min(timer, irq)) + busy
                if t > r.randint(50, 200) * MS:
                    break
            yield from quiet(r, r.randint(50, 400))
    return gen


def touch_pingpong(r):
    """Sessions of 10-40 microsecond exchanges with another CPU, each
    followed by 0.5-2 ms of work and a 1-3 ms timer wait."""
    while True:
        for _ in range(r.randint(10, 40)):
            yield (100 * MS, r.randint(5 * US, 30 * US), r.randint(2 * US, 5 * US))
        yield (r.randint(1 * MS, 3 * MS), None, r.randint(500 * US, 2 * MS))


def touch_bimodal(r):
    """Bursts of 10-60 interrupts at 40-120 us (network or input bursts),
    separated by 1-8 idle periods ended by timers at 2-4 ms."""
    while True:
        for _ in range(r.randint(10, 60)):
            yield (r.randint(2 * MS, 4 * MS), r.randint(40 * US, 120 * US),
                   r.randint(20 * US, 60 * US))
        for _ in range(r.randint(1, 8)):
            yield (r.randint(2 * MS, 4 * MS), None, r.randint(20 * US, 60 * US))


def touch_frames(r):
    """60 Hz frames: three 1 ms chunks of work, each waiting 50-300 us for
    the GPU, then idle until the next vsync timer."""
    frame = MS * 1000 // 60
    while True:
        used = 0
        for _ in range(3):
            wait = r.randint(50 * US, 300 * US)
            yield (frame - used, wait, 1 * MS)
            used += wait + 1 * MS
        yield (frame - used, None, 0)


def noise(period, share):
    """A periodic timer every `period` ns with 3% of it spent running, plus
    Poisson interrupts (each waking a task for 10-50 us) at the rate that
    makes `share` percent of the wakeups: per timer period, on average
    share / (100 - share) interrupts.  The noise of the util-awareness rule R5."""
    rate = share / (100 - share) / period
    busy = period * 3 // 100

    def gen(r, n):
        left = period - busy
        while True:
            irq = int(r.expovariate(rate))
            if irq >= left:
                yield (left, None, busy)
                left = period - busy
                continue
            run = r.randint(10 * US, 50 * US)
            yield (left, irq, run)
            left -= irq + run
            if left <= 0:
                # The timer expired during that run: its work follows.
                left = max(left + period - busy, 1)
    return gen


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
    "irq-reentry": irq_reentry,
    "touch-pingpong": interactive(touch_pingpong),
    "touch-bimodal": interactive(touch_bimodal),
    "touch-frames-60hz": interactive(touch_frames),
}
# The noise sweep (rule R5): not part of the main comparison.
NOISE = {f"noise-{name}ms-{share}pct": noise(period, share)
         for name, period in (("2", 2 * MS), ("8", 8 * MS), ("19.457", 19457 * US))
         for share in (5, 10, 20, 40)}


class Pelt:
    """Utilization as PELT tracks it: running time pulls it towards the
    capacity, idle time towards 0, each with a 32 ms half-life."""

    HALF_LIFE = 32 * MS

    def __init__(self):
        self.util = 0.0

    def advance(self, ns, running):
        keep = 0.5 ** (ns / self.HALF_LIFE)
        self.util = self.util * keep + (CAP * (1 - keep) if running else 0)


def write(name, seed, periods, out):
    r = random.Random(f"{name}:{seed}")
    pelt = Pelt()
    out.write("teo-trace v1\n")
    out.write(f"# workload {name}, seed {seed}, {periods} periods\n")
    out.write("# timer_ns irq_ns util capacity latency_ns cpu busy_ns\n")
    for k, (timer, irq, busy) in enumerate({**WORKLOADS, **NOISE}[name](r, periods)):
        if k == periods:
            break
        timer = max(timer, 1)
        irq_s = "-" if irq is None else str(max(irq, 0))
        idle = timer if irq is None else min(timer, max(irq, 0))
        out.write(f"{timer} {irq_s} {min(round(pelt.util), CAP)} {CAP} - 0 {busy}\n")
        pelt.advance(idle, False)
        pelt.advance(busy, True)


def main():
    ap = teoargs.Parser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", nargs="?")
    ap.add_argument("--list", action="store_true", help="list the workloads")
    ap.add_argument("--list-noise", action="store_true",
                    help="list the noise sweep's workloads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--periods", type=int, default=4000)
    a = ap.parse_args()
    if a.list:
        print("\n".join(WORKLOADS))
        return 0
    if a.list_noise:
        print("\n".join(NOISE))
        return 0
    if a.workload not in WORKLOADS and a.workload not in NOISE:
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
