// SPDX-License-Identifier: GPL-2.0
/*
 * What a replay prints: the table of each governor's figures (or CSV, or
 * linux-pm's idle-miss columns), the lockstep comparisons of two builds and
 * a governor's decisions, call by call.
 */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "replay.h"

/*
 * The columns of --csv, and the formats of a governor's row in the CSV and
 * in the table (the residency of each state follows).
 */
#define CSV_HEADER "governor,wakeups,too_deep_pct,too_shallow_pct,oracle_pct,tick_stopped_pct,deepest_tick_stopped_pct,shallower_than_teo73_pct,irq_exit_latency_mean_us,irq_exit_latency_p99_us,energy_mj,energy_vs_util_off_pct,ns_per_decision,util_pct,misfit_pct,energy_table_mj,tick_stops,tick_stops_per_s,running_mw,misfit_ms,idle_periods,too_deep_wakeups,too_shallow_wakeups"
#define CSV_ROW "%s,%llu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f,%.3f,%.2f,%.1f,%.2f,%.3f,%.3f,%llu,%.1f,%d,%.3f,%zu,%llu,%llu"
#define TABLE_ROW "%-12s %7llu %6.2f %6.2f %6.2f %6.2f %6.1f %7.1f %7.1f %9.3f %9.3f %+6.1f %5.0f %5.1f "

