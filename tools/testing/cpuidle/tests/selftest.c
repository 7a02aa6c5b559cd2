// SPDX-License-Identifier: GPL-2.0
/*
 * The harness's self-tests (cpuidle-replay --self-test): the accounting,
 * the energy models, the bounds and the formats on cases worked out by
 * hand, and the invariants over seeded random ones.
 */
#include <math.h>
#include <stdarg.h>

#include "tests.h"

/* Two energies that differ by less than this share of one are the same. */
#define REL_TOL (1 / 1e9)

static int passed, failed, skipped;

/* What goes before @first, a finding's first case, if there is one. */
static const char *first_at(const char *first)
{
	return first[0] ? "; first at " : "";
}

static void check(bool ok, const char *what, ...)
{
	va_list ap;

	printf("%s: ", ok ? "PASS" : "FAIL");
	va_start(ap, what);
	vprintf(what, ap);
	va_end(ap);
	printf("\n");
	if (ok)
		passed++;
	else
		failed++;
}

/*
 * The governor @name, or NULL after a failed check naming @what (a
 * skipped one in a kernel tree, which builds only its own governors).
 */
static const struct gov *need(const char *name, const char *what)
{
	const struct gov *g = find_gov(name);

	if (g)
		return g;
	if (IN_TREE) {
		printf("SKIP: %s: no governor %s in a kernel tree's harness\n",
		       what, name);
		skipped++;
	} else {
		check(false, "%s: no governor %s", what, name);
	}
	return NULL;
}

static const char x86_table[] =
	"teo-states v1\n"
	"# name exit_latency_us target_residency_us flags power_mw\n"
	"POLL 0 0 poll 3000\n"
	"C1 1 1 - 1200\n"
	"C2 120 360 - 400\n"
	"C3 1034 3102 - 50\n";

static const char arm3_table[] =
	"teo-states v1\n"
	"WFI 1 1 - 300\n"
	"cpu-sleep 250 900 - 40\n"
	"cluster-sleep 500 2000 - 10\n";

/* A small, seeded, deterministic generator. */
u64 rng_state;

u64 rng(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return rng_state >> 33;
}

static void must_parse_table(const char *text, struct cpuidle_driver *drv)
{
	if (parse_table("builtin", text, drv)) {
		fprintf(stderr, "cpuidle-replay: built-in table: %s\n", errbuf);
		exit(2);
	}
}

/* Append a generated @line of trace version @version to @t. */
static void add_line(struct trace *t, int version, char *line)
{
	t->version = version;
	if (trace_line(t, "generated", (int)t->n + 1, line)) {
		fprintf(stderr, "cpuidle-replay: %s\n", errbuf);
		exit(2);
	}
}

void add(struct trace *t, s64 timer, s64 irq, s64 busy)
{
	char line[128], irq_s[24] = "-";

	if (irq >= 0)
		snprintf(irq_s, sizeof(irq_s), "%lld", irq);
	snprintf(line, sizeof(line), "%lld %s 0 1024 - 0 %lld",
		 timer, irq_s, busy);
	add_line(t, 1, line);	/* a generated trace's lines are version 1's */
}

/*
 * Append a recorded line (version 4) to @t: the next tick @tick_ns away,
 * the measured residency @irq if any (the timer otherwise), the tick
 * stopped at entry one time in four, the woke field 0, 1 or "-" (the
 * kernel stopped the tick) at random, and a polling limit that did not end
 * the entry or, at random where the timer was not seen late, "-" (not
 * recorded).  (A limit that did end the entry, or "-" past a timer seen
 * late, ends the line where a governor polls, which the oracles' plan
 * leaves out: no bound there.)
 */
static void add_recorded(struct trace *t, s64 timer, s64 irq, s64 busy,
			 s64 tick_ns)
{
	static const char *const woke[] = { "0", "1", "-" };
	int stopped = !(rng() % 4), w = rng() % 3, unknown = rng() % 2;
	char line[160];

	if (irq < 0)
		irq = timer;
	snprintf(line, sizeof(line), "%lld %lld 0 1024 - 0 %lld %lld %d %s %s",
		 timer, irq, busy, tick_ns, stopped, woke[w],
		 unknown && irq <= timer ? "-" : "0");
	add_line(t, 4, line);
}

