# SPDX-License-Identifier: GPL-2.0
#
# Entry points of the TEO governor repository.  Everything is done by the
# scripts in scripts/teo/; build output lives under $(TEO_CACHE), by
# default ~/.cache/teo, never in this clone.
#
#   make check              every test (installs what it needs);
#                           SUITES=a,b runs only those (names as its summary prints)
#   BASE=7.3 (default) or BASE=6.12 picks the kernel base of run, kunit,
#   lint and tree
#   make run                boot the patched kernel in QEMU (arm64, or ARCH=x86_64)
#                           and show the governors at work
#   make vmbench            teo, teo-7.3, teo-6.12, menu and ladder in one guest
#                           (arm64, or ARCH=x86_64; HZ=100|250|1000, default 250)
#                           under rt-app, cyclictest, a ping-pong, perf bench
#                           sched pipe and fio on three devices, traced by
#                           trace-cmd: tables (fio's idle-miss table among them),
#                           the verdict against teo-7.3 (a rank test), CSV, plot
#   make vmbench-revert     the util revert's own case in the arm64 guest: WFI and
#                           CPU-off only, its task as is and at uclamp_min 600,
#                           teo, teo-7.3 and menu: is CPU-off kept, tick stopped
#   make rft-tree           for a tester with hardware: the tree (the series plus
#                           teo-7.3, teo-6.12 beside menu), rft.config and the
#                           device script teo-rft (scripts/teo/rft/rft-tree)
#   make fidelity           replay the boot test's trace through the harness and
#                           compare with the kernel's decisions (ARCH=x86_64 too)
#   make stock              rebuild the boot test's idle entries from the events
#                           any kernel has, compare with teo's own, replay them
#                           (ARCH=x86_64 too)
#   make kunit ARCH=x86_64  the KUnit suite on one architecture (or arm64, i386);
#                           HZ=100 or HZ=1000 for another tick period than 250
#   make kunit-series       the suite at every commit from its own to the last,
#                           and with each fix undone in turn at the tests
#                           series' end, its case failing (ARCH=, HZ= as kunit)
#   make lint               checkpatch, W=1 + sparse, kernel-doc, i386
#   make tree               make the patched tree and print its path
#   make series             the three series (fixes, tests, rfc; SERIES=fixes,...
#                           for some) as git format-patch files, each with its
#                           cover letter, signed off with your git config identity
#   make edit [FORCE=1]     a git tree with one commit per patch of the series
#                           (~/.cache/teo/edit, branch edit) to rebase and amend
#   make refresh            write the edit tree's commits back to patches/
#   make source [STEP=NN]   print the paths of the final teo.c and its headers,
#                           or those of step NN (patches/steps/NN-*.diff)
#   make harness            build the replay harness (plain and sanitized) from
#                           the governor files alone, run its self-tests, print
#                           its binary and the quick start; no QEMU needed
#   make bench              the judge: every patch and the series against
#                           mainline on the replay matrix (workloads x tables x
#                           HZ 100/250/1000 x latency limits x seeds)
#                           (TRACE=FILE TABLE=FILE [HZ=N]: on a trace of yours)
#   make bench-update       the same, and refresh the verdicts the patch
#                           messages quote, the harness README and its plot
#   make try DIFF=FILE      judge a change to the final teo.c (git diff in the
#                           edit tree) on both splits before it is a patch
#   make cost               instructions per decision of each governor (callgrind)
#   make fuzz [SECONDS=600] [SEED=N]  the harness's fuzzer, sanitized, for a time,
#                           from SEED (one from the clock if not given, printed)
#   make stress [ARCH=arm64]  switch governors, disable states, change QoS and
#                           hotplug CPUs under load in a debug guest kernel
#   make clean              remove the build output (~/.cache/teo/build, or
#                           TEO_CACHE/build)
#
#   Every script behind these, by folder: docs/interfaces.md.

SCRIPTS := scripts/teo

# make's names for the settings, given on its command line (BASE=6.12,
# make check SUITES=..., make series SERIES=...), reach the scripts as the
# TEO_* settings they read; a shell's own BASE or SERIES is left alone.
ifeq ($(origin BASE),command line)
export TEO_BASE := $(BASE)
endif
ifeq ($(origin SUITES),command line)
export TEO_SUITES := $(SUITES)
endif
ifeq ($(origin SERIES),command line)
export TEO_SERIES := $(SERIES)
endif