double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_s64(const void *a, const void *b)
{
	s64 x = *(const s64 *)a, y = *(const s64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Time per decision (select + reflect) in whole replays, the least of
 * seven: timing each call would cost more than the call.  The same for the
 * null governor is the cost of the replay itself, which the caller
 * subtracts.
 */
static double ns_per_call(const struct cpuidle_driver *drv,
			  const struct trace *t, const struct gov *g,
			  const struct replay_cfg *cfg0)
{
	struct replay_cfg cfg = *cfg0;
	double best = 1e30;
	struct result r;
	int rep;

	cfg.irq_latencies = NULL;
	cfg.first_idx = NULL;
	cfg.ref_idx = NULL;
	for (rep = 0; rep < 7; rep++) {
		double t0 = seconds();

		replay(drv, t, g, &cfg, &r);
		best = min(best, (seconds() - t0) * 1e9 / max(r.wakeups, 1));
	}
	return best;
}

/*
 * The first of the comma-separated names in @list, into @name (@size bytes,
 * cut short if need be); returns the rest of the list, or NULL after the
 * last name.
 */
const char *list_next(const char *list, char *name, size_t size)
{
	size_t len = strcspn(list, ",");

	snprintf(name, size, "%.*s", (int)min(len, size - 1), list);
	return list[len] ? list + len + 1 : NULL;
}

/* Whether @name is one of the comma-separated names in @list. */
static bool in_list(const char *list, const char *name)
{
	char item[64];

	while (list) {
		list = list_next(list, item, sizeof(item));
		if (!strcmp(item, name))
			return true;
	}
	return false;
}

/*
 * One line per governor: wakeups, too deep and too shallow (% of wakeups),
 * agreement with the table-implied oracle's choice for the rest of the
 * idle period (%), tick stopped (% of calls), tick stops per second of the
 * trace, mean and p99 exit latency paid at non-timer wakeups (us), energy
 * in the default and the table-implied model (mJ, see model_costs(), the
 * tick's stops included) and how much above that of our teo with
 * utilization awareness off the default one is (%), decision cost (ns per
 * select + reflect, the null governor subtracted), the mean utilization (%
 * of capacity), and the residency share of each state (%).  CSV adds the
 * share of entries into the deepest state with the tick stopped, the idle
 * time in states shallower than mainline (7.3) teo picks for the same
 * period and than the oracle's (misfit_pct), both in % of idle time, the
 * tick stops and the power they are paid at, and the misfit time in ms
 * (misfit_ms: the share's denominator, the idle time, counts each state's
 * exit latency share, so it shrinks when a governor picks shallower states).
 */
void report(const struct cpuidle_driver *drv, const struct trace *t,
	    const struct replay_cfg *cfg, const char *only, bool csv,
	    bool cost, bool misses)
{
	static const char *const fixed[] = {
		"teo", "teo-noutil", "teo-fullutil", "teo-7.3", "menu-7.3",
		"teo-6.12", "menu-6.12", "menu", "oracle", "oracle-table",
		"shallowest",
	};
	/*
	 * Then the series' intermediate steps (teo-stepNN), in order, and any
	 * other governor asked for ("teo-step06-noutil"), as asked.
	 */
	const char *names[ARRAY_SIZE(fixed) + 2 * MAX_GOVS];
	static char asked[MAX_GOVS][64];
	const char *list;
	int nnames = 0, nasked = 0;
	const struct gov *ref = find_gov("teo-7.3");
	double off_uj = 0;
	double null_ns = cost ? ns_per_call(drv, t, find_gov("null"), cfg) : 0;
	s64 *lat = calloc(t->n + 1, sizeof(*lat));
	int *ref_idx = calloc(t->n + 1, sizeof(*ref_idx));
	struct replay_cfg rcfg = *cfg;
	struct result r;
	int n, i;

	if (!lat || !ref_idx)
		out_of_memory();
	for (n = 0; n < ARRAY_SIZE(fixed); n++)
		names[nnames++] = fixed[n];
	nnames += series_steps(names + nnames);
	for (n = 0, list = only; list && n < MAX_GOVS; n++) {
		list = list_next(list, asked[nasked], sizeof(asked[nasked]));
		for (i = 0; i < nnames && strcmp(names[i], asked[nasked]); i++)
			;
		if (i == nnames)
			names[nnames++] = asked[nasked++];
	}

	/* What upstream teo picks first in each period, if it is built in. */
	rcfg.first_idx = ref_idx;
	if (ref)
		replay(drv, t, ref, &rcfg, &r);
	rcfg.first_idx = NULL;
	rcfg.ref_idx = ref ? ref_idx : NULL;

	/* The energy of our teo with utilization awareness off, if built in. */
	if (find_gov("teo-noutil") && !replay(drv, t, find_gov("teo-noutil"), &rcfg, &r))
		off_uj = r.energy_uj;

	if (csv) {
		printf(CSV_HEADER);
		for (i = 0; i < drv->state_count; i++)
			printf(",residency_pct_%s", drv->states[i].name);
		printf("\n");
	} else if (misses) {
		printf("%-12s %8s %11s %15s %8s %8s\n", "governor", "idles",
		       "idle_misses", "idle_miss_ratio", "belows", "aboves");
	} else {
		printf("%-12s %7s %6s %6s %6s %6s %6s %7s %7s %9s %9s %6s %5s %5s  %s\n",
		       "governor", "wakeups", "deep%", "shal%", "orcl%",
		       "tick0%", "stop/s", "irqlat", "p99lat", "energy", "etable",
		       "vsoff%", "ns", "util%", "residency% by state");
	}
	for (n = 0; n < nnames; n++) {
		const struct gov *g = find_gov(names[n]);
		double w, cost_ns = 0, mean = 0, p99 = 0, total = 0, stops_s;

		if (!g || (only && !in_list(only, names[n])))
			continue;
		rcfg.irq_latencies = lat;
		if (replay(drv, t, g, &rcfg, &r)) {
			fprintf(stderr, "cpuidle-replay: %s returned state %d of %d\n",
				names[n], r.bad_index, drv->state_count);
			exit(1);
		}
		w = max(r.wakeups, 1);
		if (misses) {
			printf("%-12s %8llu %11llu %15.4f %8llu %8llu\n", names[n],
			       r.wakeups, r.above + r.below, (r.above + r.below) / w,
			       r.below, r.above);
			continue;
		}
		if (g->ops && cost)
			cost_ns = max(0.0, ns_per_call(drv, t, g, cfg) - null_ns);
		if (r.irq_wakeups) {
			qsort(lat, r.irq_wakeups, sizeof(*lat), cmp_s64);
			mean = r.irq_exit_latency_ns / 1e3 / r.irq_wakeups;
			p99 = lat[(r.irq_wakeups * 99) / 100] / 1e3;
		}
		for (i = 0; i < drv->state_count; i++)
			total += r.residency_ns[i];
		total = max(total, 1.0);
		stops_s = r.tick_stops * 1e9 / max(r.span_ns, 1);
		if (csv)
			printf(CSV_ROW,
			       names[n], r.wakeups, 100 * r.above / w, 100 * r.below / w,
			       100 * r.oracle_hits / w, 100 * r.tick_stopped / w,
			       100.0 * r.deepest_tick_stopped / max(r.deepest_entries, 1),
			       100 * r.below_ref_ns / total, mean, p99,
			       r.energy_uj / 1e3,
			       off_uj > 0 ? 100 * (r.energy_uj / off_uj - 1) : 0.0,
			       cost_ns, 100 * r.util_sum / max(t->n, 1),
			       100 * r.misfit_ns / total, r.energy_table_uj / 1e3,
			       r.tick_stops, stops_s, running_mw(drv),
			       r.misfit_ns / 1e6, t->n, r.above, r.below);
		else
			printf(TABLE_ROW,
			       names[n], r.wakeups, 100 * r.above / w, 100 * r.below / w,
			       100 * r.oracle_hits / w, 100 * r.tick_stopped / w,
			       stops_s, mean, p99, r.energy_uj / 1e3,
			       r.energy_table_uj / 1e3,
			       off_uj > 0 ? 100 * (r.energy_uj / off_uj - 1) : 0.0,
			       cost_ns, 100 * r.util_sum / max(t->n, 1));
		for (i = 0; i < drv->state_count; i++)
			printf(csv ? ",%.2f" : " %5.1f", 100 * r.residency_ns[i] / total);
		printf("\n");
	}
	free(ref_idx);
	free(lat);
}

/*
 * The governors named @gname and @shadow, for a lockstep replay, in @g and
 * @s; 2 after one line on stderr if they cannot be paired: either is not a
 * built-in governor, or both are one build ("teo" and "teo-noutil"),
 * whose per-CPU data they would share, each selection updating it twice.
 */
static int lockstep_pair(const char *gname, const char *shadow,
			 const struct gov **g, const struct gov **s)
{
	*g = find_gov(gname);
	*s = find_gov(shadow);
	if (!*g || !(*g)->ops || !*s || !(*s)->ops) {
		fprintf(stderr,
			"cpuidle-replay: --agree compares two built-in governors; %s is not one\n",
			*g && (*g)->ops ? shadow : gname);
		return 2;
	}
	if ((*g)->ops == (*s)->ops) {
		fprintf(stderr,
			"cpuidle-replay: --agree needs two builds, and %s and %s are one, with one per-CPU state between them\n",
			gname, shadow);
		return 2;
	}
	return 0;
}

/*
 * --agree: replay @gname (default: our teo) with @shadow in lockstep (see
 * shadow_select()) and print how many decisions were the same.  The last
 * line is "agree GOV SHADOW: SAME of N (PCT%), same state in ...".
 */
static int agree_one_pair(const struct cpuidle_driver *drv,
			  const struct trace *t, const struct replay_cfg *cfg0,
			  const char *gname, const char *shadow)
{
	struct replay_cfg cfg = *cfg0;
	const struct gov *g, *s;
	struct result r;

	if (lockstep_pair(gname, shadow, &g, &s))
		return 2;
	cfg.shadow = s;
	if (replay(drv, t, g, &cfg, &r)) {
		fprintf(stderr, "cpuidle-replay: %s returned state %d of %d\n",
			gname, r.bad_index, drv->state_count);
		return 1;
	}
	if (r.shadow_first[0])
		printf("first difference: %s\n", r.shadow_first);
	printf("shallower than %s: longest %lld ns with the tick stopped, ",
	       shadow, r.shallower_stopped_ns);
	printf("%lld ns with it running\n", r.shallower_kept_ns);
	printf("agree %s %s: %llu of %llu (%.3f%%), same state in %llu\n",
	       gname, shadow, r.shadow_same, r.wakeups,
	       100.0 * r.shadow_same / max(r.wakeups, 1), r.shadow_idx_same);
	return 0;
}

/*
 * --agree with lists: --gov G1,G2,... --agree S1,S2,... replays each Gi
 * with Si in lockstep, one "agree" line each, the trace read once.
 */
int agree_pairs(const struct cpuidle_driver *drv, const struct trace *t,
		const struct replay_cfg *cfg, const char *gnames,
		const char *shadows)
{
	char g[64], s[64];
	int rc = 0;

	while (gnames && shadows && !rc) {
		gnames = list_next(gnames, g, sizeof(g));
		shadows = list_next(shadows, s, sizeof(s));
		rc = agree_one_pair(drv, t, cfg, g, s);
	}
	if (!rc && (gnames || shadows)) {
		fprintf(stderr,
			"cpuidle-replay: --gov and --agree list different numbers of governors\n");
		return 2;
	}
	return rc;
}

/*
 * --agree SHADOW --gov NAME --random CASES: the fuzzer's random cases from
 * @seed on (with @extreme, also those with near-S64_MAX values), each
 * replayed through @gname with @shadow in lockstep.  The last line is
 * "agree GOV SHADOW: SAME of N (PCT%) over CASES random cases".
 */
int agree_random(const char *gname, const char *shadow, u64 seed,
		 u64 cases, bool extreme)
{
	u64 same = 0, total = 0, c;
	const struct gov *g, *s;
	char first[300] = "";

	if (lockstep_pair(gname, shadow, &g, &s))
		return 2;
	for (c = seed; c < seed + cases; c++) {
		struct cpuidle_driver drv;
		struct replay_cfg cfg;
		struct trace t;
		struct result r;
		int rc;

		fuzz_make(c, extreme, &drv, &t, &cfg);
		cfg.shadow = s;
		cfg.check_invariants = false;
		rc = replay(&drv, &t, g, &cfg, &r);
		free(t.p);
		if (rc) {
			fprintf(stderr, "cpuidle-replay: %s returned state %d of %d in case %llu\n",
				gname, r.bad_index, drv.state_count, c);
			return 1;
		}
		same += r.shadow_same;
		total += r.wakeups;
		if (r.shadow_same != r.wakeups && !first[0])
			snprintf(first, sizeof(first), "case %llu: %s", c,
				 r.shadow_first);
	}
	if (first[0])
		printf("first difference: %s\n", first);
	printf("agree %s %s: %llu of %llu (%.3f%%) over %llu random cases\n",
	       gname, shadow, same, total, 100.0 * same / max(total, 1), cases);
	return 0;
}

/*
 * --decisions: replay one governor and write each of its calls as a line
 * "PERIOD CPU STATE STOP_TICK TICK_STOPPED" (PERIOD counts the trace's
 * lines from 1; STOP_TICK is the governor's tick decision, TICK_STOPPED
 * whether the tick was already stopped) to @path.
 */
int write_decisions(const struct cpuidle_driver *drv, const struct trace *t,
		    const struct replay_cfg *cfg0, const char *gname,
		    const char *path)
{
	const struct gov *g = find_gov(gname);
	struct replay_cfg cfg = *cfg0;
	struct result r;
	int ret;

	if (!g || !g->ops || strchr(gname, ',')) {
		fprintf(stderr,
			"cpuidle-replay: --decisions needs one governor of the harness in --gov, not '%s'\n",
			gname);
		return 2;
	}
	cfg.decisions = fopen(path, "w");
	if (!cfg.decisions) {
		fprintf(stderr, "cpuidle-replay: cannot write %s: %s\n", path,
			strerror(errno));
		return 2;
	}
	ret = replay(drv, t, g, &cfg, &r);
	if (fclose(cfg.decisions) || ret) {
		fprintf(stderr, "cpuidle-replay: %s\n",
			ret ? "the governor returned a state out of range" :
			"cannot finish writing the decisions");
		return 1;
	}
	printf("decisions %s: %llu calls in %s\n", gname, r.wakeups, path);
	return 0;
}