static void test_accounting(void)
{
	struct cpuidle_driver drv;
	struct replay_cfg cfg = { .tick_ns = NSEC_PER_MSEC, .exit_share_pct = 50 };
	struct trace t = {};
	struct result r;
	double peak[CPUIDLE_STATE_MAX], table[CPUIDLE_STATE_MAX], uj;
	int i;

	must_parse_table(x86_table, &drv);
	/*
	 * By hand, on an 8 us idle: C1 (res 1 us), diff =
	 * 8 us + 0.5 us: no miss.  The "shallowest" bound on the same table
	 * picks C1 for 100 us: diff - exit latency = 99.5 us < 360 us, no
	 * miss; for 5 ms: 4999.5 us >= 360 us, too shallow (below).
	 */
	add(&t, 8000, -1, 1000);
	add(&t, 100000, -1, 1000);
	add(&t, 5000000, -1, 1000);
	replay(&drv, &t, find_gov("shallowest"), &cfg, &r);
	check(r.wakeups == 3 && r.above == 0 && r.below == 1 && r.usage[1] == 3,
	      "accounting by hand: shallowest, 3 wakeups, 0 above, 1 below (got %llu, %llu, %llu)",
	      r.wakeups, r.above, r.below);
	/*
	 * Of them, only the 5 ms in C1 (5000.5 us with half C1's exit
	 * latency) is in a state shallower than the oracle's (C3).
	 */
	check(r.misfit_ns == 5000500,
	      "accounting by hand: shallowest, 5000500 ns shallower than the oracle (got %llu)",
	      r.misfit_ns);

	/*
	 * In the table-implied model, 5 ms in C3 (50 mW, 5.517 ms with half
	 * its exit latency, entering and leaving 1375.5 uJ) costs 1651 uJ,
	 * in C2 2314 uJ.  Deepest state (C3, residency 3102 us, exit latency
	 * 1034 us) for a 100 us idle: diff = 100 + 517 us < 3102 us, too deep
	 * (above).
	 */
	model_costs(&drv, peak, table);
	i = cheapest(&drv, &(struct cpuidle_device){}, table, &cfg, S64_MAX,
		     5000000, true, &uj);
	check(i == 3 && uj > 1651 && uj < 1652,
	      "the table-implied oracle picks C3 for 5 ms (%.1f uJ)", uj);
	{
		struct cpuidle_device dev = {};
		struct result rr = {};

		account(&drv, &dev, 3, 100000 + 517000, &rr);
		check(rr.above == 1 && rr.below == 0,
		      "accounting by hand: C3 for 617 us is too deep");
		memset(&rr, 0, sizeof(rr));
		account(&drv, &dev, 2, 5000000 + 60000, &rr);
		check(rr.above == 0 && rr.below == 1,
		      "accounting by hand: C2 for 5.06 ms is too shallow");
		memset(&rr, 0, sizeof(rr));
		dev.states_usage[3].disable = 1;
		account(&drv, &dev, 2, 5000000 + 60000, &rr);
		check(rr.above == 0 && rr.below == 0,
		      "accounting by hand: no miss when the deeper state is disabled");
	}
	free(t.p);
}

/*
 * The table-implied energy model breaks even exactly at each target
 * residency, where the default one does not (x86 C3 against C2: 7.8 ms
 * against 3.1 ms).
 */
static void test_energy_models(void)
{
	static const char *const tables[] = { x86_table, arm3_table };
	double peak[CPUIDLE_STATE_MAX], table[CPUIDLE_STATE_MAX];
	struct cpuidle_driver drv;
	int ti, i;

	for (ti = 0; ti < ARRAY_SIZE(tables); ti++) {
		double worst = 0;

		must_parse_table(tables[ti], &drv);
		model_costs(&drv, peak, table);
		for (i = 1; i < drv.state_count; i++) {
			s64 res = drv.states[i].target_residency_ns;
			double deep = model_energy(&drv, table, i, res);
			double shallow = model_energy(&drv, table, i - 1, res);

			worst = max(worst, max(deep - shallow, shallow - deep) / shallow);
		}
		check(worst < REL_TOL,
		      "table-implied energy breaks even at every target residency of %s (worst %.2g)",
		      ti ? "arm3" : "x86", worst);
	}
	must_parse_table(x86_table, &drv);
	model_costs(&drv, peak, table);
	check(model_energy(&drv, peak, 3, 3102000) >
	      model_energy(&drv, peak, 2, 3102000),
	      "default energy model: x86 C3 costs more than C2 at C3's target residency");
}

