#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Seeded, deterministic idle-trace generators for the workload families
the judge replays, in the harness's trace format (version 1).

    workloads.py --list
    workloads.py --list-noise
    workloads.py WORKLOAD [--seed N] [--periods N] > FILE.trace

Times are in ns; capacity is 1024.  Each workload is a family: its shape
(periods, the number and spacing of the waits or interrupts, jitter, the
laws of the arrivals, how busy the CPU is) is drawn per seed from the
ranges its generator gives, and the trace's second line says what was
drawn.  Only the revert's own cases keep the figures in their names
(500 us every 19.457 ms, a 73 Hz thread) and draw the rest.  The judge
iterates on one set of seeds (its development split) and checks on
another (its validation split): other draws of the same families.

A family, given a seeded random source and a number of idle periods,
draws its shape and returns (what it drew, the idle periods), each idle
period as (time to the next timer, time to a non-timer wakeup or None,
run time after the wakeup); the utilization of each line is what PELT (a
geometric average with a 32 ms half-life) makes of the run/idle timeline
so far, as sched_cpu_util() would report it when the CPU goes idle.
"""
import argparse
import math
import os
import random
import sys

# The TEO repository's scripts/teo/lib/teoargs.py (one-line usage errors)
# if this is its copy, else argparse as it is (in a kernel tree).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "teo", "lib"))
try:
    from teoargs import Parser  # noqa: E402
except ImportError:
    def Parser(**kw):
        """argparse's parser, with the whole docstring as its --help."""
        return argparse.ArgumentParser(description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)

CAP = 1024
US = 1000
MS = 1000 * US


def logu(r, lo, hi):
    """A draw between @lo and @hi, uniform in the logarithm (for scales)."""
    return int(math.exp(r.uniform(math.log(lo), math.log(hi))))


def span(r, lo, hi, wlo, whi):
    """A range drawn per seed: its low end between @lo and @hi, its width
    between @wlo and @whi; returns (low end, high end)."""
    low = r.randint(lo, hi)
    return low, low + r.randint(wlo, whi)


def us(ns):
    return f"{ns / US:.0f} us"


def rtapp(duty):
    """rt-app style (seed 002's case): a period of 2-20 ms, busy for 0.7 to
    1.3 times `duty` percent of it, with a jitter of up to 5% of it."""
    def fam(r, n):
        period = logu(r, 2 * MS, 20 * MS)
        busy = int(period * duty * r.uniform(0.7, 1.3) / 100)
        jit = int(period * r.uniform(0, 0.05))

        def gen():
            for _ in range(n):
                yield (period - busy + r.randint(-jit, jit), None, busy)
        return f"period {us(period)}, busy {us(busy)}, jitter {us(jit)}", gen()
    return fam


def task_500us(r, n):
    """500 us of work every 19.457 ms (the 2-state Arm regression), with a
    jitter of 0-50 us."""
    jit = r.randint(0, 50 * US)

    def gen():
        for _ in range(n):
            yield (19457 * US - 500 * US + r.randint(-jit, jit), None, 500 * US)
    return f"jitter {us(jit)}", gen()


