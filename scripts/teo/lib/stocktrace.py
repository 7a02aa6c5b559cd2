# SPDX-License-Identifier: GPL-2.0
"""Idle entries rebuilt from the events every kernel has.

A trace of any kernel, as the text of the tracefs "trace" file or of
"trace-cmd report", with power:cpu_idle, the timer events (hrtimer_start,
hrtimer_cancel, hrtimer_expire_entry, timer_start, timer_cancel,
timer_expire_entry, tick_stop), sched:sched_switch and, where the kernel
has them (CONFIG_RCU_TRACE), rcu:rcu_callback, rcu_batch_start and
rcu_batch_end; irq_handler_entry and the IPI events, where present, tell
what woke each CPU, and irq:softirq_exit and irq_handler_exit when an
interrupt's work ended.

For each idle entry it rebuilds what tick_nohz_get_sleep_length() told the
governor: the time to the next timer (the sleep length) and to the CPU's
next clock event (the tick, while it runs), and whether the tick was
already stopped, by keeping, CPU by CPU, every armed hrtimer and timer
wheel entry the trace shows, and the RCU callbacks queued (a CPU with
callbacks keeps its tick: the sleep length is then the time to the next
clock event).  Without the RCU events the callbacks are taken as none.  The clocks are tied to the trace's by the
tick's own hrtimer (its "now" at expiry is CLOCK_MONOTONIC) and the timer
wheel's jiffies by its expiries' "now".

An entry is left out, and counted by the reason, when it cannot be
rebuilt: a timer armed before the trace began may be the first (its first
event is a cancel or a re-arm), the next timer lies beyond the trace's
end, a timer's clock is not known, the clocks are not tied yet, or the
tick's state is not known yet.  Nothing is guessed but the utilization
(PELT's running average, 32 ms half-life, of the time the CPU ran a task,
which sched_cpu_util() approximates without the frequency and the
interrupts) and when, between the CPU's last event and cpu_idle, the
sleep length was measured from (NOW_SHARE, NOW_MAX_NS).
"""

import collections
import math
import re

EXIT_STATE = 4294967295  # PWR_EVENT_EXIT
LINE = re.compile(r"\[(\d+)\].*?\s(\d+)\.(\d+):\s+([a-z_0-9]+):\s*(.*)$")
FIELD = re.compile(r"(\w+)=(\S*)")
TICK_FUNCS = ("tick_nohz_handler", "tick_sched_timer")
# A CLOCK_MONOTONIC expiry is below this; CLOCK_REALTIME and CLOCK_TAI
# ones (nanoseconds since 1970) are far above.
WALL_NS = 10 ** 17
INF = float("inf")
PELT_HALF_NS = 32 * 10 ** 6
CAPACITY = 1024
# tick_nohz_get_sleep_length() measures from the idle loop's entry or the
# last interrupt's exit, which no stock event marks: after the CPU's last
# event (the switch to idle, or what the interrupt did), before the
# governor, the tick's stop and cpu_idle.  The rebuild puts it a third of
# the way (NOW_SHARE) from that event to cpu_idle, at most NOW_MAX_NS after
# the event.  In the boot test's traces, which have teo_select's own sleep
# lengths (scripts/teo/guest/stock-agree), it came 0.3 of the way in gaps of
# 20-100 us, and a median 12-24 us after the event in gaps of over 200 us
# (a vCPU stalled in the governor's part); the middle of the gap, as
# rebuilt before, missed by more than 5% or 20 us in 1.2-4.7% of the
# entries of eight traces, this rule in 0.6-1.7%.  The interrupt's exit
# comes after its softirqs, which only irq:softirq_exit marks: without it
# the last event is often the tick's hrtimer_rearm, up to hundreds of us
# earlier on a slow host.  A deferred hrtimer_rearm (Linux 7.x, "deferred=1")
# is made at the interrupt's exit, after the sleep length's start (with
# softirqs pending, before them, and their events then come after it), so
# when it is the last event the rebuild measures from it.
NOW_SHARE = 3
NOW_MAX_NS = 30000
# Events that say what woke a CPU, and as what.
WAKE_IRQ = ("irq_handler_entry",)
WAKE_IPI = ("ipi_entry", "reschedule_entry", "call_function_entry",
            "call_function_single_entry")