static const char arm2_table[] =
	"teo-states v1\n"
	"WFI 1 1 - 100\n"
	"cpu-off 350 4488 - 5\n";

static const char power_table[] =
	"teo-states v1\n"
	"snooze 0 0 poll 2000\n"
	"CEDE 12 120 - 200\n";

/*
 * Fill @t with 2000 random idle periods: modeled lines, or if @rec recorded
 * ones (version 4) with the next tick within @tick_ns.
 */
static void bound_trace(struct trace *t, bool rec, s64 tick_ns)
{
	int k;

	for (k = 0; k < 2000; k++) {
		s64 timer = 1000 + rng() % 30000000;
		s64 irq = rng() % 2 ? (s64)(rng() % 5000000) : -1;
		s64 busy = rng() % 4 ? rng() % 100000 : 0;

		if (rec)
			add_recorded(t, timer, irq, busy, rng() % tick_ns);
		else
			add(t, timer, irq, busy);
	}
}

/*
 * The oracles are the least energy a replay can count: on seeded random
 * traces (timers from 1 us to 30 ms, interrupts, a quarter of the periods
 * with no busy time after them, so that a stopped tick stays stopped), on
 * four tables at HZ 100, 250 and 1000, with a stop of the tick costing 0,
 * 2 and 5 us and a latency limit or none, on modeled lines and on recorded
 * ones, no governor uses less energy than the oracle of either model, and
 * each oracle's replay counts exactly the energy its plan promised.
 */
static void test_bound(void)
{
	static const char *const tables[] = { x86_table, arm3_table, arm2_table,
					      power_table };
	static const char *const tnames[] = { "x86", "arm3", "arm2", "power" };
	static const s64 hz[] = { 100, 250, 1000 }, cost[] = { 0, 2000, 5000 };
	static const s64 qos[] = { 200000, 400000, 200000, 6000 };
	const struct gov *ora = find_gov("oracle"), *orat = find_gov("oracle-table");
	const struct gov *all[MAX_GOVS + 2];
	const int cells = ARRAY_SIZE(tables) * ARRAY_SIZE(hz) * ARRAY_SIZE(cost) * 4;
	int k, n, nall = 0, runs = 0, beaten = 0, off_plan = 0;
	double closest = INFINITY;
	char first[200] = "";

	/* Every governor built in, ours with utilization off, the bound. */
	for (n = 0; n < ngovs; n++)
		all[nall++] = &govs[n];
	all[nall++] = find_gov("teo-noutil");
	all[nall++] = find_gov("shallowest");
	/*
	 * Each table, HZ and tick cost, and v: with a latency limit (bit 0), on
	 * recorded lines (bit 1).
	 */
	for (k = 0; k < cells; k++) {
		int ti = k / (ARRAY_SIZE(hz) * ARRAY_SIZE(cost) * 4);
		int h = k / (ARRAY_SIZE(cost) * 4) % ARRAY_SIZE(hz);
		int c = k / 4 % ARRAY_SIZE(cost);
		int v = k % 4;
		struct replay_cfg cfg = {
			.tick_ns = NSEC_PER_SEC / hz[h],
			.exit_share_pct = 50,
			.tick_cost_ns = cost[c],
			.has_qos = v & 1, .qos_ns = qos[ti],
		};
		struct cpuidle_driver drv;
		struct trace t = {};
		struct result ro, rt, r;

		must_parse_table(tables[ti], &drv);
		rng_state = 7 + ti * 100 + h * 10 + c * 2 + v;
		bound_trace(&t, v & 2, cfg.tick_ns);
		replay(&drv, &t, ora, &cfg, &ro);
		replay(&drv, &t, orat, &cfg, &rt);
		if (fabs(ro.energy_uj - ro.plan_uj) > REL_TOL * ro.plan_uj ||
		    fabs(rt.energy_table_uj - rt.plan_uj) > REL_TOL * rt.plan_uj)
			off_plan++;
		for (n = 0; n < nall; n++) {
			if (!all[n])
				continue;
			runs++;
			replay(&drv, &t, all[n], &cfg, &r);
			closest = min(closest, min(r.energy_uj / ro.energy_uj,
						   r.energy_table_uj / rt.energy_table_uj));
			if (r.energy_uj >= ro.energy_uj * (1 - REL_TOL) &&
			    r.energy_table_uj >= rt.energy_table_uj * (1 - REL_TOL))
				continue;
			if (!beaten++)
				snprintf(first, sizeof(first),
					 "; first: %s on %s, HZ=%lld, tick cost %lld ns%s%s",
					 all[n]->name, tnames[ti], hz[h], cost[c],
					 v & 1 ? ", latency limit" : "",
					 v & 2 ? ", recorded lines" : "");
		}
		free(t.p);
	}
	check(!off_plan,
	      "each oracle's replay counts the energy its plan promised (%d of %d replays off the plan)",
	      off_plan, 2 * cells);
	check(runs && !beaten,
	      "no governor uses less energy than the oracles, on modeled and recorded lines: %d replays of %d governors, %d below, the closest at %.4f times the oracle's%s",
	      runs, nall, beaten, closest, first);
}

