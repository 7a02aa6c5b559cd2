// SPDX-License-Identifier: GPL-2.0
/*
 * The fuzzer (cpuidle-replay --fuzz, --fuzz-case), and the fuzz run the
 * self-test starts beside its own tests.
 */
#include <errno.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include "tests.h"

/*
 * The fuzzer.  Every case, made by random_case() from its own seed, goes
 * through six replays: our teo with the invariants checked at every
 * decision (every other case with extreme values), and five lockstep
 * pairs, which must agree on every decision: four of the series, each a
 * stretch of it that is to change none and the step before it (the two
 * cleanups that read the tick's state once and halve the exit latency
 * with a shift, the preparation for KUnit, the step that brings
 * utilization awareness with it off, and the step that adds the trace
 * events), and our teo built without CONFIG_SMP against our teo
 * told that utilization is 0, as a uniprocessor kernel has no utilization
 * to read and is to lose nothing else.  The replays drive the glue
 * as the idle loop does: the tick kept stopped across periods that wake no task,
 * polling states ended by their time limit, the tick noticed inside a
 * polling state, disabled states and latency limits.  A finding is an
 * index out of range, a broken invariant, a lockstep difference or (in
 * the sanitized build, which stops there) a sanitizer report.
 */

const char *const fuzz_names[FUZZ_REPLAYS] = {
	"invariants of teo",
	STEP_HALVE " and the step before " STEP_TICK_ONCE,
	STEP_PREPARE " and the step before it",
	STEP_UTIL "-noutil and the step before it",
	STEP_TRACE " and the step before it",
	"teo-up (no CONFIG_SMP) and teo-noutil",
};

/* The case being run, for the sanitizers' death callback. */
static u64 fuzz_seed;
static bool fuzz_running;

#if defined(__SANITIZE_ADDRESS__)
void fuzz_died(void)
{
	if (fuzz_running)
		fprintf(stderr,
			"fuzz: finding at seed %llu: the sanitizer report above (replay it: cpuidle-replay --fuzz-case %llu)\n",
			fuzz_seed, fuzz_seed);
}
#endif

/*
 * The case of @seed; @ours: for our teo alone, which gets extreme values in
 * every other case.
 */
void fuzz_make(u64 seed, bool ours, struct cpuidle_driver *drv,
	       struct trace *t, struct replay_cfg *cfg)
{
	rng_state = (seed + 1) * 0x9e3779b97f4a7c15ULL;
	random_case(drv, t, cfg, ours && seed % 2);
}

/*
 * No step from STEP_DISABLED on returns a disabled state while another is
 * enabled, over random tables, disabled states and latency limits; mainline
 * teo and the steps before it do, which shows that the check can fail.
 */

/*
 * One case from @seed through the replays into @st; with @dec, our
 * teo's decisions are written there.  @report prints each finding.
 */
static void fuzz_case(u64 seed, struct fuzz_stats *st, FILE *dec, bool report)
{
	const char *ref[FUZZ_REPLAYS] = {
		NULL, step_before(STEP_TICK_ONCE), step_before(STEP_PREPARE),
		step_before(STEP_UTIL), step_before(STEP_TRACE), "teo-noutil",
	};
	const char *gname[FUZZ_REPLAYS] = {
		"teo", STEP_HALVE, STEP_PREPARE, STEP_UTIL "-noutil",
		STEP_TRACE, "teo-up",
	};
	int i;

	fuzz_seed = seed;
	st->cases++;
	for (i = 0; i < FUZZ_REPLAYS; i++) {
		const struct gov *g = find_gov(gname[i]);
		const struct gov *shadow = ref[i] ? find_gov(ref[i]) : NULL;
		char what[sizeof(st->first[0]) - 64] = "";
		struct replay_cfg cfg;
		struct cpuidle_driver drv;
		struct trace t;
		struct result r;
		int rc;

		if (!g || (ref[i] && !shadow)) {
			/* In a kernel tree: not built, the replay skipped. */
			if (!IN_TREE)
				snprintf(what, sizeof(what), "no governor %s",
					 g ? ref[i] : gname[i]);
			r.wakeups = 0;
			rc = 0;
		} else {
			fuzz_make(seed, !i, &drv, &t, &cfg);
			cfg.shadow = shadow;
			cfg.check_invariants = !i;
			cfg.decisions = i ? NULL : dec;
			rc = replay(&drv, &t, g, &cfg, &r);
			free(t.p);
			if (rc)
				snprintf(what, sizeof(what), "index %d out of range",
					 r.bad_index);
			else if (r.violations)
				snprintf(what, sizeof(what), "%llu invariant violations",
					 r.violations);
			else if (shadow && r.shadow_same != r.wakeups)
				snprintf(what, sizeof(what), "%s", r.shadow_first);
		}
		st->decisions[i] += r.wakeups;
		if (!what[0])
			continue;
		st->findings[i]++;
		if (!st->first[i][0])
			snprintf(st->first[i], sizeof(st->first[i]), "seed %llu: %s",
				 seed, what);
		if (report)
			printf("fuzz: finding at seed %llu, %s: %s (replay it: %s %llu)\n",
			       seed, fuzz_names[i], what,
			       "cpuidle-replay --fuzz-case", seed);
	}
}

