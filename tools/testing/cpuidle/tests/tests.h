/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the self-tests and the fuzzer share: the seeded random cases
 * (selftest.c) and the fuzz run that the self-test starts beside its own
 * tests (fuzz.c).
 */
#ifndef TEO_HARNESS_TESTS_H
#define TEO_HARNESS_TESTS_H

#include "../replay.h"

/*
 * Built in a kernel tree (the Makefile defines HARNESS_IN_TREE there), the
 * harness has the tree's own teo and menu alone: a check or a fuzz replay
 * of the series' steps or of upstream's governors, which the TEO
 * repository builds, is skipped there instead of failed.
 */
#ifdef HARNESS_IN_TREE
#define IN_TREE		true
#else
#define IN_TREE		false
#endif

/* selftest.c: a seeded generator, traces built line by line, random cases. */
extern u64 rng_state;
u64 rng(void);
void add(struct trace *t, s64 timer, s64 irq, s64 busy);
void random_case(struct cpuidle_driver *drv, struct trace *t,
		 struct replay_cfg *cfg, bool extreme);

/* fuzz.c: the replays of a fuzz case, and a fuzz run in a child process. */
#define FUZZ_REPLAYS	6
extern const char *const fuzz_names[FUZZ_REPLAYS];

/**
 * struct fuzz_stats - What a fuzz run did and found.
 * @cases: Cases run.
 * @decisions: Decisions made in each of the replays of every case.
 * @findings: Cases with a finding, by replay.
 * @first: The first finding of each replay.
 */
struct fuzz_stats {
	u64 cases;
	u64 decisions[FUZZ_REPLAYS];
	u64 findings[FUZZ_REPLAYS];
	char first[FUZZ_REPLAYS][256];
};

/*
 * The fuzz run of the self-test takes about as long as the other tests, so
 * it runs in a child process beside them: fuzz_start() forks it, and
 * fuzz_finish() reads the counts it sends through a pipe.  The child ends
 * with exit(), so that LeakSanitizer still checks it; a child that dies
 * (a sanitizer's report) or leaks sends nothing or exits non-zero.  With
 * no pipe or no child, fuzz_start() makes the run in this process.
 */
struct fuzz_child {
	pid_t pid;
	int fd;
	struct fuzz_stats st;	/* the run's counts */
};

void fuzz_start(long iterations, struct fuzz_child *c);
bool fuzz_finish(struct fuzz_child *c, char *why, size_t len);

#endif /* TEO_HARNESS_TESTS_H */
