# SPDX-License-Identifier: GPL-2.0
"""The judge's checks in make check (scripts/teo/judge/bench --check).

Replays the whole matrix of scripts/teo/lib/judge.py through the governors
the verdicts read, mainline teo 7.3 and each step of the series, and the
two oracles (without timing the decisions: about three and a half
minutes on two CPUs, seconds when a run with the same inputs has cached
them; make bench adds menu, teo 6.12 and ours with utilization off, and
the harness's own self-test bounds every governor it builds on random
traces), and checks:

 - none of them uses less energy than the oracle of either energy model in
   any cell (the oracles are the least energy a replay can count);
 - patches/verdict.txt, which the patch messages and the cover letter
   quote, the results table in README.md and the verdict table in
   docs/benchmarks.md are what the judge prints
   now (scripts/teo/judge/bench --update rewrites them), and README.md's
   figures for the targets below that are not met yet are the ones
   measured here;
 - too deep is counted per idle period of the trace, not per call;
 - issue 60's targets on the validation split (other draws of the same
   workload families than the development split changes are shaped on):
   the series against mainline teo 7.3 with no failing cell, energy at
   most 0.97x in both models and interrupt latency at most 0.93x; every
   patch kept (passing on both splits, keeping on validation half of each
   gain it shows on development); and rule R4 of scripts/teo/judge/bench on the
   utilized interactive workloads (too deep at most half of teo 7.3's
   where a history can learn the early wakeups, no more elsewhere, energy
   no higher).  Not met yet: expected failures (XFAIL) that name what
   misses, and failures (XPASS) once met, so that their marks go.

The last lines are "bench-check: N expected failures" (if any) and
"bench-check: N passed, N failed".
"""
import difflib
import os
import re
import sys

import judge
import seriesfile

SUITE = "bench-check"


# Issue 29's R4 per row is not met (see docs/benchmarks.md): a known
# failure until the author settles it or a change meets it.
R4_XFAIL = True
# Issue 60's targets: the series against teo 7.3 on the validation split,
# and every patch kept on both splits; not met yet (docs/benchmarks.md).
TARGET = {"energy": 0.97, "table": 0.97, "latency": 0.93}
TARGET_XFAIL = True
KEPT_XFAIL = True


class Tally:
    def __init__(self):
        self.passed = self.failed = self.xfailed = 0

    def check(self, ok, name, detail=()):
        print(f"{SUITE}: {'PASS' if ok else 'FAIL'} {name}")
        for line in detail if not ok else ():
            print(f"    {line}")
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def expect_fail(self, ok, name, detail=()):
        """A check known to fail: XFAIL if it fails, and a failure (XPASS)
        if it passes, so that its mark is removed."""
        if ok:
            print(f"{SUITE}: FAIL (XPASS) {name}: it passes now, remove its expected-failure "
                  f"mark in scripts/teo/lib/judgecheck.py")
            self.failed += 1
            return
        print(f"{SUITE}: XFAIL {name}")
        for line in detail:
            print(f"    {line}")
        self.xfailed += 1