static void test_periodic(void)
{
	static const char *const names[] = { "teo", "teo-6.12" };
	struct replay_cfg cfg = { .tick_ns = NSEC_PER_MSEC, .exit_share_pct = 50 };
	struct cpuidle_driver drv;
	int n, k;

	must_parse_table(x86_table, &drv);
	for (n = 0; n < ARRAY_SIZE(names); n++) {
		const struct gov *g = need(names[n], "periodic 2 ms timer");
		struct trace t = {};
		struct result r;

		if (!g)
			continue;
		/* A pure 2 ms periodic timer: 0.1 ms busy, 1.9 ms idle. */
		for (k = 0; k < 2000; k++)
			add(&t, 1900000, -1, 100000);
		replay(&drv, &t, g, &cfg, &r);
		check(r.above + r.below <= r.wakeups / 100,
		      "%s: periodic 2 ms timer, %llu wakeups, %llu above, %llu below",
		      names[n], r.wakeups, r.above, r.below);
		free(t.p);
	}
}

/*
 * Replay the trace @text on @drv through governor @gov into *@r.  If it does
 * not parse or replay, a failed check named @what says so, and false.
 */
static bool replay_text(const struct cpuidle_driver *drv, const char *text,
			const char *gov, const struct replay_cfg *cfg,
			struct result *r, const char *what)
{
	const struct gov *g;
	struct trace t;
	int ret;

	if (parse_trace("t", text, &t)) {
		check(false, "%s: the trace does not parse: %s", what, errbuf);
		return false;
	}
	g = need(gov, what);
	ret = g ? replay(drv, &t, g, cfg, r) : 0;
	free(t.p);
	if (!g)
		return false;
	if (ret)
		check(false, "%s: the replay failed", what);
	return !ret;
}

/*
 * Recorded entries (trace version 2): one governor call per line, the tick
 * as recorded.  On a table of one polling state (the tick always kept,
 * a polling limit of a sixteenth of a tick): a recorded tick 100 us into
 * a 10 ms sleep ends the line there; a recorded stopped tick leaves only
 * the polling limit, 250 us, after which the line ends too; the same
 * sleep without the recorded fields (as in version 1) goes on to the
 * timer in many calls.
 */
static void test_recorded(void)
{
	struct replay_cfg cfg = { .tick_ns = 4 * NSEC_PER_MSEC, .exit_share_pct = 0 };
	unsigned int calls[4] = {};
	struct cpuidle_driver drv;
	struct result r;
	unsigned int k;
	bool ok;

	must_parse_table("teo-states v1\nPOLL 0 0 poll 3000\n", &drv);
	cfg.decisions = tmpfile();
	ok = replay_text(&drv, "teo-trace v2\n"
			 "10000000 - 0 1024 - 0 0 100000 0\n"
			 "10000000 - 0 1024 - 0 0 100000 1\n"
			 "10000000 - 0 1024 - 0 0 - -\n",
			 "shallowest", &cfg, &r, "recorded entries");
	rewind(cfg.decisions);
	while (fscanf(cfg.decisions, "%u %*u %*d %*d %*d", &k) == 1)
		calls[min(k, 3U)]++;
	fclose(cfg.decisions);
	if (ok)
		check(calls[1] == 1 && calls[2] == 1 && calls[3] > 1 &&
		      r.residency_ns[0] == 100000 + 250000 + 10000000,
		      "recorded entries: calls per line %u, %u, %u (want 1, 1, more), %lld ns idle (want 10.35 ms)",
		      calls[1], calls[2], calls[3], r.residency_ns[0]);
}

/*
 * Replay @trace, a few one-state lines recorded at HZ=250, on @table: @what
 * passes with @wakeups wakeups, @want_ns of idle time and @irqs interrupts.
 */