# Without these nothing can be rebuilt; without the others (OPTIONAL) less.
NEEDED = ("cpu_idle", "hrtimer_start", "hrtimer_expire_entry")
OPTIONAL = ("timer_start", "sched_switch", "rcu_callback")


class Entry:
    """One idle entry: the kernel's state and what the governor was told."""

    __slots__ = ("cpu", "ts", "state", "residency", "sleep", "delta_tick", "tick_stopped",
                 "stop_tick", "util", "woke", "got_tick", "why", "phase")


def parse(lines):
    """(ts_ns, cpu, event, rest) of every event line, in trace order."""
    out = []
    for line in lines:
        m = LINE.search(line)
        if not m:
            continue
        frac = (m.group(3) + "000000000")[:9]
        out.append((int(m.group(2)) * 10 ** 9 + int(frac), int(m.group(1)), m.group(4), m.group(5)))
    return out


def fields(rest):
    return dict(FIELD.findall(rest))


def tick_of(hz):
    """TICK_NSEC of a kernel built with HZ."""
    return (10 ** 9 + hz // 2) // hz


def phase_mark(ev, rest):
    """The phase a "teo-phase NAME" trace mark starts ("-" for none), or
    None if the event is no such mark."""
    if ev not in ("tracing_mark_write", "print"):
        return None
    words = rest.split()
    if "teo-phase" not in words:
        return None
    i = words.index("teo-phase")
    return words[i + 1] if len(words) > i + 1 else "-"


def switch_next_pid(rest):
    """The pid sched_switch switches to (ftrace's or trace-cmd's form)."""
    m = re.search(r"next_pid=(-?\d+)", rest)
    if not m:
        m = re.search(r"==>\s*.*:(-?\d+)\s+\[", rest)
    return int(m.group(1)) if m else None


def mode(values):
    return collections.Counter(values).most_common(1)[0][0] if values else None


class Clocks:
    """The trace clock against CLOCK_MONOTONIC, and jiffies against both."""

    def __init__(self, evs, tick_ns):
        # (ts, ts - now) of the last 500 ms of tick expiries, the
        # differences rising from the front: the least is the first.
        self.offsets = collections.deque()
        # The tick's expiries, by CPU; with no HZ given, the tick period is
        # the commonest step of a CPU's tick hrtimer.
        starts, steps, last = [], [], {}
        for _, cpu, e, r in evs:
            if e != "hrtimer_start":
                continue
            f = fields(r)
            if f.get("function") not in TICK_FUNCS or "expires" not in f:
                continue
            x = int(f["expires"])
            starts.append(x)
            if cpu in last and x > last[cpu]:
                steps.append(x - last[cpu])
            last[cpu] = x
        step = mode(steps)
        self.tick = tick_ns or (tick_of(round(10 ** 9 / step)) if step else None)
        self.phase = mode([x % self.tick for x in starts]) if self.tick and starts else None
        self.jiffy_k = collections.Counter()

    def tick_expired(self, ts, now):
        off = ts - now
        while self.offsets and self.offsets[-1][1] >= off:
            self.offsets.pop()
        self.offsets.append((ts, off))
        while self.offsets[0][0] < ts - 500 * 10 ** 6:
            self.offsets.popleft()

    def offset(self):
        """The trace clock less CLOCK_MONOTONIC, or None before any tick."""
        # An event is written after its "now" was read: the least
        # difference is the closest.
        return self.offsets[0][1] if self.offsets else None

    def mono(self, ts):
        """CLOCK_MONOTONIC at trace time TS, or None before any tick."""
        off = self.offset()
        return None if off is None else ts - off

    def jiffies_seen(self, ts, jiffies):
        m = self.mono(ts)
        if m is not None and self.phase is not None:
            self.jiffy_k[(m - self.phase) // self.tick - jiffies] += 1

    def jiffy_mono(self, jiffies):
        """The tick at which the timer wheel runs jiffy JIFFIES."""
        if not self.jiffy_k or self.phase is None:
            return None
        return self.phase + (jiffies + self.jiffy_k.most_common(1)[0][0]) * self.tick

    def basemono(self, mono):
        """The last tick at or before MONO (the last jiffies update)."""
        return self.phase + (mono - self.phase) // self.tick * self.tick


def first_events(evs):
    """For each timer, how the trace first shows it: ("new",), or armed
    before the trace with a known expiry ("fired", cpu, expiry, kind), or
    with an unknown one ("unknown", ts)."""
    first = {}
    for ts, cpu, e, r in evs:
        if e in ("hrtimer_start", "hrtimer_cancel", "hrtimer_expire_entry", "hrtimer_start_expired"):
            kind, name = "hr", "hrtimer"
        elif e in ("timer_start", "timer_cancel", "timer_expire_entry"):
            kind, name = "wheel", "timer"
        else:
            continue
        f = fields(r)
        key = (kind, f.get(name))
        if key in first or key[1] is None:
            continue
        if e in ("hrtimer_start", "timer_start") and f.get("was_armed", "0") == "0":
            first[key] = ("new",)
        elif e == "hrtimer_expire_entry":
            first[key] = ("fired", cpu, int(f["now"]), f.get("function") in TICK_FUNCS)
        elif e == "timer_expire_entry":
            first[key] = ("fired", cpu, int(f.get("baseclk", f["now"])), False)
        else:
            first[key] = ("unknown", ts)
    return first


class CPU:
    def __init__(self):
        self.hr = {}  # pointer -> expiry, in the timer's own clock
        self.wheel = {}  # pointer -> bucket expiry (jiffies)
        self.tick_ptr = None
        self.stopped = None  # tick state, None until the trace shows it
        self.just_stopped = False
        self.entry = None  # the open idle entry
        self.running = None
        self.util = 0.0
        self.util_ts = None
        self.woke_open = None  # the entry whose waker is not known yet
        # The entry a run of the tick counts for (tick_nohz_idle_got_tick()):
        # the last one, until the CPU leaves the idle loop.
        self.tick_open = None
        self.rcu = 0  # RCU callbacks queued
        self.last_ts = None  # the last event before the governor ran
        self.last_exit = False  # and it was made at the interrupt's exit
        self.prev_ts = None  # the previous idle entry's time stamp
        self.prev_now = None  # and its idle time's start (mono)
        self.tick_at_stop = None  # the tick's expiry when it was stopped
        self.clockevent = None  # hrtimer_rearm's next event (dev->next_event)
        self.clockevent_at_stop = None


def rebuild(lines, tick_ns=None, phase=None):
    """The idle entries (in trace order) and the counts of the left out.

    PHASE keeps the entries of one phase ("teo-phase NAME" trace marks);
    the events before it still arm timers."""
    evs = parse(lines)
    seen = {e for _, _, e, _ in evs}
    missing = [e for e in NEEDED + OPTIONAL if e not in seen]
    clocks = Clocks(evs, tick_ns)
    first = first_events(evs)
    cpus = collections.defaultdict(CPU)
    hr_cpu = {}  # pointer -> CPU whose base holds it
    wheel_cpu = {}
    wheel_deferrable = set()
    wall_off = None  # CLOCK_REALTIME minus CLOCK_MONOTONIC, once known
    unknown = sorted(v[1] for v in first.values() if v[0] == "unknown")
    end_ts = evs[-1][0] if evs else 0
    entries = []
    left = collections.Counter()
    current = "all"

    # Timers armed before the trace that fired in it: armed from the start.
    for (kind, ptr), v in first.items():
        if v[0] != "fired":
            continue
        _, cpu, expiry, is_tick = v
        if kind == "hr":
            hr_cpu[ptr] = cpu
            cpus[cpu].hr[ptr] = expiry
            if is_tick:
                cpus[cpu].tick_ptr = ptr
        else:
            wheel_cpu[ptr] = cpu
            cpus[cpu].wheel[ptr] = expiry

    def hr_mono(raw):
        """An hrtimer expiry in CLOCK_MONOTONIC, or None."""
        if raw < WALL_NS:
            return raw
        return raw - wall_off if wall_off is not None else None

    def drop_hr(ptr):
        c = hr_cpu.pop(ptr, None)
        if c is not None:
            cpus[c].hr.pop(ptr, None)

    def drop_wheel(ptr):
        c = wheel_cpu.pop(ptr, None)
        if c is not None:
            cpus[c].wheel.pop(ptr, None)
        wheel_deferrable.discard(ptr)

    def run_util(c, ts):
        if c.util_ts is not None and c.running is not None:
            y = math.pow(0.5, (ts - c.util_ts) / PELT_HALF_NS)
            c.util = c.util * y + (CAPACITY * (1 - y) if c.running else 0)
        c.util_ts = ts

    def close(c, ts, e):
        """The CPU left its idle state at TS: finish the entry E."""
        e.residency = ts - e.ts
        if e.why is None and phase in (None, e.phase):
            entries.append(e)
        elif phase in (None, e.phase):
            left[e.why] += 1

    for ts, cpu, ev, rest in evs:
        c = cpus[cpu]
        if ev not in ("cpu_idle", "cpu_idle_miss", "tick_stop", "teo_select", "teo_update") and \
           not c.just_stopped:
            c.last_ts = ts
            c.last_exit = ev == "hrtimer_rearm" and "deferred=1" in rest
        mark = phase_mark(ev, rest)
        if mark is not None:
            current = mark
            continue
        if c.woke_open is not None:
            if ev in ("hrtimer_expire_entry", "local_timer_entry") or \
               (ev in WAKE_IRQ and "timer" in rest):
                c.woke_open.woke = "timer"
            elif ev in WAKE_IPI or (ev in WAKE_IRQ and "IPI" in rest):
                c.woke_open.woke = "ipi"
            elif ev in WAKE_IRQ:
                c.woke_open.woke = "irq"
            if c.woke_open.woke != "unknown":
                c.woke_open = None
        if ev == "hrtimer_start":
            f = fields(rest)
            ptr = f.get("hrtimer")
            drop_hr(ptr)
            hr_cpu[ptr] = cpu
            c.hr[ptr] = int(f["expires"])
            if f.get("function") in TICK_FUNCS:
                c.tick_ptr = ptr
        elif ev in ("hrtimer_cancel", "hrtimer_start_expired"):
            drop_hr(fields(rest).get("hrtimer"))
        elif ev == "hrtimer_expire_entry":
            f = fields(rest)
            now = int(f["now"])
            if f.get("function") in TICK_FUNCS:
                clocks.tick_expired(ts, now)
                if c.tick_open is not None:
                    c.tick_open.got_tick = True
            elif now >= WALL_NS and clocks.mono(ts) is not None:
                wall_off = now - clocks.mono(ts)
            drop_hr(f.get("hrtimer"))
        elif ev == "hrtimer_rearm":
            # The CPU's clock event device programmed (7.x): a timer
            # removed lazily (the scheduler's hrtick) may still be there.
            c.clockevent = int(fields(rest).get("next_event", 0)) or None
        elif ev == "timer_start":
            f = fields(rest)
            ptr = f.get("timer")
            drop_wheel(ptr)
            base = int(f.get("cpu", cpu))
            wheel_cpu[ptr] = base
            cpus[base].wheel[ptr] = int(f.get("bucket_expiry", f.get("expires")))
            if "D" in f.get("flags", "").split("|"):
                wheel_deferrable.add(ptr)
        elif ev == "timer_cancel":
            drop_wheel(fields(rest).get("timer"))
        elif ev == "timer_expire_entry":
            f = fields(rest)
            clocks.jiffies_seen(ts, int(f["now"]))
            drop_wheel(f.get("timer"))
        elif ev == "rcu_callback":
            # "NAME rhp=P func=F QLEN": the queue's length with this one.
            words = rest.split()
            if words and words[-1].isdigit():
                c.rcu = int(words[-1])
        elif ev == "rcu_batch_start":
            c.rcu = int(fields(rest).get("CBs", c.rcu))
        elif ev == "rcu_batch_end":
            m = re.search(r"CBs-invoked=(\d+)", rest)
            if m:
                c.rcu = max(c.rcu - int(m.group(1)), 0)
        elif ev == "tick_stop":
            if fields(rest).get("success") == "1":
                if not c.stopped:
                    c.just_stopped = True
                    c.tick_at_stop = c.hr.get(c.tick_ptr)
                    c.clockevent_at_stop = c.clockevent
                c.stopped = True
        elif ev == "sched_switch":
            pid = switch_next_pid(rest)
            run_util(c, ts)
            c.running = pid not in (0, None)
            if c.running:
                # The idle loop ends: tick_nohz_idle_exit() restarts the tick.
                c.stopped = False
                c.just_stopped = False
                c.tick_open = None
        elif ev == "cpu_idle":
            f = fields(rest)
            state = int(f.get("state", EXIT_STATE))
            cpu = int(f.get("cpu_id", cpu))
            c = cpus[cpu]
            run_util(c, ts)
            if "sched_switch" not in seen:
                # Without the switches, the CPU runs whenever it is not idle.
                c.running = state == EXIT_STATE
            if state == EXIT_STATE:
                if c.entry is not None:
                    close(c, ts, c.entry)
                    c.entry = None
                continue
            e = Entry()
            e.cpu, e.ts, e.state, e.phase = cpu, ts, state, current
            e.util = int(round(c.util))
            e.woke = "unknown"
            e.got_tick = False
            e.why = None
            e.stop_tick = bool(c.stopped)
            e.tick_stopped = bool(c.stopped) and not c.just_stopped
            e.sleep, e.delta_tick = None, None
            # What the sleep length was measured from (NOW_SHARE).  With no
            # event since the previous entry (a polling state left without
            # an interrupt) it has not moved.
            if c.prev_ts is not None and c.prev_now is not None and \
               (c.last_ts is None or c.last_ts < c.prev_ts):
                now = c.prev_now
            elif c.last_ts is None:
                now = clocks.mono(ts)
            elif c.last_exit:
                now = clocks.mono(c.last_ts)
            else:
                now = clocks.mono(c.last_ts + min((ts - c.last_ts) // NOW_SHARE, NOW_MAX_NS))
            c.prev_ts, c.prev_now = ts, now
            if c.stopped is None:
                e.why = "tick state not known yet"
            elif now is None or clocks.phase is None:
                e.why = "clocks not tied yet"
            else:
                e.why = sleep_length(e, c, now, clocks, hr_mono, wheel_deferrable)
                if e.why is None:
                    # In the trace's clock: the timers of unknown expiry
                    # that ended between now and the next timer.
                    off = clocks.offset()
                    ends = now + max(e.sleep, 0) + off
                    if ends > end_ts:
                        e.why = "next timer after the trace"
                    elif any(now + off < u < ends for u in unknown):
                        e.why = "armed before the trace"
            c.just_stopped = False
            c.entry = e
            # What woke it: the first interrupt after the entry (on x86
            # inside the idle state, on arm64 after the exit).
            c.woke_open = e
            c.tick_open = e
    return entries, left, missing, clocks


def sleep_length(e, c, now, clocks, hr_mono, deferrable):
    """Fill E.sleep and E.delta_tick as tick_nohz_get_sleep_length() had
    them at NOW on CPU C; the reason it cannot, or None."""
    others = INF
    tick = INF
    timers = dict(c.hr)
    if c.just_stopped and c.tick_at_stop is not None:
        # The governor saw the tick as it was before it stopped it.
        timers[c.tick_ptr] = c.tick_at_stop
    for ptr, raw in timers.items():
        m = hr_mono(raw)
        if m is None:
            return "clock not known"
        if ptr == c.tick_ptr:
            tick = m
        else:
            others = min(others, m)
    wheel = [j for p, j in c.wheel.items() if p not in deferrable]
    base = clocks.basemono(now)
    wheel_next = INF
    if wheel:
        w = clocks.jiffy_mono(min(wheel))
        if w is None:
            return "clocks not tied yet"
        wheel_next = max(w, base)
    # dev->next_event: the first hrtimer, the tick's included, or as the
    # kernel last programmed it.
    next_event = min(tick, others)
    programmed = c.clockevent_at_stop if c.just_stopped else c.clockevent
    if programmed is not None:
        next_event = programmed
    if next_event == INF and wheel_next == INF:
        return "next timer after the trace"
    if c.rcu:
        # tick_nohz_next_event(): RCU needs the CPU, the next tick.
        wheel_next = base + clocks.tick
    if not e.tick_stopped and wheel_next - base <= clocks.tick:
        # A timer in the next tick period (or RCU's callbacks): the tick
        # is kept, the sleep length is the time to the next clock event.
        sleep = next_event
    else:
        sleep = min(wheel_next, others)
    if sleep == INF:
        return "next timer after the trace"
    e.sleep = int(sleep - now)
    e.delta_tick = int(next_event - now) if next_event != INF else e.sleep
    return None