def main():
    """Run the checks; 1 if any failed."""
    judge.build_harness()
    cells = judge.run_matrix(judge.cell_keys(),
                             [judge.REF] + judge.SERIES + ["menu-7.3"] + [o for o, _ in judge.ORACLES.values()])
    t = Tally()

    # Too deep per idle period of the trace: a governor that stops the tick
    # for a long idle period makes fewer calls (no re-entry after the kept
    # tick), and the same too-deep wakeups must not read as more.  A real
    # row, given 4000 idle periods and 400 too-deep wakeups over 8000 calls
    # (5% of them) or 4000 (10%); 81 more are over 2 points more.
    key = min(cells)
    ref = dict(cells[key][judge.REF], idle_periods=4000, wakeups=8000,
               too_deep_wakeups=400, too_deep_pct=5.0)
    fewer = dict(ref, wakeups=4000, too_deep_pct=10.0)
    more = dict(fewer, too_deep_wakeups=481, too_deep_pct=12.025)
    t.check(not judge.worse(fewer, ref) and
            [c for c, _, _ in judge.worse(more, ref)] == ["deep"],
            "too deep is counted per idle period of the trace, not per call of the governor",
            [f"the same 400 too-deep wakeups over half the calls: {judge.worse(fewer, ref)}",
             f"81 more: {judge.worse(more, ref)}"])

    bound = judge.oracle_bound(cells)
    t.check(not bound, f"neither teo-7.3 nor a step of the series used less energy than the "
                       f"oracle of either model in "
                       f"{len(cells)} cells ({len(bound)} did)",
            [f"{judge.label(k)}: {g} {e:.3f} mJ below the {m} model's oracle, {b:.3f} mJ"
             for k, g, m, e, b in bound[:20]])

    want = judge.verdict_file_text(cells)
    try:
        with open(judge.VERDICT_FILE) as fh:
            have = fh.read()
    except OSError as e:
        have = f"(cannot read: {e})\n"
    diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(),
                                     "patches/verdict.txt", "the judge now", lineterm="", n=1))
    t.check(not diff, "patches/verdict.txt (quoted by the patch messages and the cover "
                      "letter) is what the judge prints (scripts/teo/judge/bench --update rewrites it)",
            diff[:40])

    # The RFC's changelogs end with their verdicts (its cover letter says
    # so); one that does not ask for its section shows none.
    unquoted = []
    _, entries, _ = seriesfile.read(judge.ROOT)
    for section, e in seriesfile.commits(entries, "7.3"):
        if not section or section[0] != "rfc" or f"[{e.msg}]" not in want.splitlines():
            continue
        try:
            with open(os.path.join(judge.ROOT, "patches", e.msg)) as fh:
                lines = fh.read().splitlines()
        except OSError as err:
            lines = [f"(cannot read: {err})"]
        if "@VERDICT@" not in lines and "No code changes." not in lines:
            unquoted.append(f"patches/{e.msg}: {lines[-1] if lines else '(empty)'}")
    t.check(not unquoted, "every patch of the RFC that changes code says @VERDICT@ on a line "
                          "of its own in its message, where scripts/teo/tree/tree puts its verdict",
            unquoted)

    for path, replace, what in ((judge.README, judge.readme_with_block, "results table"),
                                (judge.BENCH_DOC, judge.bench_doc_with_block, "verdict table")):
        name = os.path.relpath(path, judge.ROOT)
        with open(path) as fh:
            text = fh.read()
        want = replace(text, cells)
        diff = list(difflib.unified_diff(text.splitlines(), (want or "").splitlines(),
                                         name, "the judge now", lineterm="", n=1))
        t.check(want is not None and not diff,
                f"{name}'s {what} is what the judge prints (scripts/teo/judge/bench --update "
                "rewrites it)", diff[:40] if want is not None else [f"{name} has no {what} markers"])

    # The matrix's size as the READMEs quote it: "N cells" (the whole
    # matrix, or seed 1's) and "N workloads".
    sub = judge.split_cells(cells, "development")
    bad = []
    docs = [os.path.join(judge.ROOT, "docs", f) for f in sorted(os.listdir(os.path.join(judge.ROOT, "docs")))
            if f.endswith(".md")]
    for path in [judge.README, os.path.join(judge.HARNESS, "README")] + docs:
        with open(path) as fh:
            words = fh.read().replace("\n", " ")
        for m in re.finditer(r"\b(\d+) (?:seeded )?(cells|workloads)\b", words):
            n, what = int(m.group(1)), m.group(2)
            ok = n in (len(cells), len(sub), len(cells) - len(sub)) if what == "cells" else n in (
                len(judge.ALL_WORKLOADS), len(judge.WORKLOADS.WORKLOADS))
            if not ok:
                bad.append(f"{os.path.relpath(path, judge.ROOT)}: '{m.group(0)}'")
    t.check(not bad, f"the READMEs quote the matrix as the judge runs it ({len(cells)} cells, "
                     f"{len(sub)} in each split, {len(judge.ALL_WORKLOADS)} workloads)", bad)

    # Issue 60's target on the validation split: no failing cell, energy at
    # most 0.97x in both models and interrupt latency at most 0.93x.
    val = judge.split_cells(cells, "validation")
    v = judge.judge(val, judge.SERIES[-1], judge.REF)
    g = v["geo"]
    name = (f"the series ({judge.SERIES[-1]}) against {judge.REF} on the validation split "
            f"({len(val)} cells): no failing cell, energy at most {TARGET['energy']}x and "
            f"{TARGET['table']}x in the two models, interrupt latency at most "
            f"{TARGET['latency']}x (now {len(v['fails'])} "
            f"failing, " + ", ".join(f"{judge.NAMES[c]} {g[c]:.3f}x" for c in judge.CRITERIA) +
            ")")
    detail = [f"{judge.label(k)}: " + "; ".join(judge.fmt_cell(k, c, cv, rv) for c, cv, rv in w)
              for k, w in v["fails"]]
    above = [f"{judge.NAMES[c]} {g[c]:.3f}x, above {TARGET[c]}x"
             for c in TARGET if g[c] > TARGET[c]]
    detail += above
    met = not v["fails"] and not above
    (t.expect_fail if TARGET_XFAIL else t.check)(met, name, detail)

    # Each patch that changes decisions: kept (it passes on both splits and
    # keeps on validation at least half of each gain it shows on
    # development), the rule of docs/benchmarks.md.
    dropped = []
    changing = 0
    for label_, cand, ref, step in judge.pairs():
        if step is None:
            continue
        k = judge.kept(cells, cand, ref)
        changing += k["verdict"] != "no change"
        if k["verdict"] not in ("kept", "no change"):
            dropped.append(f"{label_} ({step['subject']}): {k['verdict']}")
    (t.expect_fail if KEPT_XFAIL else t.check)(
        not dropped, f"every patch is kept on both splits ({len(dropped)} would be dropped)",
        dropped)

    rows = judge.interactive_rows(cells, judge.SERIES[-1])
    missed = [(table, wl, r, u) for table, wl, met, r, u, _ in rows if not met]
    name = (f"R4, the utilized interactive workloads on the validation split: the series "
            f"({judge.SERIES[-1]}) has at most half of {judge.REF}'s too-deep wakeups where a "
            f"history can learn them (too shallow at most 3 points above), no more elsewhere, "
            f"energy no higher, on {len(rows) - len(missed)} of {len(rows)} rows")
    detail = [f"{table} {wl}: too deep {judge.deep_pct(r):.2f}% against {judge.deep_pct(u):.2f}%, "
              f"too shallow {judge.shallow_pct(r):.2f}% against {judge.shallow_pct(u):.2f}%, "
              f"energy {judge.energy(r, 'default'):.1f} against {judge.energy(u, 'default'):.1f} mJ "
              f"({judge.energy(r, 'table'):.1f} against {judge.energy(u, 'table'):.1f} "
              f"table-implied)" for table, wl, r, u in missed]
    (t.expect_fail if R4_XFAIL else t.check)(not missed, name, detail)

    # README.md says which of these targets are unmet (those marked as
    # expected failures above), with the figures above, wherever it says
    # it: they are checked here, not retyped by hand.
    with open(judge.README) as fh:
        readme = " ".join(fh.read().split())
    quoted = (
        (TARGET_XFAIL,
         r"the series has (\d+) failing cells against teo-7\.3 and energy "
         r"([\d.]+)x \(([\d.]+)x table-implied\)",
         (str(len(v["fails"])), f"{g['energy']:.3f}", f"{g['table']:.3f}")),
        (KEPT_XFAIL,
         r"(\d+) of the RFC's (\d+) patches that change decisions would be dropped",
         (str(len(dropped)), str(changing))),
        (R4_XFAIL,
         r"R4 of `make bench` is met on (\d+) of (\d+) rows",
         (str(len(rows) - len(missed)), str(len(rows)))),
    )
    bad = []
    for unmet, pattern, want in quoted:
        if not unmet:
            continue
        found = list(re.finditer(pattern, readme))
        if not found:
            bad.append(f"README.md: no '{pattern}'")
        bad += [f"README.md: '{m.group(0)}', the judge: {', '.join(want)}"
                for m in found if m.groups() != want]
    t.check(not bad, "README.md quotes the unmet targets as the judge measures them", bad)

    if t.xfailed:
        print(f"{SUITE}: {t.xfailed} expected failure{'s' if t.xfailed > 1 else ''}")
    print(f"{SUITE}: {t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0