static void replay_recorded(const char *table, const char *trace,
			    const char *what, u64 wakeups, s64 want_ns, u64 irqs)
{
	struct replay_cfg cfg = { .tick_ns = 4 * NSEC_PER_MSEC, .exit_share_pct = 0 };
	struct cpuidle_driver drv;
	struct result r;

	must_parse_table(table, &drv);
	if (!replay_text(&drv, trace, "teo", &cfg, &r, what))
		return;
	check(r.wakeups == wakeups && r.residency_ns[0] == want_ns && r.irq_wakeups == irqs,
	      "%s: %llu wakeups, %lld ns idle, %llu interrupts (want %llu, %lld ns, %llu)",
	      what, r.wakeups, r.residency_ns[0], r.irq_wakeups, wakeups, want_ns, irqs);
}

/*
 * Version 3's woke field: the tick, kept, is due 100 us into each line, but
 * the kernel measured 200 us.  Where the line says the tick ran (taken
 * late, as under emulation) or did not (something else woke the CPU), it
 * ends at 200 us, and only the latter is an interrupt; where it does not
 * say ("-": the kernel had stopped it), the tick wakes the CPU at 100 us
 * and the governor is called again for the other 100 us, which the
 * interrupt ends: a fourth wakeup, the second interrupt, and the line's
 * idle time all counted.  One state that does not poll, so that no
 * polling limit comes first.  A fourth line whose tick was due at its
 * start: the tick wakes the CPU at once, and the next, a period later,
 * comes after the interrupt (two more wakeups, a third interrupt).
 */
static void test_woke(void)
{
	replay_recorded("teo-states v1\nWFI 1 1 - 100\n", "teo-trace v3\n"
		       "10000000 200000 0 1024 - 0 0 100000 0 1\n"
		       "10000000 200000 0 1024 - 0 0 100000 0 0\n"
		       "10000000 200000 0 1024 - 0 0 100000 0 -\n"
		       "10000000 200000 0 1024 - 0 0 0 0 -\n",
		       "recorded tick wakeups", 6, 4 * 200000, 3);
}

/*
 * Version 4's limit field: one polling state, its limit 250 us (TICK_NSEC /
 * 16 at HZ=250), the tick kept and not run, and the kernel measured 300 us.
 * Where the line says the limit did not end the entry (the polling loop
 * read the clock late), it ends at 300 us on an interrupt; where it says
 * the limit did, at 300 us without one, the governor told so; where it
 * does not say ("-"), the limit ends the call at 250 us and the governor
 * is called again for the other 50 us, which the interrupt ends: a fourth
 * wakeup, the second interrupt, and the line's idle time all counted.
 */
static void test_limit(void)
{
	replay_recorded("teo-states v1\nPOLL 0 0 poll 100\n", "teo-trace v4\n"
		       "10000000 300000 0 1024 - 0 0 1000000 0 0 0\n"
		       "10000000 300000 0 1024 - 0 0 1000000 0 0 1\n"
		       "10000000 300000 0 1024 - 0 0 1000000 0 0 -\n",
		       "recorded polling limits", 4, 300000 + 300000 + 300000, 2);
}

/*
 * Version 5's by_timer field: the timer is 1 ms from the idle loop's entry,
 * the kernel measured 950 us from the state's entry.  Where the line says the
 * timer woke the CPU, the wakeup is no interrupt; where it says it did not,
 * or does not say, it is one.  The idle time is the measured one in all.
 */
static void test_by_timer(void)
{
	replay_recorded("teo-states v1\nWFI 1 1 - 100\n", "teo-trace v5\n"
		       "1000000 950000 0 1024 - 0 0 2000000 0 0 0 1\n"
		       "1000000 950000 0 1024 - 0 0 2000000 0 0 0 0\n"
		       "1000000 950000 0 1024 - 0 0 2000000 0 0 0 -\n",
		       "recorded timer wakeups", 3, 3 * 950000, 2);
}

/* @text must fail to parse, with @want in the message. */
static void trace_rejected(const char *text, const char *want, const char *what)
{
	struct trace t;

	check(parse_trace("t", text, &t) && strstr(errbuf, want), "%s: %s", what, errbuf);
	free(t.p);
}