def always_early(r, n, lo, hi, run, tlo, thi):
    """@n idle periods each ended by a wakeup at @lo-@hi, before a timer
    @tlo-@thi away (log-uniform), with @run/2-@run of work after it."""
    for _ in range(n):
        yield (logu(r, tlo, thi), r.randint(lo, hi), r.randint(run // 2, run))


def pingpong(r, n):
    """Microsecond ping-pong with another CPU: replies after 2-10 us to
    20-80 us, 1-10 us of work each; the next timer is far."""
    lo, hi = span(r, 2 * US, 10 * US, 10 * US, 70 * US)
    run = r.randint(1 * US, 10 * US)
    return (f"replies {us(lo)}-{us(hi)}, work up to {us(run)}",
            always_early(r, n, lo, hi, run, 10 * MS, 200 * MS))


def bimodal(r, n):
    """Independent coin flips: a share of 30-70% of the idle periods ends
    by an interrupt at 20-60 us to 100-300 us, the rest by a timer at 1-8
    ms."""
    p = r.uniform(0.3, 0.7)
    ilo, ihi = r.randint(20 * US, 60 * US), r.randint(100 * US, 300 * US)
    tlo, thi = span(r, 1 * MS, 3 * MS, 1 * MS, 5 * MS)

    def gen():
        for _ in range(n):
            irq = r.randint(ilo, ihi) if r.random() < p else None
            yield (r.randint(tlo, thi), irq, r.randint(20 * US, 60 * US))
    return (f"interrupts {100 * p:.0f}% at {us(ilo)}-{us(ihi)}, timers "
            f"{us(tlo)}-{us(thi)}"), gen()


def idle_desktop(r, n):
    """Mostly idle: timers at three to six periods of 4-250 ms, interrupts
    at any time in 1-10% of the idle periods."""
    periods = sorted(logu(r, 4 * MS, 250 * MS) for _ in range(r.randint(3, 6)))
    p = r.uniform(0.01, 0.10)

    def gen():
        for _ in range(n):
            timer = r.choice(periods) - r.randint(0, 2 * MS)
            irq = r.randint(10 * US, timer) if r.random() < p else None
            yield (timer, irq, r.randint(50 * US, 200 * US))
    return (f"timers every {', '.join(us(x) for x in periods)}, interrupts in "
            f"{100 * p:.0f}%"), gen()


def io_completions(r, n):
    """Block I/O with a queue: completions 30-150 us to 200-600 us after
    the request, 10-80 us of work each, timers 5-50 ms away."""
    lo, hi = span(r, 30 * US, 150 * US, 150 * US, 450 * US)
    run = r.randint(10 * US, 80 * US)
    return f"completions {us(lo)}-{us(hi)}", always_early(r, n, lo, hi, run, 5 * MS, 50 * MS)


def fio_psync(r, n):
    """fio's psync engine, one request at a time: a completion interrupt
    after a device latency of 15-200 us (a spread of 5-30% around it), a
    tail of 1-5% of requests 3-20 times slower, 3-20 us of work between
    requests; the tick-driven timers are far."""
    lat = logu(r, 15 * US, 200 * US)
    spread = r.uniform(0.05, 0.3)
    tail, slow = r.uniform(0.01, 0.05), r.uniform(3, 20)
    run = r.randint(3 * US, 20 * US)

    def gen():
        for _ in range(n):
            irq = lat * r.uniform(1 - spread, 1 + spread)
            if r.random() < tail:
                irq *= slow
            yield (logu(r, 4 * MS, 100 * MS), int(irq), r.randint(run // 2, run))
    return (f"latency {us(lat)} +-{100 * spread:.0f}%, {100 * tail:.1f}% at "
            f"{slow:.0f}x"), gen()


def cross_cpu(r, n):
    """A producer on another CPU waking this consumer with IPIs: two to
    four distances of 5 us-3 ms, drawn in runs of 1-20 at one distance,
    10-200 us of work per item, a 1-10 ms timer now and then."""
    modes = sorted(logu(r, 5 * US, 3 * MS) for _ in range(r.randint(2, 4)))
    runlen = r.randint(1, 20)
    work = r.randint(10 * US, 200 * US)
    ptimer = r.uniform(0.02, 0.2)

    def gen():
        k = 0
        while k < n:
            d = r.choice(modes)
            for _ in range(r.randint(1, runlen)):
                timer = r.randint(1 * MS, 10 * MS) if r.random() < ptimer else 50 * MS
                yield (timer, int(d * r.uniform(0.8, 1.25)), r.randint(work // 2, work))
                k += 1
    return (f"distances {', '.join(us(d) for d in modes)}, runs up to {runlen}, work "
            f"{us(work)}"), gen()


def irq_bursts_idle(r, n):
    """A nearly idle CPU that device interrupts reach in bursts: 2-40
    interrupts 20-500 us apart (handled in 5-30 us), between idle gaps of
    5-200 ms that end by a timer."""
    most = r.randint(2, 40)
    lo, hi = span(r, 20 * US, 100 * US, 20 * US, 400 * US)
    glo, ghi = span(r, 5 * MS, 20 * MS, 10 * MS, 180 * MS)

    def gen():
        while True:
            gap = r.randint(glo, ghi)
            for _ in range(r.randint(1, most)):
                irq = r.randint(lo, hi)
                yield (gap, irq, r.randint(5 * US, 30 * US))
                gap = max(gap - irq - 30 * US, 1 * MS)
            yield (gap, None, r.randint(50 * US, 200 * US))
    return f"bursts of up to {most} at {us(lo)}-{us(hi)}, gaps {us(glo)}-{us(ghi)}", gen()


def audio(r, n):
    """Audio playback: a period of 5.33 or 10 ms, 0.2-1.5 ms of decoding
    each, and in 0-50% of the periods a DMA interrupt 0.5-2 ms in."""
    period = r.choice((5333 * US, 10 * MS))
    busy = r.randint(200 * US, 1500 * US)
    p = r.uniform(0, 0.5)

    def gen():
        for _ in range(n):
            left = period - busy
            if r.random() < p:
                irq = r.randint(500 * US, 2 * MS)
                yield (left, irq, 20 * US)
                left -= irq + 20 * US
            yield (max(left, 1), None, busy)
    return f"period {us(period)}, busy {us(busy)}, DMA interrupt in {100 * p:.0f}%", gen()


def periodic_73hz(r, n):
    """A 73 Hz periodic thread (the x86 polling-state regression), busy 2-5%
    of the time, enough to keep the CPU above the utilization threshold."""
    period = MS * 1000 // 73
    lo = int(period * r.uniform(0.02, 0.04))

    def gen():
        for _ in range(n):
            busy = r.randint(lo, lo + period // 100)
            yield (period - busy, None, busy)
    return f"busy {us(lo)} and up", gen()


def burst_decay(r, n):
    """A busy burst of 50-200 idle periods (2-8 ms of work, short
    interrupt-ended idles), then 200-600 periods of a light 2-8 ms
    periodic load while utilization decays (about 150 ms to settle)."""
    burst, light = r.randint(50, 200), r.randint(200, 600)
    work = r.randint(2 * MS, 8 * MS)
    period = r.randint(2 * MS, 8 * MS)

    def gen():
        for i in range(n):
            if i % (burst + light) < burst:
                yield (r.randint(1 * MS, 3 * MS), r.randint(50 * US, 150 * US), work)
            else:
                busy = period // 20
                yield (period - busy, None, busy)
    return f"bursts of {burst} periods, then {light} of {us(period)}", gen()


def frame_loop(r, rate, waits, wlo, whi, chunk):
    """Frames at @rate Hz: per frame 1 to @waits chunks of @chunk ns of
    work, each waiting @wlo-@whi for the GPU, then idle until the vsync
    timer."""
    frame = 10**9 // rate
    while True:
        used = 0
        for _ in range(r.randint(1, waits)):
            wait = r.randint(wlo, whi)
            if used + wait + chunk >= frame:
                break
            yield (frame - used, wait, chunk)
            used += wait + chunk
        yield (frame - used, None, 0)


def frame_shape(r):
    """A frame family's shape: 60, 90, 120 or 144 Hz, up to 1-6 GPU waits
    per frame (a random number each frame), waits of 50-300 us to 300-1000
    us, the frame's work split into chunks that fill 20-60% of it."""
    rate = r.choice((60, 90, 120, 144))
    waits = r.randint(1, 6)
    wlo, whi = span(r, 50 * US, 300 * US, 50 * US, 700 * US)
    chunk = int(10**9 / rate * r.uniform(0.2, 0.6) / waits)
    return (rate, waits, wlo, whi, chunk), \
        f"{rate} Hz, up to {waits} waits of {us(wlo)}-{us(whi)}, chunks of {us(chunk)}"


def frames(r, n):
    """Frame rendering with no phases (frame_shape())."""
    shape, text = frame_shape(r)
    return text, frame_loop(r, *shape)


def irq_reentry(r, n):
    """Interrupts handled in interrupt context (no task woken, so the CPU
    re-enters idle with the tick still stopped) 0.1-1 ms to 2-10 ms apart,
    and a timer every 20-100 ms that wakes a task for 300 us."""
    lo, hi = span(r, 100 * US, 1 * MS, 2 * MS, 9 * MS)
    period = r.randint(20 * MS, 100 * MS)

    def gen():
        t = 0
        while True:
            left = period - t
            irq = r.randint(lo, hi)
            if irq < left:
                yield (left, irq, 0)
                t += irq
            else:
                yield (left, None, 300 * US)
                t = 0
    return f"interrupts {us(lo)}-{us(hi)} apart, timer every {us(period)}", gen()


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
    """Touch phases of 30-100 ms to 100-400 ms running `active` (a family
    of its own shape), between reading phases of 50-400 ms (quiet()), as
    a phone's UI threads see them."""
    def fam(r, n):
        text, body = active(r)
        tlo, thi = span(r, 30, 100, 70, 300)

        def gen():
            while True:
                t = 0
                for timer, irq, busy in body:
                    yield (timer, irq, busy)
                    t += (timer if irq is None else min(timer, irq)) + busy
                    if t > r.randint(tlo, thi) * MS:
                        break
                yield from quiet(r, r.randint(50, 400))
        return f"touch phases {tlo}-{thi} ms of {text}", gen()
    return fam


def touch_pingpong(r):
    """Sessions of 5-20 to 20-60 microsecond exchanges with another CPU
    (replies after 3-40 us), each followed by 0.5-2 ms of work and a 1-3 ms
    timer wait."""
    slo, shi = span(r, 5, 20, 0, 40)
    lo, hi = span(r, 3 * US, 10 * US, 5 * US, 30 * US)

    def gen():
        while True:
            for _ in range(r.randint(slo, shi)):
                yield (100 * MS, r.randint(lo, hi), r.randint(2 * US, 5 * US))
            yield (r.randint(1 * MS, 3 * MS), None, r.randint(500 * US, 2 * MS))
    return f"sessions of {slo}-{shi} at {us(lo)}-{us(hi)}", gen()


def touch_bimodal(r):
    """Bursts of 5-20 to 20-80 interrupts at 20-60 us to 80-200 us
    (network or input bursts), separated by 1-8 idle periods ended by
    timers at 2-4 ms."""
    blo, bhi = span(r, 5, 20, 0, 60)
    lo, hi = span(r, 20 * US, 60 * US, 20 * US, 140 * US)

    def gen():
        while True:
            for _ in range(r.randint(blo, bhi)):
                yield (r.randint(2 * MS, 4 * MS), r.randint(lo, hi), r.randint(20 * US, 60 * US))
            for _ in range(r.randint(1, 8)):
                yield (r.randint(2 * MS, 4 * MS), None, r.randint(20 * US, 60 * US))
    return f"bursts of {blo}-{bhi} at {us(lo)}-{us(hi)}", gen()


def touch_frames(r):
    """Frames while the screen is touched (frame_shape())."""
    shape, text = frame_shape(r)
    return text, frame_loop(r, *shape)


def noise(period, share):
    """A periodic timer every `period` ns with 2-5% of it spent running,
    plus Poisson interrupts (each waking a task for 10-50 us) at the rate
    that makes `share` percent of the wakeups: per timer period, on average
    share / (100 - share) interrupts.  The noise under which utilization
    awareness must cost no energy."""
    rate = share / (100 - share) / period

    def fam(r, n):
        busy = int(period * r.uniform(0.02, 0.05))

        def gen():
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
        return f"busy {us(busy)}", gen()
    return fam


WORKLOADS = {
    **{f"rtapp-{d}pct": rtapp(d) for d in (1, 5, 10, 20, 40)},
    "task-500us-19.457ms": task_500us,
    "pingpong-us": pingpong,
    "bimodal-irq-timer": bimodal,
    "idle-desktop": idle_desktop,
    "io-completions": io_completions,
    "fio-psync": fio_psync,
    "cross-cpu": cross_cpu,
    "irq-bursts-idle": irq_bursts_idle,
    "audio": audio,
    "periodic-73hz": periodic_73hz,
    "burst-decay": burst_decay,
    "frames": frames,
    "irq-reentry": irq_reentry,
    "touch-pingpong": interactive(touch_pingpong),
    "touch-bimodal": interactive(touch_bimodal),
    "touch-frames": interactive(touch_frames),
}
# The noise sweep (utilization awareness under noise): not part of the
# main comparison.
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
    drawn, gen = {**WORKLOADS, **NOISE}[name](r, periods)
    out.write("teo-trace v1\n")
    out.write(f"# workload {name}, seed {seed}, {periods} periods: {drawn}\n")
    out.write("# timer_ns irq_ns util capacity latency_ns cpu busy_ns\n")
    for k, (timer, irq, busy) in enumerate(gen):
        if k == periods:
            break
        timer = max(timer, 1)
        irq_s = "-" if irq is None else str(max(irq, 0))
        idle = timer if irq is None else min(timer, max(irq, 0))
        out.write(f"{timer} {irq_s} {min(round(pelt.util), CAP)} {CAP} - 0 {busy}\n")
        pelt.advance(idle, False)
        pelt.advance(busy, True)


def main():
    ap = Parser(description=__doc__.splitlines()[0])
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