.PHONY: all check run vmbench vmbench-revert rft-tree fidelity stock kunit kunit-series lint tree series edit refresh source harness bench bench-update try cost fuzz stress deps clean help

all: help

help:
	@sed -n 's/^#   /  /p' Makefile

check:
	@$(SCRIPTS)/check/check

# arch_default DEFAULT: say which ARCH a target runs when none is given.
arch_default = $(if $(ARCH),,echo "teo: ARCH not given: $(1) (ARCH=$(2) for another)";)

run: deps
	@$(call arch_default,arm64,x86_64)
	@$(SCRIPTS)/tree/deps trace-cmd python3-matplotlib
	@$(SCRIPTS)/guest/run $(if $(ARCH),$(ARCH),arm64)

vmbench: deps
	@$(call arch_default,arm64,x86_64)
	@$(SCRIPTS)/tree/deps trace-cmd python3-matplotlib
	@$(SCRIPTS)/guest/vmbench $(if $(ARCH),$(ARCH),arm64) $(if $(HZ),--hz $(HZ))

rft-tree: deps
	@$(SCRIPTS)/rft/rft-tree

vmbench-revert: deps
	@$(SCRIPTS)/tree/deps trace-cmd python3-matplotlib
	@$(SCRIPTS)/guest/vmbench arm64 --two-state $(if $(HZ),--hz $(HZ))

fidelity: deps
	@$(call arch_default,arm64,x86_64)
	@$(SCRIPTS)/guest/fidelity $(if $(ARCH),$(ARCH),arm64)

stock: deps
	@$(call arch_default,arm64,x86_64)
	@$(SCRIPTS)/guest/stock $(if $(ARCH),$(ARCH),arm64)

kunit: deps
	@$(call arch_default,x86_64,arm64 or i386)
	@$(SCRIPTS)/check/kunit $(if $(ARCH),$(ARCH),x86_64) $(if $(HZ),--hz $(HZ))

kunit-series: deps
	@$(call arch_default,x86_64,arm64 or i386)
	@$(SCRIPTS)/check/kunit-series $(if $(ARCH),$(ARCH),x86_64) $(if $(HZ),--hz $(HZ))

lint: deps
	@$(SCRIPTS)/check/lint

tree: deps
	@$(SCRIPTS)/tree/tree

series: deps
	@$(SCRIPTS)/tree/series

edit: deps
	@$(SCRIPTS)/tree/edit $(if $(FORCE),--force)

refresh:
	@$(SCRIPTS)/tree/refresh

source:
	@$(SCRIPTS)/tree/deps --harness
	@$(SCRIPTS)/tree/governor-source $(STEP)

harness:
	@$(SCRIPTS)/tree/deps --harness
	@$(SCRIPTS)/judge/harness

bench: deps
	@$(if $(TRACE),$(if $(TABLE),,echo "teo: error: TRACE= needs TABLE=FILE, its state table (tools/testing/cpuidle/tables/ has examples)" >&2; exit 1),$(if $(TABLE)$(HZ),echo "teo: error: TABLE= and HZ= go with TRACE=FILE (your trace); make bench without them judges the whole matrix" >&2; exit 1))
	@$(SCRIPTS)/tree/deps python3-matplotlib
	@$(if $(TRACE),$(SCRIPTS)/judge/bench-trace --trace $(TRACE) --table $(TABLE) $(if $(HZ),--hz $(HZ)),$(SCRIPTS)/judge/bench)

bench-update: deps
	@$(SCRIPTS)/tree/deps python3-matplotlib
	@$(SCRIPTS)/judge/bench --update

try: deps
	@$(if $(DIFF),,echo "teo: error: make try needs DIFF=FILE, a diff of teo.c against the series' end (git diff in make edit's tree)" >&2; exit 1)
	@$(SCRIPTS)/judge/try $(DIFF)

cost: deps
	@$(SCRIPTS)/judge/cost

fuzz: deps
	@$(SCRIPTS)/judge/fuzz $(if $(SECONDS),$(SECONDS),600) $(SEED)

stress: deps
	@$(call arch_default,arm64,x86_64)
	@$(SCRIPTS)/guest/stress $(if $(ARCH),$(ARCH),arm64)

deps:
	@$(SCRIPTS)/tree/deps

clean:
	@$(SCRIPTS)/tree/clean