static void test_formats(void)
{
	struct cpuidle_driver drv;
	struct trace t;

	trace_rejected("teo-trace v1\n100 - 0 1024 - 0 0\n1 2 x 1024 - 0 0\n", "t:3:",
		       "trace with a bad 3rd line is rejected");
	trace_rejected("teo-trace v6\n", "t:1:", "trace of an unknown version is rejected");
	trace_rejected("teo-trace v5\n100 - 0 1024 - 0 0 50 0 0 0\n", "want 12 fields",
		       "version 5 wants the by_timer field");
	trace_rejected("teo-trace v5\n100 - 0 1024 - 0 0 50 0 0 0 2\n", "by_timer must be",
		       "version 5's by_timer is 0, 1 or -");
	trace_rejected("teo-trace v4\n100 - 0 1024 - 0 0 50 0 0\n", "want 11 fields",
		       "version 4 wants the limit field");
	trace_rejected("teo-trace v4\n100 - 0 1024 - 0 0 50 0 0 2\n", "limit must be",
		       "version 4's limit is 0, 1 or -");
	trace_rejected("teo-trace v3\n100 - 0 1024 - 0 0 50 0\n", "want 10 fields",
		       "version 3 wants the woke field");
	trace_rejected("teo-trace v3\n100 - 0 1024 - 0 0 50 0 2\n", "woke must be",
		       "version 3's woke is 0, 1 or -");
	trace_rejected("teo-trace v2\n100 - 0 1024 - 0 0\n", "want 9 fields",
		       "version 2 wants the tick fields");
	trace_rejected("teo-trace v2\n100 - 0 1024 - 0 0 50 2\n", "stopped must be",
		       "version 2's stopped is 0, 1 or -");
	trace_rejected("teo-trace v1\n5 - 900 800 - 0 0\n", "t:2:",
		       "utilization above capacity is rejected");
	check(parse_table("s", "teo-states v1\nA 1 10 - 1\nB 2 5 - 1\n", &drv) &&
	      strstr(errbuf, "s:3:"),
	      "state table out of order is rejected: %s", errbuf);
	check(parse_table("s", "teo-states v1\nA 1 10 sleepy 1\n", &drv) &&
	      strstr(errbuf, "s:2:"),
	      "state table with unknown flags is rejected: %s", errbuf);
	check(!parse_trace("t", "# comment\nteo-trace v1\n100 - 0 1024 - 0 0 # x\n", &t) &&
	      t.n == 1 && t.p[0].irq_ns == -1 && t.p[0].latency_ns == S64_MAX,
	      "comments, \"-\" for no interrupt and no limit");
	free(t.p);
}

/* A trace on the harness's first and last CPU replays through our teo. */
static void test_many_cpus(void)
{
	struct replay_cfg cfg = { .tick_ns = 4 * NSEC_PER_MSEC, .exit_share_pct = 50 };
	struct cpuidle_driver drv;
	char text[128], want[32];
	struct trace t;
	struct result r;
	int ret;

	must_parse_table("teo-states v1\nA 1 1 - 100\nB 100 500 - 10\n", &drv);
	snprintf(text, sizeof(text), "teo-trace v1\n3000000 - 0 1024 - 0 0\n"
		 "3000000 200000 0 1024 - %d 0\n3000000 - 0 1024 - %d 0\n",
		 SHIM_NR_CPUS - 1, SHIM_NR_CPUS - 1);
	if (parse_trace("t", text, &t)) {
		check(false, "a trace on CPU %d parses: %s", SHIM_NR_CPUS - 1, errbuf);
		return;
	}
	ret = replay(&drv, &t, find_gov("teo"), &cfg, &r);
	check(!ret && trace_cpus(&t) == SHIM_NR_CPUS && r.wakeups >= 3,
	      "a trace on CPUs 0 and %d replays through teo (%llu wakeups)",
	      SHIM_NR_CPUS - 1, r.wakeups);
	free(t.p);
	snprintf(text, sizeof(text), "teo-trace v1\n100 - 0 1024 - %d 0\n", SHIM_NR_CPUS);
	snprintf(want, sizeof(want), "cpu %d is beyond", SHIM_NR_CPUS);
	trace_rejected(text, want, "a CPU beyond the harness's is rejected");
}

/*
 * One random case: a state table (hostile ones included: unordered exit
 * latencies, equal residencies, one to ten states, a polling state 0 or
 * not), disabled states, latency limits, HZ, utilization and a 40-period
 * idle history on four CPUs, a quarter of whose periods have no busy time
 * (after an interrupt, the tick stays stopped across them); half the cases
 * notice a tick inside a polling state (see struct replay_cfg).  With
 * @extreme, also near-S64_MAX target residencies and exit latencies, and
 * periods with no timer at all (an interrupt ends them); those are for our
 * teo alone, as upstream's governors were not written for them.
 */
