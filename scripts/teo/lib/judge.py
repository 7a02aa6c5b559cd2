# SPDX-License-Identifier: GPL-2.0
"""The judge: the replay harness's matrix and the verdicts drawn from it.

Imported by scripts/teo/judge/bench (the report, make bench) and scripts/teo/judge
(the checks of make check).  The matrix is every workload of
tools/testing/cpuidle/workloads.py (the noise sweep's too) x every state
table of tools/testing/cpuidle/tables/ x HZ 100, 250 and 1000 x no latency
limit and one that rules out the deepest state x three seeds of each split
(SPLITS): the development split, what a change is shaped on, and the
validation split, other draws of the same workload families; a cell is
one replay of every governor of the series and its competitors
(cpuidle-replay --csv), with a stop and restart of the tick costing
TICK_COST_NS at the table's highest power.

A patch is judged against the patch before it, the series against
mainline teo 7.3: a cell fails if the candidate is worse than the
reference by more than 3% energy in either model, by more than 10% + 5 us
mean exit latency paid at non-timer wakeups, or by more than 2 points of
too-deep wakeups (in % of the trace's idle periods: deep_pct()); a change
passes when no cell fails and at least one geometric mean (energy in either
model, latency, too deep) is better.  A patch is kept when it passes on
both splits and keeps, for each geometric mean it improves on the
development split, at least half of that gain on the validation split
(kept()).
"""

import concurrent.futures
import csv
import hashlib
import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HARNESS = os.path.join(ROOT, "tools", "testing", "cpuidle")
CACHE = os.environ.get("TEO_CACHE", os.path.expanduser("~/.cache/teo"))
OUT = os.path.join(CACHE, "bench")
# TEO_REPLAY: a cpuidle-replay built elsewhere (a candidate's harness),
# replayed as it is: the judge builds nothing then.
REPLAY = os.environ.get("TEO_REPLAY") or os.path.join(CACHE, "build", "harness", "cpuidle-replay")
VERDICT_FILE = os.path.join(ROOT, "patches", "verdict.txt")

# Each table's usual HZ (its first comment line): the quick start and the
# rules R1-R4 replay it there; the matrix replays every table at each HZ.
TABLES = {
    "x86-i5-10600k": 1000,
    "arm-2state-osi": 250,
    "arm-rk3399": 250,
    "arm-equal-residency": 100,
    "power-snooze-cede": 100,
}
HZS = (100, 250, 1000)
# The splits: each draws every workload family's shape anew per seed
# (workloads.py), so the validation split's seeds are other draws of the
# same families.
SPLITS = {"development": (1, 2, 3), "validation": (101, 102, 103)}
SEEDS = SPLITS["development"]
ALL_SEEDS = tuple(s for seeds in SPLITS.values() for s in seeds)
PERIODS = int(os.environ.get("TEO_BENCH_PERIODS", "4000"))
REF = "teo-7.3"
# What a stop of the tick and its restart cost (docs/benchmarks.md says why), the
# figure judged and the ones reported beside it.
TICK_COST_NS = 2000
TICK_COSTS = (0, 2000, 5000)
# The limits of a failing cell.
ENERGY_LIMIT = 1.03
LATENCY_LIMIT = (1.10, 5.0)
DEEP_LIMIT = 2.0
# The geometric means' floors: a ratio of latencies or of too-deep shares
# is taken as (x + floor) / (ref + floor), so that a cell where both are
# nearly 0 counts as a tie.  1 us is the exit latency of the shallowest
# non-polling state of every table, below which no latency shows; 0.1
# point is 4 wakeups of a replay of 4000 idle periods (deep_pct()).
LATENCY_FLOOR_US = 1.0
DEEP_FLOOR = 0.1
# The oracle of each energy model (the least energy a replay can count
# in it), and the model's column in cpuidle-replay's CSV.
ORACLES = {"default": ("oracle", "energy_mj"), "table": ("oracle-table", "energy_table_mj")}
# Beside the series: mainline's other governors, ours with utilization
# read as 0 and as the CPU's capacity, and the two oracles.
OTHERS = ["menu-7.3", "teo-6.12", "menu-6.12", "teo-noutil", "teo-fullutil"] + \
    [o for o, _ in ORACLES.values()]


def die(msg):
    print(f"teo: error: {msg}", file=sys.stderr)
    sys.exit(1)


# Replays at once: TEO_JOBS as in the shell scripts, every CPU by default.
_jobs = os.environ.get("TEO_JOBS") or str(os.cpu_count() or 1)
if not _jobs.isdigit() or int(_jobs) < 1:
    die(f"TEO_JOBS must be a number of replays to run at once (got '{_jobs}')")
JOBS = int(_jobs)