static u64 fuzz_total(const u64 *v)
{
	u64 sum = 0;
	int i;

	for (i = 0; i < FUZZ_REPLAYS; i++)
		sum += v[i];
	return sum;
}

/*
 * Cases from seed @seed0 on, until @max_cases (if not 0) or @limit_s
 * seconds (if not 0) are reached; with @progress, a line every ten seconds.
 */
static void fuzz_run(u64 seed0, u64 max_cases, double limit_s, bool progress,
		     struct fuzz_stats *st)
{
	double t0 = seconds(), next = t0 + 10;

	memset(st, 0, sizeof(*st));
	fuzz_running = true;
	while ((!max_cases || st->cases < max_cases) &&
	       (!limit_s || seconds() - t0 < limit_s)) {
		fuzz_case(seed0 + st->cases, st, NULL, progress);
		if (progress && seconds() >= next) {
			printf("fuzz: %.0f s: %llu cases, %llu decisions, %llu findings\n",
			       seconds() - t0, st->cases,
			       fuzz_total(st->decisions), fuzz_total(st->findings));
			fflush(stdout);
			next += 10;
		}
	}
	fuzz_running = false;
}

/* make fuzz: the timed run, its totals in the last line. */
int fuzz_main(double limit_s, u64 seed0, u64 max_cases)
{
	double t0 = seconds();
	struct fuzz_stats st;
	int i;

	printf("fuzz: seed %llu, %s%.0f s%s\n", seed0,
	       max_cases ? "at most " : "", limit_s,
	       max_cases ? " or the cases given" : "");
	fflush(stdout);
	fuzz_run(seed0, max_cases, limit_s, true, &st);
	for (i = 0; i < FUZZ_REPLAYS; i++)
		printf("fuzz: %-44s %12llu decisions, %llu findings%s%s\n",
		       fuzz_names[i], st.decisions[i], st.findings[i],
		       st.first[i][0] ? ", first at " : "", st.first[i]);
	printf("fuzz: %.0f s, %llu cases (seeds %llu to %llu), %llu decisions, %llu findings\n",
	       seconds() - t0, st.cases, seed0, seed0 + st.cases - 1,
	       fuzz_total(st.decisions), fuzz_total(st.findings));
	return fuzz_total(st.findings) ? 1 : 0;
}

/* --fuzz-case SEED: one case, with the table and our teo's decisions. */
int fuzz_one(u64 seed)
{
	struct replay_cfg cfg;
	struct cpuidle_driver drv;
	struct fuzz_stats st = { 0 };
	struct trace t;
	int i;

	fuzz_make(seed, true, &drv, &t, &cfg);
	free(t.p);
	printf("# seed %llu: HZ %lld, exit share %d%%, disabled 0x%x, tick in poll %d\n",
	       seed, NSEC_PER_SEC / cfg.tick_ns, cfg.exit_share_pct,
	       cfg.disabled, cfg.tick_in_poll);
	for (i = 0; i < drv.state_count; i++)
		printf("# state %d: exit latency %lld ns, target residency %lld ns%s\n",
		       i, drv.states[i].exit_latency_ns,
		       drv.states[i].target_residency_ns,
		       drv.states[i].flags & CPUIDLE_FLAG_POLLING ? ", polls" : "");
	printf("# our teo's decisions: period cpu state stop_tick tick_was_stopped\n");
	fuzz_case(seed, &st, stdout, true);
	return fuzz_total(st.findings) ? 1 : 0;
}

void fuzz_start(long iterations, struct fuzz_child *c)
{
	int fds[2];

	c->pid = -1;
	c->fd = -1;
	if (!pipe(fds)) {
		fflush(stdout);
		fflush(stderr);
		c->pid = fork();
		if (c->pid > 0) {
			close(fds[1]);
			c->fd = fds[0];
			return;
		}
		close(fds[0]);
		if (c->pid < 0)
			close(fds[1]);
	}
	/* In the child, or here without one. */
	fuzz_run(2026, iterations, 0, false, &c->st);
	if (c->pid == 0)
		exit(write(fds[1], &c->st, sizeof(c->st)) == sizeof(c->st) ? 0 : 1);
}

/* The run's counts in @c->st; false, and why in @why, if the child sent none. */
bool fuzz_finish(struct fuzz_child *c, char *why, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int status;

	if (c->pid < 0)
		return true;
	while (got < sizeof(c->st)) {
		n = read(c->fd, (char *)&c->st + got, sizeof(c->st) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(c->fd);
	if (waitpid(c->pid, &status, 0) != c->pid) {
		snprintf(why, len, "waitpid: %s", strerror(errno));
		return false;
	}
	if (WIFEXITED(status) && !WEXITSTATUS(status) && got == sizeof(c->st))
		return true;
	if (WIFSIGNALED(status))
		snprintf(why, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, len, "exit status %d, %zu of %zu bytes of counts",
			 WEXITSTATUS(status), got, sizeof(c->st));
	return false;
}