void random_case(struct cpuidle_driver *drv, struct trace *t,
		 struct replay_cfg *cfg, bool extreme)
{
	static const s64 hz[] = { 100, 250, 300, 1000 };
	s64 res = 0;
	int k;

	*cfg = (struct replay_cfg) {
		.tick_ns = NSEC_PER_SEC / hz[rng() % ARRAY_SIZE(hz)],
		.exit_share_pct = rng() % 101,
		.disabled = rng() % 4 ? 0 : (u32)rng(),
		.check_invariants = true,
		.tick_in_poll = rng() % 2,
	};
	*drv = (struct cpuidle_driver) { .name = "fuzz" };
	memset(t, 0, sizeof(*t));
	drv->state_count = 1 + rng() % CPUIDLE_STATE_MAX;
	for (k = 0; k < drv->state_count; k++) {
		struct cpuidle_state *st = &drv->states[k];

		if (k && rng() % 4 && res < NSEC_PER_SEC)
			res += rng() % 3 ? rng() % 5000000 : 0;
		if (extreme && k && !(rng() % 8))
			res = S64_MAX - rng() % 2;
		st->target_residency_ns = res;
		st->exit_latency_ns = rng() % 3 ? (s64)(rng() % ((u64)res + 1)) :
				      rng() % 3000000;
		if (extreme && !(rng() % 8))
			st->exit_latency_ns = S64_MAX - rng() % 2;
		st->flags = !k && rng() % 2 ? CPUIDLE_FLAG_POLLING : 0;
		if (st->flags) {
			st->exit_latency_ns = 0;
			st->target_residency_ns = 0;
		}
	}
	for (k = 0; k < 40; k++) {
		s64 irq = rng() % 2 ? (s64)(rng() % 3000000) : -1;
		struct period *p;

		add(t, rng() % 3 ? rng() % 30000000 : rng() % 50000, irq,
		    rng() % 4 ? rng() % 200000 : 0);
		p = &t->p[t->n - 1];
		if (extreme && irq >= 0 && !(rng() % 8))
			p->timer_ns = KTIME_MAX;
		p->cpu = rng() % 4;
		p->capacity = 1 + rng() % 1024;
		p->util = rng() % 2 ? rng() % (p->capacity + 1) : 0;
		switch (rng() % 4) {
		case 0:
			p->latency_ns = 0;
			break;
		case 1:
			p->latency_ns = rng() % 2000000;
			break;
		}
	}
}

static void test_disabled_states(void)
{
	const char *names[MAX_GOVS];
	int n, i;

	names[0] = "teo-7.3";
	n = 1 + series_steps(names + 1);
	for (i = 0; i < n; i++) {
		const struct gov *g = need(names[i], "disabled states");
		bool fixed = i && strcmp(names[i], STEP_DISABLED) >= 0;
		u64 seed, picks = 0, decisions = 0;

		if (!g)
			continue;
		for (seed = 0; seed < 1000; seed++) {
			struct cpuidle_driver drv;
			struct replay_cfg cfg;
			struct trace t;
			struct result r;

			fuzz_make(seed, false, &drv, &t, &cfg);
			cfg.check_invariants = true;
			if (!replay(&drv, &t, g, &cfg, &r)) {
				picks += r.disabled_picks;
				decisions += r.wakeups;
			}
			free(t.p);
		}
		check(fixed ? !picks : picks > 0,
		      "disabled states: %s returns one while another is enabled in %llu of %llu decisions over 1000 random cases (want %s)",
		      names[i], picks, decisions, fixed ? "none" : "some: fixed by " STEP_DISABLED);
	}
}

/*
 * The teo_select event's reason is that of the last step that changed the
 * state, and every step but those that name "timer" or "single" goes only
 * shallower, from a state no deeper than the candidate, so with any other
 * reason the state picked is shallower than the candidate.  Over random
 * tables (exit latencies in any order), disabled states and latency
 * limits, through the step that adds the events, with them on: it must
 * still decide like the step before it.
 */