def say(msg):
    print(f"teo: {msg}", file=sys.stderr, flush=True)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        die(f"{' '.join(cmd)} failed: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def harness_make(out, *args):
    """The command that builds the harness into @out (no QEMU, no cross
    compiler), with make's further @args: common.sh's harness_make_into,
    the one way every script builds it (the governor files taken out of
    the source packages first)."""
    return ["bash", "-c", 'source "$1" && shift && harness_make_into "$@"', "harness_make",
            os.path.join(ROOT, "scripts", "teo", "lib", "common.sh"), out, *args]


def build_harness(out=None):
    """Build the harness into @out (by default the series' own build
    directory); with TEO_REPLAY set and no @out, build nothing: that
    binary was built elsewhere, and it must be there."""
    if out is None and os.environ.get("TEO_REPLAY"):
        if not (os.path.isfile(REPLAY) and os.access(REPLAY, os.X_OK)):
            die(f"TEO_REPLAY={REPLAY} is not an executable: it names a cpuidle-replay "
                "built elsewhere (make -C tools/testing/cpuidle OUT=DIR builds one in DIR)")
        return
    run(harness_make(out or os.path.join(CACHE, "build", "harness")))


def _workloads_module():
    spec = importlib.util.spec_from_file_location("workloads", os.path.join(HARNESS, "workloads.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


WORKLOADS = _workloads_module()
# The main workloads, then the noise sweep's (periodic timers with random
# interrupts).
ALL_WORKLOADS = list(WORKLOADS.WORKLOADS) + list(WORKLOADS.NOISE)


def make_traces(seeds, workloads=None):
    """Write each workload's trace for each seed under OUT/traces, once per
    version of workloads.py and period count; returns {(workload, seed):
    path}."""
    out = {}
    with open(os.path.join(HARNESS, "workloads.py"), "rb") as fh:
        version = hashlib.sha256(fh.read()).hexdigest()[:12]
    d = os.path.join(OUT, "traces", f"{version}-{PERIODS}")
    os.makedirs(d, exist_ok=True)
    for wl in workloads or ALL_WORKLOADS:
        for seed in seeds:
            path = os.path.join(d, f"{wl}-{seed}.trace")
            if not os.path.exists(path):
                with open(path + ".part", "w") as fh:
                    WORKLOADS.write(wl, seed, PERIODS, fh)
                os.replace(path + ".part", path)
            out[(wl, seed)] = path
    return out


def table_path(table):
    return os.path.join(HARNESS, "tables", f"{table}.states")


def read_states(path):
    """[(name, exit latency us, target residency us, flags, power)] of the
    state table at @path (the harness's format, tools/testing/cpuidle/README)."""
    states = []
    with open(path) as fh:
        for line in fh:
            w = line.split("#")[0].split()
            if len(w) == 5:
                states.append((w[0], int(w[1]), int(w[2]), w[3], int(w[4])))
    return states


def table_states(table):
    """read_states() of one of the harness's tables, by name."""
    return read_states(table_path(table))


def latency_limit_us(table):
    """The limit that rules out the deepest state and nothing else: midway
    between the deepest state's exit latency and the largest of the others."""
    lat = [s[1] for s in table_states(table)]
    return (lat[-1] + max(lat[:-1])) // 2


def series_steps():
    """The governor each patch of patches/series leaves, with the patch's
    number and subject: teo-stepNN for a step diff patches/steps/NN-KIND.diff
    (on mainline's teo.c), teo for the last; the message file of each,
    its KIND, the series it is in (its section of patches/series: fixes,
    tests, rfc) and its number there.  Lines for another base only (a
    message "MSG@BASE") are not mainline's patches and are left out."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import seriesfile
    steps, last, k = [], None, 0
    for n, (section, e) in enumerate(seriesfile.commits(seriesfile.read(ROOT)[1], REF[4:]), 1):
        k = k + 1 if section == last else 1
        last = section
        if not e.step():
            continue
        with open(os.path.join(ROOT, "patches", e.msg)) as msg:
            subject = msg.readline().strip()
        nn, kind = e.step()
        steps.append({"gov": f"teo-step{nn}", "n": n, "subject": subject, "msg": e.msg,
                      "kind": kind, "series": section and section[0], "k": k})
    # The last step is our teo (the harness builds it as both; "build" is
    # its other name, a build of its own).
    if steps:
        steps[-1]["build"] = steps[-1]["gov"]
        steps[-1]["gov"] = "teo"
    return steps


def series_sizes():
    """{series: how many of its patches are on mainline}, from the section
    lines of patches/series."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import seriesfile
    out = {}
    for section, _ in seriesfile.commits(seriesfile.read(ROOT)[1], REF[4:]):
        out[section and section[0]] = out.get(section and section[0], 0) + 1
    return out


STEPS = series_steps()
SERIES = [s["gov"] for s in STEPS]


def step_of(kind):
    """(the step of patches/steps/NN-KIND.diff, the step before it or REF
    if it is the first), as the harness names them, or (None, None)."""
    for i, s in enumerate(STEPS):
        if s["kind"] == kind:
            return s["gov"], SERIES[i - 1] if i else REF
    return None, None


# The step that brings utilization awareness (patches/steps/NN-util.diff):
# with utilization off ("STEP-noutil" in the harness) it must decide like
# the step before it, whatever later steps add.
UTIL_STEP, BEFORE_UTIL = step_of("util")
# The preparation for KUnit must decide like the step before it.
PREPARE_STEP, BEFORE_PREPARE = step_of("prepare-for-kunit")

GOVERNORS = [REF] + SERIES + OTHERS


# ---- The matrix ------------------------------------------------------------

def split_cells(cells, split):
    """The cells of @split ("development" or "validation")."""
    return {k: v for k, v in cells.items() if k[4] in SPLITS[split]}


def cell_keys(seeds=ALL_SEEDS, workloads=None):
    """Every cell: (table, HZ, latency limit in us or 0 for none, workload,
    seed)."""
    return [(t, hz, lim, wl, seed)
            for t in TABLES for hz in HZS for lim in (0, latency_limit_us(t))
            for wl in (workloads or ALL_WORKLOADS) for seed in seeds]


def label(key):
    t, hz, lim, wl, seed = key
    return f"{t} HZ={hz}{f' limit {lim} us' if lim else ''} {wl} seed {seed}"


def replay_cell(key, trace, govs, timed):
    """One cell's replay: {governor: row} from cpuidle-replay --csv."""
    t, hz, lim, wl, seed = key
    cmd = [REPLAY, "--csv", "--hz", str(hz), "--table", table_path(t), "--trace", trace,
           "--tick-cost", str(TICK_COST_NS), "--gov", ",".join(govs)]
    if lim:
        cmd += ["--latency-limit", str(lim)]
    if not timed:
        cmd.append("--no-cost")
    return replay_rows(cmd)


def replay_rows(cmd):
    """Run cpuidle-replay --csv (@cmd) and return {governor: row}, a row's
    figures as numbers and its residency shares by state name."""
    rows = {}
    for r in csv.DictReader(io.StringIO(run(cmd))):
        row = {k: (r[k] if k == "governor" else float(r[k])) for k in r
               if not k.startswith("residency_pct_")}
        row["residency_pct"] = {k[len("residency_pct_"):]: float(v)
                                for k, v in r.items() if k.startswith("residency_pct_")}
        rows[r["governor"]] = row
    return rows


def timed_cell(key):
    """Whether a cell times the decisions (ns per select + reflect, most of
    a replay's run time): seed 1, no limit, the table's usual HZ."""
    t, hz, lim, _, seed = key
    return seed == 1 and not lim and hz == TABLES[t]


def run_matrix(keys, govs=None, timing=False):
    """Replay every cell of @keys through @govs (default GOVERNORS), on
    TEO_JOBS CPUs at once (default all), with progress on stderr every
    10 s; returns {key: {governor: row}}."""
    govs = govs or GOVERNORS
    traces = make_traces(sorted({k[4] for k in keys}), sorted({k[3] for k in keys}))
    cache = None if timing else matrix_cache(keys, govs)
    if cache and os.path.exists(cache):
        with open(cache) as fh:
            cells = {tuple(c["key"]): c["rows"] for c in json.load(fh)}
        say(f"{len(keys)} cells through {len(govs)} governors: the replays of the same "
            f"harness, traces and tables, from {cache}")
        return cells
    cells = {}
    start = last = time.time()
    say(f"replaying {len(keys)} cells of {PERIODS} idle periods through {len(govs)} "
        f"governors on {JOBS} CPUs")
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        futures = {pool.submit(replay_cell, k, traces[(k[3], k[4])], govs,
                               timing and timed_cell(k)): k for k in keys}
        for fut in concurrent.futures.as_completed(futures):
            cells[futures[fut]] = fut.result()
            if time.time() - last >= 10:
                last = time.time()
                say(f"{len(cells)} of {len(keys)} cells ({100 * len(cells) // len(keys)}%), "
                    f"{last - start:.0f} s")
    say(f"{len(keys)} cells in {time.time() - start:.0f} s")
    if cache:
        with open(cache + ".part", "w") as fh:
            json.dump([{"key": k, "rows": v} for k, v in cells.items()], fh)
        os.replace(cache + ".part", cache)
    return cells


def harness_inputs():
    """What the harness's decisions are made of, as the paths to read: the
    checksums its Makefile keeps of the step diffs, shim.h and the harness's
    sources,
    the upstream governors it copied, and the Makefile; or the replay
    binary itself if TEO_REPLAY names one built elsewhere.  Sources, not
    the binary, so that another clone of the same commit (whose binary
    names other paths in its debug information) reads the same replays
    back."""
    out = os.path.dirname(REPLAY)
    if os.environ.get("TEO_REPLAY"):
        return [REPLAY]
    paths = [os.path.join(out, f".{n}.sum") for n in ("steps", "shim", "replay")]
    for base in ("7.3", "6.12"):
        d = os.path.join(out, f"upstream-{base}")
        paths += [os.path.join(d, f) for f in sorted(os.listdir(d))] if os.path.isdir(d) else []
    return paths + [os.path.join(HARNESS, "Makefile")]


def matrix_cache(keys, govs):
    """Where the untimed replays of @keys through @govs are kept: a file
    named by a digest of everything they depend on (harness_inputs(), the
    compiler, workloads.py, the state tables, the period count, the tick
    cost, the cells and the governors), so that a run with the same inputs
    reads the same figures back and any change replays them.  None if an
    input cannot be read."""
    h = hashlib.sha256()
    try:
        for path in harness_inputs():
            with open(path, "rb") as fh:
                h.update(fh.read())
        h.update(subprocess.run(["cc", "--version"], capture_output=True).stdout)
    except OSError:
        return None
    with open(os.path.join(HARNESS, "workloads.py"), "rb") as fh:
        h.update(fh.read())
    for t in sorted({k[0] for k in keys}):
        with open(table_path(t), "rb") as fh:
            h.update(fh.read())
    h.update(repr((PERIODS, TICK_COST_NS, sorted(keys), list(govs))).encode())
    d = os.path.join(OUT, "matrix")
    os.makedirs(d, exist_ok=True)
    # Keep the latest few: each is some tens of MB.
    old = sorted((os.path.join(d, f) for f in os.listdir(d)), key=os.path.getmtime)
    for f in old[:-4]:
        os.remove(f)
    return os.path.join(d, h.hexdigest()[:16] + ".json")


# ---- Energy at a tick cost, and the comparison of two governors -----------

def energy(row, model, cost_ns=TICK_COST_NS):
    """A row's energy (mJ) in @model ("default" or "table") with a stop and
    restart of the tick costing @cost_ns: the replay counted TICK_COST_NS
    per stop at the table's highest power, and a governor's decisions do not
    depend on that cost (an oracle's do: only TICK_COST_NS is exact for
    it)."""
    e = row["energy_mj" if model == "default" else "energy_table_mj"]
    return e + row["tick_stops"] * (cost_ns - TICK_COST_NS) * row["running_mw"] / 1e9


def per_period(rows, count):
    """The wakeups counted in @count ("too_deep_wakeups" or
    "too_shallow_wakeups") over @rows, in % of their traces' idle periods,
    which are the same for every governor of a cell.  The replay's
    too_deep_pct is a share of the governor's own calls, which count a
    re-entry after each tick that it kept: a governor that stops the tick
    in a long idle period has fewer calls, and the same too-deep wakeups
    would read as a larger share."""
    periods = sum(r["idle_periods"] for r in rows)
    return 100 * sum(r[count] for r in rows) / periods if periods else 0.0


def deep_pct(row):
    """A row's too-deep wakeups in % of the trace's idle periods."""
    return per_period([row], "too_deep_wakeups")


def shallow_pct(row):
    """A row's too-shallow wakeups in % of the trace's idle periods."""
    return per_period([row], "too_shallow_wakeups")


# The utilized interactive workloads (rule R4 of scripts/teo/judge/bench): where
# the early wakeups follow a pattern a history can learn (frames, touch,
# I/O), utilization awareness is to halve teo 7.3's too-deep wakeups
# without costing energy; where they do not (independent coin flips, a
# producer's distances drawn at random, replies that always come early),
# it is never to add any.
LEARNABLE = ("touch-pingpong", "touch-bimodal", "touch-frames", "frames", "fio-psync",
             "io-completions")
UNLEARNABLE = ("pingpong-us", "bimodal-irq-timer", "cross-cpu")
INTERACTIVE = LEARNABLE + UNLEARNABLE


def energy_within(r, base, limit):
    """Whether row @r's energy is at most @limit times @base's in the
    default model or in the one the table implies: the two differ only in
    what entering and leaving a state costs, which no table gives, so the
    rules R2-R5 count a cost only where both models show it."""
    return (energy(r, "default") <= limit * energy(base, "default") or
            energy(r, "table") <= limit * energy(base, "table"))


def summed(rows):
    """@rows (one governor's, of cells that differ only in their seed) as
    one row: wakeups, idle periods and energy added up, utilization
    averaged."""
    out = {k: sum(r[k] for r in rows) for k in
           ("too_deep_wakeups", "too_shallow_wakeups", "idle_periods", "energy_mj",
            "energy_table_mj", "tick_stops")}
    out["running_mw"] = rows[0]["running_mw"]
    out["util_pct"] = sum(r["util_pct"] for r in rows) / len(rows)
    return out


def interactive_rows(cells, gov, split="validation"):
    """Rule R4 per row: each of INTERACTIVE on the x86 and RK3399-like
    tables at their own HZ, without a latency limit, summed over the seeds
    of @split, as (table, workload, met, @gov's row, REF's, menu 7.3's).
    Met, on LEARNABLE: too deep at most half of REF's, too shallow at most
    3 points above REF's, energy no higher (energy_within()); elsewhere:
    too deep no higher than REF's (within DEEP_FLOOR) and energy no
    higher."""
    out = []
    for table in ("x86-i5-10600k", "arm-rk3399"):
        for wl in INTERACTIVE:
            r, u, m = (summed([cells[(table, TABLES[table], 0, wl, s)][g]
                               for s in SPLITS[split]]) for g in (gov, REF, "menu-7.3"))
            if wl in LEARNABLE:
                met = (deep_pct(r) <= 0.5 * deep_pct(u) and
                       shallow_pct(r) <= shallow_pct(u) + 3 and energy_within(r, u, 1))
            else:
                met = deep_pct(r) <= deep_pct(u) + DEEP_FLOOR and energy_within(r, u, 1)
            out.append((table, wl, met, r, u, m))
    return out


def figures(cand, ref, cost_ns=TICK_COST_NS):
    """Each criterion's figures in one cell: {criterion: (candidate's,
    reference's)}."""
    return {"energy": (energy(cand, "default", cost_ns), energy(ref, "default", cost_ns)),
            "table": (energy(cand, "table", cost_ns), energy(ref, "table", cost_ns)),
            "latency": (cand["irq_exit_latency_mean_us"], ref["irq_exit_latency_mean_us"]),
            "deep": (deep_pct(cand), deep_pct(ref))}


def over_limits(f):
    """The ways a cell's figures @f (figures()) are worse than the
    reference's beyond the limits: [(criterion, candidate's figure,
    reference's figure)]."""
    over = {"energy": lambda c, r: c > ENERGY_LIMIT * r,
            "table": lambda c, r: c > ENERGY_LIMIT * r,
            "latency": lambda c, r: c > LATENCY_LIMIT[0] * r + LATENCY_LIMIT[1],
            "deep": lambda c, r: c > r + DEEP_LIMIT}
    return [(crit, *f[crit]) for crit in CRITERIA if over[crit](*f[crit])]


def worse(cand, ref, cost_ns=TICK_COST_NS):
    """The ways @cand is worse than @ref in one cell beyond the limits, as
    over_limits() gives them."""
    return over_limits(figures(cand, ref, cost_ns))


def excess(crit, cand, ref):
    """How far a candidate's figure is above the reference's: in points for
    too deep, as a fraction of the reference's otherwise."""
    return cand - ref if crit == "deep" else cand / max(ref, 1e-9) - 1


def ratios(cand, ref, cost_ns=TICK_COST_NS):
    """The cell's ratios, candidate to reference, of what the geometric
    means take: energy in both models, latency and too deep (with floors)."""
    return {
        "energy": energy(cand, "default", cost_ns) / energy(ref, "default", cost_ns),
        "table": energy(cand, "table", cost_ns) / energy(ref, "table", cost_ns),
        "latency": (cand["irq_exit_latency_mean_us"] + LATENCY_FLOOR_US) /
                   (ref["irq_exit_latency_mean_us"] + LATENCY_FLOOR_US),
        "deep": (deep_pct(cand) + DEEP_FLOOR) / (deep_pct(ref) + DEEP_FLOOR),
    }


CRITERIA = ("energy", "table", "latency", "deep")
NAMES = {"energy": "energy", "table": "table-implied energy", "latency": "interrupt latency",
         "deep": "too deep"}


def same(cand, ref):
    """Whether two rows are the same replay, decision for decision (as far
    as the figures tell)."""
    keys = ("wakeups", "too_deep_pct", "too_shallow_pct", "energy_mj", "energy_table_mj",
            "tick_stops", "irq_exit_latency_mean_us")
    return all(cand[k] == ref[k] for k in keys)


def judge(cells, cand, ref, cost_ns=TICK_COST_NS):
    """@cand against @ref over @cells: {"n": cells, "geo": {criterion:
    geometric mean}, "fails": [(key, [(criterion, cand, ref)])], "same":
    whether every cell is the same replay, "verdict": "PASS", "FAIL" or
    "same decisions", "better": the geometric means below 1, "higher": per
    criterion, the cell where @cand's figure is highest above @ref's, failing
    or not, as (key, cand, ref), or None if it is nowhere higher, "figures":
    every figure of each failing cell, {key: figures()}}."""
    logs = {c: 0.0 for c in CRITERIA}
    fails, identical, failed = [], True, {}
    higher = {c: None for c in CRITERIA}
    for key in sorted(cells):
        rows = cells[key]
        ratio = ratios(rows[cand], rows[ref], cost_ns)
        for c in CRITERIA:
            logs[c] += math.log(ratio[c])
        f = figures(rows[cand], rows[ref], cost_ns)
        for c, (cv, rv) in f.items():
            score = excess(c, cv, rv)
            if score > 1e-9 and (higher[c] is None or score > higher[c][0]):
                higher[c] = (score, key, cv, rv)
        w = over_limits(f)
        if w:
            fails.append((key, w))
            failed[key] = f
        identical &= same(rows[cand], rows[ref])
    n = max(len(cells), 1)
    geo = {c: math.exp(logs[c] / n) for c in CRITERIA}
    better = [c for c in CRITERIA if geo[c] < 1 - 1e-9]
    if identical:
        verdict = "no change"
    elif not fails and better:
        verdict = "PASS"
    else:
        verdict = "FAIL"
    return {"n": len(cells), "geo": geo, "fails": fails, "same": identical,
            "verdict": verdict, "better": better,
            "higher": {c: h and h[1:] for c, h in higher.items()}, "figures": failed}


def step_label(step):
    """A patch as the verdict tables name it: its series and its number
    there ("rfc 3/8")."""
    return f"{step['series']} {step['k']}/{series_sizes().get(step['series'], '?')}"


def pairs():
    """(label, candidate, reference, step) for each patch that leaves a
    governor, against the one before it, then the series against REF."""
    out, prev = [], REF
    for s in STEPS:
        out.append((step_label(s), s["gov"], prev, s))
        prev = s["gov"]
    out.append(("all", SERIES[-1], REF, None))
    return out


def oracle_bound(cells):
    """The cells where a governor used less energy than the oracle of a
    model: [(key, governor, model, its energy, the oracle's)]."""
    out = []
    for key, rows in sorted(cells.items()):
        for model, (oracle, col) in ORACLES.items():
            if oracle not in rows:
                continue
            bound = rows[oracle][col]
            for g, r in rows.items():
                if r[col] < bound * (1 - 1e-9):
                    out.append((key, g, model, r[col], bound))
    return out


# ---- Text --------------------------------------------------------------------

def fmt_cell(key, crit, c, r):
    """One figure of a cell against the reference's, as the verdict lists
    it."""
    if crit in ("energy", "table"):
        what = f"{'energy' if crit == 'energy' else 'table-implied energy'} " \
               f"{100 * (c / r - 1):+.1f}% ({r:.0f} -> {c:.0f} mJ)"
    elif crit == "latency":
        what = f"interrupt latency {r:.1f} -> {c:.1f} us"
    else:
        what = f"too deep {r:.2f}% -> {c:.2f}%"
    return what


def also_text(f, shown, sep=" "):
    """The figures of a failing cell (figures()) other than the criteria
    @shown, so that what its failure buys is seen beside it; @sep between
    the words of a figure (wrap() keeps a figure whole if it is \\0)."""
    return ", ".join(gist_figure(c, *f[c]).replace(" ", sep)
                     for c in CRITERIA if c not in shown)


def last_step_diff():
    """The file name of the series' last step diff, patches/steps/NN-*.diff."""
    diffs = sorted(d for d in os.listdir(os.path.join(ROOT, "patches", "steps"))
                   if d.endswith(".diff"))
    if not diffs:
        die("patches/steps/ has no step diff")
    return diffs[-1]


def last_step():
    """NN of the series' last step diff (last_step_diff())."""
    return last_step_diff().split("-")[0]


def worst(fails, crit):
    """The failing cell worst by @crit (relative for energy and latency,
    in points for too deep), as (key, cand, ref), or None."""
    best = None
    for key, w in fails:
        for c, cv, rv in w:
            if c != crit:
                continue
            score = excess(crit, cv, rv)
            if best is None or score > best[0]:
                best = (score, key, cv, rv)
    return best and best[1:]


def matrix_dims(cells):
    """The matrix's state tables, HZ (as text), workloads and seeds, each
    sorted."""
    return (sorted({k[0] for k in cells}), [str(h) for h in sorted({k[1] for k in cells})],
            sorted({k[3] for k in cells}), sorted({k[4] for k in cells}))


def seeds_text(seeds):
    """The seeds of a matrix, by split."""
    parts = [f"{', '.join(map(str, [x for x in seeds if x in SPLITS[n]]))} ({n})"
             for n in SPLITS if any(x in SPLITS[n] for x in seeds)]
    return f"{'seed' if len(seeds) == 1 else 'seeds'} {' and '.join(parts)}"


def matrix_text(cells):
    """The matrix's dimensions, for a verdict's first lines."""
    tables, hzs, wls, seeds = matrix_dims(cells)
    return (f"{len(cells)} cells: {len(wls)} workload families x {len(tables)} state tables x "
            f"HZ {' and '.join([', '.join(hzs[:-1]), hzs[-1]] if len(hzs) > 1 else hzs)} x "
            f"no latency limit and one that rules out the deepest state x "
            f"{seeds_text(seeds)}, each seed a new draw of every family's shape")


def kept(cells, cand, ref, cost_ns=TICK_COST_NS):
    """@cand against @ref on each split: {"development": judge(),
    "validation": judge(), "verdict": "no change", "kept" or "drop: WHY"}.
    Kept: it passes on both splits, and for each geometric mean it brings
    below 1 on the development split, the validation split's is at least
    half as far below 1."""
    v = {name: judge(split_cells(cells, name), cand, ref, cost_ns) for name in SPLITS}
    dev, val = v["development"], v["validation"]
    if dev["same"] and val["same"]:
        v["verdict"] = "no change"
        return v
    failed = [name for name in SPLITS if v[name]["verdict"] == "FAIL"]
    short = {c: x for c, x in kept_shares(v).items() if x < 0.5}
    if failed:
        v["verdict"] = f"drop: fails on {' and '.join(failed)}"
    elif short:
        v["verdict"] = "drop: validation keeps " + ", ".join(
            f"{100 * x:.0f}% of its {c} gain" for c, x in short.items())
    else:
        v["verdict"] = "kept"
    return v


def kept_shares(k):
    """For each criterion whose geometric mean kept()'s @k has below 1 on
    the development split: the share of that gain (its distance below 1)
    the validation split keeps."""
    dev, val = k["development"]["geo"], k["validation"]["geo"]
    return {c: (1 - val[c]) / (1 - dev[c]) for c in CRITERIA if dev[c] < 1 - 1e-9}


def verdict_table(cells, cost_ns=TICK_COST_NS, width=None, series=None):
    """Per patch (against the one before it) and for the three series
    together (against REF, the row "all"), a line per split: the geometric
    means, the failing cells per criterion and that split's verdict, the
    validation line ending with kept()'s; with @series, only that series'
    patches (and "all" for the last series)."""
    lines = [f"{'':15} {VERDICT_HEAD[0]}  verdict", f"{'':15} {VERDICT_HEAD[1]}"]
    last = STEPS[-1]["series"] if STEPS else None
    for name, cand, ref, step in pairs():
        if series and (step["series"] != series if step else series != last):
            continue
        k = kept(cells, cand, ref, cost_ns)
        for split, short in (("development", "dev"), ("validation", "val")):
            v = k[split]
            tail = v["verdict"] if split == "development" else \
                f"{v['verdict']}; {k['verdict']}" if k["verdict"] != "no change" else "no change"
            lines.append(f"{name if short == 'dev' else '':10} {short} {verdict_line(v)}  {tail}")
    return lines


VERDICT_HEAD = [f"{'energy':>7} {'table':>7} {'latency':>7} {'deep':>7} {'failing cells':>14}",
                f"{'':>7} {'':>7} {'':>7} {'':>7} {'(e/t/l/d)':>14}"]


def fails_per(v):
    """A verdict's failing cells per criterion: {criterion: count}."""
    return {c: sum(1 for _, w in v["fails"] if any(x[0] == c for x in w)) for c in CRITERIA}


def verdict_line(v):
    """A verdict's geometric means and failing cells (all, and per
    criterion), in the columns of VERDICT_HEAD."""
    per = fails_per(v)
    counts = f"{len(v['fails'])} ({'/'.join(str(per[c]) for c in CRITERIA)})"
    return " ".join(f"{v['geo'][c]:6.3f}x" for c in CRITERIA) + f" {counts:>14}"


def worst_lines(v, indent="  "):
    """A verdict's worst failing cell per criterion, two lines each; with
    none failing, the cell where each figure is highest above the
    reference's, within the limits."""
    out, nowhere = [], []
    for crit in CRITERIA:
        w = worst(v["fails"], crit) if v["fails"] else v["higher"][crit]
        if w:
            key, c, r = w
            out.append(f"{indent}{fmt_cell(key, crit, c, r)}")
            out.append(f"{indent}  in {label(key)}")
            if key in v["figures"]:
                out += [f"{indent}  {x}" for x in
                        wrap("with " + also_text(v["figures"][key], (crit,), "\0"),
                             70 - len(indent))]
        elif not v["fails"]:
            nowhere.append(NAMES[crit])
    if not v["fails"]:
        out = [f"{indent}none beyond the limits; the highest figures within them:"] + out
        if nowhere:
            out.append(f"{indent}{', '.join(nowhere)}: higher in no cell")
    return out


def wrap(text, width=72):
    """@text as lines of at most @width columns, a figure kept with its
    unit."""
    text = re.sub(r"(\d) (us|ms|mJ|cells)\b", "\\1\0\\2", text)
    return [x.replace("\0", " ") for x in textwrap.wrap(text, width, break_on_hyphens=False)]


def judged_text(cells):
    """What the judge replays, as a cover letter's prose says it."""
    return (f"Modelled, not measured: the replay harness of tools/testing/cpuidle (make "
            f"bench) replays {matrix_text(cells)}; energy in the default model (each exit "
            f"latency paid at the table's highest power) and in the one the target "
            f"residencies imply, a stop and restart of the tick costing "
            f"{TICK_COST_NS // 1000} us at the table's highest power.")


# How a patch's verdict opens, modelled or with no decision changed
# (patch_block()); scripts/teo/tree/refresh finds a verdict in a message by it.
VERDICT_OPENINGS = ("Modelled, not measured: the replay harness of tools/testing/cpuidle",
                    "No decision changes: the replay harness of tools/testing/cpuidle")


def gist_matrix(cells):
    """The judge's matrix, as a changelog states it."""
    tables, hzs, wls, seeds = matrix_dims(cells)
    n = {name: sum(1 for x in seeds if x in SPLITS[name]) for name in SPLITS}
    return (f"{len(cells)} cells ({len(wls)} workload families on {len(tables)} state "
            f"tables at HZ {', '.join(hzs[:-1])} and {hzs[-1]}, with and without a latency "
            f"limit that rules out the deepest state, {n['development']} seeds each in a "
            f"development split and {n['validation']} in a validation split, each seed "
            f"drawing the family's shape anew)")


def gist_conditions(cells):
    """The conditions of a modelled figure, as a changelog states them."""
    return f"{VERDICT_OPENINGS[0]} (make bench) replays {gist_matrix(cells)}"


def patch_block(cells, cand, ref, what):
    """The gist of a patch's verdict, as its message quotes it where it
    says @VERDICT@: what it is measured against and how, labelled as
    modelled, at most 72 columns.  The full verdict, with the cells named,
    is in the cover letter and docs/benchmarks.md."""
    v = judge(cells, cand, ref)
    if v["same"]:
        return wrap(f"{VERDICT_OPENINGS[1]} (make bench) replays {gist_matrix(cells)} "
                    f"through this change and through {what}, and every cell comes out the "
                    "same: the same wakeups, too-deep and too-shallow wakeups, tick stops, "
                    "energy and exit latency.")
    lines = wrap(gist_conditions(cells) + f" against {what}: geometric means of the cells' "
                 "ratios, energy in the model that pays each exit latency at the table's "
                 "highest power and in the one the target residencies imply, a stop and "
                 f"restart of the tick costing {TICK_COST_NS // 1000} us:")
    lines += ["", "               energy  table-implied  exit latency    too deep",
              "                                      at interrupts"]
    k = kept(cells, cand, ref)
    for name in SPLITS:
        g = k[name]["geo"]
        lines.append(f"  {name:11} {g['energy']:6.3f}x {g['table']:13.3f}x "
                     f"{g['latency']:13.3f}x {g['deep']:11.3f}x")
    lines.append("")
    costs = [c for c in TICK_COSTS if c != TICK_COST_NS]
    other = [judge(cells, cand, ref, c) for c in costs]
    if not v["fails"]:
        head = ("No cell of either split is worse by more than 3% energy in either model, "
                "10% + 5 us of mean "
                "exit latency at interrupts or 2 points of too-deep wakeups")
        if all(not o["fails"] for o in other):
            head += (" (nor with a tick stop costing "
                     f"{' or '.join(str(c // 1000) for c in costs)} us)")
        rises = []
        for crit in CRITERIA:
            h = v["higher"][crit]
            if h:
                _, c, r = h
                rises.append(gist_figure(crit, c, r))
        tail = (f"; the largest rises in a cell, each figure on its own: {', '.join(rises)}."
                if rises else "; no figure rises in any cell.")
        return lines + wrap(head + tail + kept_text(k))
    per = fails_per(v)
    worst_ = []
    for crit in CRITERIA:
        w = worst(v["fails"], crit)
        if w:
            worst_.append(gist_figure(crit, w[1], w[2]))
    return lines + wrap(f"{len(v['fails'])} of {v['n']} cells are worse by more than 3% "
                        f"energy in either model ({per['energy']} and {per['table']}), "
                        f"10% + 5 us of mean exit latency at interrupts ({per['latency']}) or "
                        f"2 points of too-deep wakeups ({per['deep']}); the worst: "
                        f"{', '.join(worst_)}." + kept_text(k))


def kept_text(k):
    """kept()'s @k, as a changelog states it."""
    gains = kept_shares(k)
    if not gains:
        return ""
    shares = [f"{100 * x:.0f}%" for x in gains.values()]
    names = [NAMES[c] for c in gains]

    def listed(xs):
        return xs[0] if len(xs) == 1 else f"{', '.join(xs[:-1])} and {xs[-1]}"
    return (f"  The validation split keeps {listed(shares)} of the development split's "
            f"{'gain' if len(gains) == 1 else 'gains'} in {listed(names)}.")


def gist_figure(crit, c, r):
    """One figure of a cell against the reference's, without the cell's
    name."""
    if crit in ("energy", "table"):
        return f"{'energy' if crit == 'energy' else 'table-implied'} {100 * (c / r - 1):+.2f}%"
    if crit == "latency":
        return f"exit latency at interrupts {r:.1f} to {c:.1f} us"
    return f"too deep {r:.2f}% to {c:.2f}% of idle periods"


def series_block(cells, series):
    """The cover letter's section for @series: its patches' verdicts,
    and for the last series the three series' against REF with their
    worst cells."""
    last = STEPS[-1]["series"] if STEPS else None
    lines = wrap(judged_text(cells) + "  Each patch against the governor before it (mainline's "
                 f"{REF} before the first of the fixes"
                 + (", the row \"all\" the three series together against it" if series == last
                    else "") +
                 "): geometric means of the cells' ratios, and the cells worse by more than 3% "
                 "energy in either model (e, t), 10% + 5 us mean exit latency at interrupts (l) "
                 "or 2 points of too-deep wakeups (d):")
    lines += [""] + ["  " + x for x in verdict_table(cells, series=series)]
    if series == last:
        v = judge(cells, SERIES[-1], REF)
        lines += ["", f"The worst cells of the three series against {REF}:"] + worst_lines(v)
    return lines


README = os.path.join(ROOT, "README.md")
BENCH_DOC = os.path.join(ROOT, "docs", "benchmarks.md")
# The judge's rules and its latest report, and its plot (bench --update).
JUDGE_DOC = os.path.join(ROOT, "docs", "judge.md")
JUDGE_PNG = os.path.join(ROOT, "docs", "judge.png")
README_BEGIN = "<!-- the judge's verdict, written by scripts/teo/judge/bench --update: begin -->"
README_END = "<!-- the judge's verdict: end -->"


def readme_block(cells):
    """The verdict as docs/benchmarks.md quotes it, between its markers."""
    v = judge(cells, SERIES[-1], REF)
    return "\n".join([README_BEGIN, "", "    " + "\n    ".join(verdict_table(cells)), "",
                      f"The worst cells of the three series together against {REF}:", "",
                      "    " + "\n    ".join(x.strip() for x in worst_lines(v)), "",
                      README_END])


RESULTS_BEGIN = "<!-- the results, written by scripts/teo/judge/bench --update: begin -->"
RESULTS_END = "<!-- the results: end -->"
RESULTS_GOVS = (("ours", None), (REF, REF), ("menu-7.3", "menu-7.3"))


def results_table(cells):
    """Ours, REF and menu-7.3 on each split: geometric means of the cells'
    ratios to REF, the plain means of too deep and of the exit latency at
    interrupts, and the cells where each is worse than REF."""
    lines = [f"{'':21} {'energy':>7} {'table-implied':>14} {'interrupt latency':>18} "
             f"{'too deep':>15}  cells worse than {REF}",
             f"{'':21} {'':>7} {'energy':>14} {'(mean)':>18} {'(mean)':>15}"]
    for split in SPLITS:
        sub = split_cells(cells, split)
        n = max(len(sub), 1)
        for i, (name, gov) in enumerate(RESULTS_GOVS):
            gov = gov or SERIES[-1]
            v = judge(sub, gov, REF)
            lat = sum(c[gov]["irq_exit_latency_mean_us"] for c in sub.values()) / n
            deep = sum(deep_pct(c[gov]) for c in sub.values()) / n
            worse = ", ".join(f"{NAMES[c]} {m}" for c, m in fails_per(v).items() if m) or "none"
            tail = "-" if gov == REF else f"{len(v['fails'])} of {len(sub)}: {worse}"
            lines.append(f"{split if not i else '':11} {name:9} {v['geo']['energy']:6.3f}x "
                         f"{v['geo']['table']:13.3f}x {v['geo']['latency']:6.3f}x "
                         f"({lat:5.1f} us) {v['geo']['deep']:6.3f}x ({deep:4.2f}%)  {tail}")
    return lines


def results_block(cells):
    """The results table as the top README quotes it, between its markers."""
    return "\n".join([RESULTS_BEGIN, "", "    " + "\n    ".join(results_table(cells)), "",
                      RESULTS_END])


def replace_block(text, begin, end, block):
    """@text with the part from @begin to @end replaced by @block, or None
    if it has no such markers."""
    if begin not in text or end not in text:
        return None
    head, rest = text.split(begin, 1)
    return head + block + rest.split(end, 1)[1]


def readme_with_block(text, cells):
    """@text (the top README) with its results block replaced, or None if
    it has no markers."""
    return replace_block(text, RESULTS_BEGIN, RESULTS_END, results_block(cells) if cells else "")


def bench_doc_with_block(text, cells):
    """@text (docs/benchmarks.md) with its verdict block replaced, or None
    if it has no markers."""
    return replace_block(text, README_BEGIN, README_END, readme_block(cells) if cells else "")


def read_verdict_file(path=VERDICT_FILE):
    """{section: text} of patches/verdict.txt."""
    sections, name = {}, None
    with open(path) as fh:
        for line in fh:
            if line.startswith("#"):
                continue
            if line.startswith("[") and line.rstrip().endswith("]"):
                name = line.strip()[1:-1]
                sections[name] = []
            elif name:
                sections[name].append(line.rstrip("\n"))
    return {k: "\n".join(v).strip("\n") for k, v in sections.items()}


def verdict_file_text(cells):
    """patches/verdict.txt: each patch's gist, then each series' section."""
    out = ["# The judge's verdicts, written by scripts/teo/judge/bench --update from the",
           "# full matrix; make check fails if they are not what the judge prints.",
           "# scripts/teo/tree/tree puts a patch's section where its message says",
           "# @VERDICT@, scripts/teo/tree/series a series' section where its cover",
           "# letter says @BENCH@."]
    for name, cand, ref, step in pairs():
        if step is None:
            continue
        what = "the governor without this change"
        out += ["", f"[{step['msg']}]"] + patch_block(cells, cand, ref, what)
    for series in dict.fromkeys(s["series"] for s in STEPS):
        out += ["", f"[{series}]"] + series_block(cells, series)
    return "\n".join(out) + "\n"