static void test_select_reasons(void)
{
	static const char *const reasons[] = {
		"timer", "latency", "intercepts", "util", "tick", "single",
	};
	const struct gov *g = need(STEP_TRACE, "select reasons");
	const struct gov *before = g ? need(step_before(STEP_TRACE), "select reasons") : NULL;
	const u64 cases = 1000;
	u64 seed, events = 0, bad = 0, differ = 0;
	u64 seen[ARRAY_SIZE(reasons)] = { 0 };
	char first[160] = "";
	int i;

	if (!g || !before)
		return;
	for (seed = 0; seed < cases; seed++) {
		struct cpuidle_driver drv;
		struct replay_cfg cfg;
		struct trace t;
		struct result r;
		char *buf = NULL, *line, *next;
		size_t len = 0;

		fuzz_make(seed, false, &drv, &t, &cfg);
		cfg.shadow = before;
		shim_set_trace(open_memstream(&buf, &len));
		if (!shim_trace) {
			check(false, "select reasons: open_memstream: %s",
			      strerror(errno));
			free(t.p);
			return;
		}
		if (replay(&drv, &t, g, &cfg, &r) || r.shadow_same != r.wakeups)
			differ++;
		fclose(shim_trace);
		shim_set_trace(NULL);
		free(t.p);
		/*
		 * A line at a time: ASan's strstr() takes the strlen() of
		 * all that follows, which over the whole buffer made this
		 * test take 27 s instead of half a second.
		 */
		for (line = buf; line; line = next) {
			char *end = strchr(line, '\n');
			char why[16];
			int cand, state;

			next = end ? end + 1 : NULL;
			if (end)
				*end = '\0';
			line = strstr(line, "teo_select: ");
			if (!line)
				continue;
			events++;
			if (sscanf(line, "teo_select: cand=%d state=%d reason=%15s",
				   &cand, &state, why) != 3) {
				if (!bad++)
					snprintf(first, sizeof(first),
						 ", first at seed %llu: unreadable: %.*s",
						 seed, (int)strcspn(line, "\n"),
						 line);
				continue;
			}
			for (i = 0; i < (int)ARRAY_SIZE(reasons); i++)
				if (!strcmp(why, reasons[i]))
					seen[i]++;
			if (strcmp(why, "timer") && strcmp(why, "single") &&
			    state >= cand && !bad++)
				snprintf(first, sizeof(first),
					 ", first at seed %llu: cand=%d state=%d reason=%s",
					 seed, cand, state, why);
		}
		free(buf);
	}
	check(events && !bad && !differ,
	      "select reasons: %llu teo_select events over %llu random cases, %llu unreadable or with a reason other than timer or single and a state not shallower than the candidate%s; %llu cases decided otherwise with the events on",
	      events, cases, bad, first, differ);
	for (i = 0; i < (int)ARRAY_SIZE(reasons); i++)
		check(seen[i], "select reasons: reason=%s in %llu events",
		      reasons[i], seen[i]);
}

int self_test(long fuzz_iterations)
{
	struct fuzz_child child = { .pid = -1, .fd = -1 };

	if (fuzz_iterations)
		fuzz_start(fuzz_iterations, &child);
	test_accounting();
	test_bound();
	test_energy_models();
	test_periodic();
	test_formats();
	test_many_cpus();
	test_recorded();
	test_woke();
	test_by_timer();
	test_limit();
	test_disabled_states();
	test_select_reasons();
	if (fuzz_iterations) {
		const struct fuzz_stats *st = &child.st;
		char why[96];
		int i;

		/*
		 * The cleanup and the preparation for KUnit decide like the
		 * steps before them; with utilization awareness off, its step
		 * decides like the one before it, and the trace events change
		 * no decision.
		 */
		if (!fuzz_finish(&child, why, sizeof(why))) {
			check(false, "fuzz: its process ended without its counts (%s)",
			      why);
		} else {
			for (i = 0; i < FUZZ_REPLAYS; i++) {
				if (IN_TREE && !st->decisions[i] && !st->findings[i]) {
					printf("SKIP: fuzz, %s: not in a kernel tree's harness\n",
					       fuzz_names[i]);
					skipped++;
					continue;
				}
				check(st->decisions[i] && !st->findings[i],
				      "fuzz, %s: %llu cases, %llu decisions, %llu findings%s%s",
				      fuzz_names[i], st->cases, st->decisions[i],
				      st->findings[i], first_at(st->first[i]),
				      st->first[i]);
			}
		}
	}
	if (skipped)
		printf("harness: %d skipped (governors a kernel tree does not build)\n",
		       skipped);
	printf("harness: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
