// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the TEO cpuidle governor.
 *
 * Every test drives the governor through its own struct teo_cpu, fake
 * cpuidle driver and device, never the per-CPU data of a CPU in use.  What
 * the governor asks the rest of the kernel while selecting (whether the
 * tick is stopped, the sleep length and the latency limit) is answered by
 * KUnit static stubs from the test's fake CPU; what ->reflect would note,
 * the test sets.
 *
 * - Selection rows: a state table, disabled states, latency limit, tick
 *   state, wakeup metrics and (if asked for) sleep length and time to the
 *   next tick, with the expected state, tick decision and whether the sleep
 *   length was asked for.  Every row holds at any HZ: where the answer
 *   depends on the tick period, the row takes it from TICK_NSEC.
 * - Accounting rows: one idle period, with the bin and the metric (hit or
 *   intercept) it must be counted in.
 * - Callback tests: sequences of selections and wakeups, and state tables
 *   that no sane driver registers.
 *
 * Every selection is also checked against the governor's invariants: the
 * index is in range and enabled (when any state is), the exit latency is
 * within the limit (when any enabled state's is) and the tick is never
 * stopped for a polling state.  The long simulations of wakeup patterns
 * live in the userspace replay harness (tools/testing/cpuidle).
 */

#include <kunit/static_stub.h>
#include <kunit/test.h>
#include <linux/cpuidle.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/string.h>

#include "../teo.h"

#define US(x)		((s64)(x) * NSEC_PER_USEC)
#define MS(x)		((s64)(x) * NSEC_PER_MSEC)
#define NO_LIMIT	S64_MAX
#define SATURATED	(PULSE << DECAY_SHIFT)

#define RAW_STATE(_name, _lat_ns, _res_ns, _flags) {			\
	.name = _name,							\
	.exit_latency_ns = _lat_ns,					\
	.target_residency_ns = _res_ns,					\
	.flags = _flags,						\
}

#define STATE(_name, _lat_us, _res_us, _flags)				\
	RAW_STATE(_name, US(_lat_us), US(_res_us), _flags)

/**
 * struct teo_table - A driver's state table.
 * @name: Short name used in test descriptions.
 * @count: Number of states.
 * @states: The states, shallowest first.
 */
struct teo_table {
	const char *name;
	int count;
	struct cpuidle_state states[CPUIDLE_STATE_MAX];
};

/* x86, i5-10600K: polling state 0 (exit latency / target residency in us). */
static const struct teo_table x86 = {
	.name = "x86", .count = 4, .states = {
		STATE("POLL", 0, 0, CPUIDLE_FLAG_POLLING),
		STATE("C1", 1, 1, 0),
		STATE("C2", 120, 360, 0),
		STATE("C3", 1034, 3102, 0),
	},
};

/* Arm with WFI and CPU-off only (PSCI OS-initiated). */
static const struct teo_table arm2 = {
	.name = "arm2", .count = 2, .states = {
		STATE("WFI", 1, 1, 0),
		STATE("cpu-off", 350, 4488, 0),
	},
};

/* Arm, RK3399-like. */
static const struct teo_table arm3 = {
	.name = "arm3", .count = 3, .states = {
		STATE("WFI", 1, 1, 0),
		STATE("cpu-sleep", 250, 900, 0),
		STATE("cluster-sleep", 500, 2000, 0),
	},
};

/* Arm with two states of equal target residency. */
static const struct teo_table armeq = {
	.name = "armeq", .count = 3, .states = {
		STATE("WFI", 1, 1, 0),
		STATE("cpu-sleep", 150, 2580, 0),
		STATE("cluster-sleep", 600, 2580, 0),
	},
};

/* Arm with equal target residencies below a deeper state. */
static const struct teo_table armeq4 = {
	.name = "armeq4", .count = 4, .states = {
		STATE("WFI", 1, 1, 0),
		STATE("cpu-sleep", 150, 2580, 0),
		STATE("cluster-sleep", 600, 2580, 0),
		STATE("system-sleep", 2000, 10000, 0),
	},
};

/* A shallow state with a longer exit latency than the deeper one. */
static const struct teo_table inverted = {
	.name = "inverted", .count = 3, .states = {
		STATE("POLL", 0, 0, CPUIDLE_FLAG_POLLING),
		STATE("slow-exit", 500, 1, 0),
		STATE("deep", 10, 100, 0),
	},
};

/* POWER-like snooze and CEDE. */
static const struct teo_table power = {
	.name = "power", .count = 2, .states = {
		STATE("snooze", 0, 0, CPUIDLE_FLAG_POLLING),
		STATE("CEDE", 12, 120, 0),
	},
};

/*
 * For the rows about the tick: target residencies a quarter and a half of
 * the tick period (exit latencies a quarter of those), so that each of
 * those rows makes the same choice at any HZ.
 */
static const struct teo_table tick3 = {
	.name = "tick3", .count = 3, .states = {
		STATE("WFI", 1, 1, 0),
		RAW_STATE("quarter", TICK_NSEC / 16, TICK_NSEC / 4, 0),
		RAW_STATE("half", TICK_NSEC / 8, TICK_NSEC / 2, 0),
	},
};

static const struct teo_table wfi_only = {
	.name = "wfi-only", .count = 1, .states = {
		STATE("WFI", 1, 1, 0),
	},
};

static const struct teo_table poll_only = {
	.name = "poll-only", .count = 1, .states = {
		STATE("POLL", 0, 0, CPUIDLE_FLAG_POLLING),
	},
};

/* State tables that no sane driver registers, but the core allows. */

static const struct teo_table hostile_max = {
	.name = "max-states", .count = CPUIDLE_STATE_MAX, .states = {
		STATE("POLL", 0, 0, CPUIDLE_FLAG_POLLING),
		STATE("S1", 1, 2, 0),
		STATE("S2", 3, 10, 0),
		STATE("S3", 10, 40, 0),
		STATE("S4", 40, 120, 0),
		STATE("S5", 100, 400, 0),
		STATE("S6", 300, 1000, 0),
		STATE("S7", 800, 3000, 0),
		STATE("S8", 2000, 8000, 0),
		STATE("S9", 5000, 20000, 0),
	},
};

static const struct teo_table hostile_res_below_lat = {
	.name = "residency<latency", .count = 3, .states = {
		STATE("C1", 10, 1, 0),
		STATE("C2", 500, 100, 0),
		STATE("C3", 5000, 2000, 0),
	},
};

static const struct teo_table hostile_zero = {
	.name = "zero", .count = 3, .states = {
		STATE("POLL", 0, 0, CPUIDLE_FLAG_POLLING),
		STATE("C1", 0, 0, 0),
		STATE("C2", 0, 0, 0),
	},
};

static const struct teo_table hostile_huge = {
	.name = "near-S64_MAX", .count = 4, .states = {
		STATE("WFI", 1, 1, 0),
		RAW_STATE("far", 0, S64_MAX - 1, 0),
		RAW_STATE("slow", S64_MAX - 1, S64_MAX - 1, 0),
		RAW_STATE("max", S64_MAX, S64_MAX, 0),
	},
};

static const struct teo_table hostile_equal = {
	.name = "all-equal", .count = 4, .states = {
		STATE("C1", 10, 100, 0),
		STATE("C2", 10, 100, 0),
		STATE("C3", 10, 100, 0),
		STATE("C4", 10, 100, 0),
	},
};

static const struct teo_table hostile_descending = {
	.name = "deepest-first", .count = 3, .states = {
		STATE("C3", 1000, 3000, 0),
		STATE("C1", 1, 1, 0),
		STATE("POLL", 0, 0, CPUIDLE_FLAG_POLLING),
	},
};

static const struct teo_table *const teo_hostile_tables[] = {
	&hostile_max, &hostile_res_below_lat, &hostile_zero, &hostile_huge,
	&hostile_equal, &hostile_descending, &wfi_only, &poll_only, &x86,
};

/* ---- The fake CPU ------------------------------------------------------ */

/**
 * struct teo_fake - A CPU for the governor to decide for, and its answers.
 * @drv: Its cpuidle driver.
 * @dev: Its cpuidle device.
 * @cpu: The governor's data for it.
 * @tick_stopped: What teo_tick_stopped() answers.
 * @tick_stopped_reads: Calls of teo_tick_stopped().
 * @sleep_length_ns: What teo_sleep_length() answers.
 * @delta_tick_ns: The time to the next tick teo_sleep_length() gives.
 * @latency_req_ns: What teo_latency_req() answers.
 * @sleep_length_reads: Calls of teo_sleep_length().
 */
struct teo_fake {
	struct cpuidle_driver drv;
	struct cpuidle_device dev;
	struct teo_cpu cpu;
	bool tick_stopped;
	int tick_stopped_reads;
	s64 sleep_length_ns;
	s64 delta_tick_ns;
	s64 latency_req_ns;
	int sleep_length_reads;
};

static struct teo_fake *teo_fake_of_test(void)
{
	return kunit_get_current_test()->priv;
}

static bool teo_stub_tick_stopped(void)
{
	struct teo_fake *f = teo_fake_of_test();

	f->tick_stopped_reads++;
	return f->tick_stopped;
}

static ktime_t teo_stub_sleep_length(ktime_t *delta_tick)
{
	struct teo_fake *f = teo_fake_of_test();

	f->sleep_length_reads++;
	*delta_tick = min(f->delta_tick_ns, f->sleep_length_ns);
	return f->sleep_length_ns;
}

static s64 teo_stub_latency_req(unsigned int cpu)
{
	return teo_fake_of_test()->latency_req_ns;
}

/* Give the fake CPU's driver table @t (as a _CST change would). */
static void teo_fake_load(struct teo_fake *f, const struct teo_table *t)
{
	int i;

	memset(f->drv.states, 0, sizeof(f->drv.states));
	memset(f->dev.states_usage, 0, sizeof(f->dev.states_usage));
	f->drv.state_count = t->count;
	for (i = 0; i < t->count; i++)
		f->drv.states[i] = t->states[i];
}

/* ->enable on the fake CPU's data. */
static void teo_fake_enable(struct teo_fake *f)
{
	__teo_enable(&f->cpu, &f->dev);
}

/*
 * A fake CPU with table @t, no latency limit, the tick running, a timer
 * 50 ms away and the next tick a period away.
 */
static struct teo_fake *teo_fake_new(struct kunit *test,
				     const struct teo_table *t)
{
	struct teo_fake *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	teo_fake_load(f, t);
	f->sleep_length_ns = MS(50);
	f->delta_tick_ns = TICK_NSEC;
	f->latency_req_ns = NO_LIMIT;
	test->priv = f;
	kunit_activate_static_stub(test, teo_tick_stopped, teo_stub_tick_stopped);
	kunit_activate_static_stub(test, teo_sleep_length, teo_stub_sleep_length);
	kunit_activate_static_stub(test, teo_latency_req, teo_stub_latency_req);
	teo_fake_enable(f);
	return f;
}

/* Invariants every selection must satisfy. */
static void teo_check_invariants(struct kunit *test, const struct teo_fake *f,
				 int idx, bool stop_tick)
{
	bool any_enabled = false, any_usable = false;
	const struct cpuidle_state *s;
	int i;

	for (i = 0; i < f->drv.state_count; i++) {
		bool enabled = !f->dev.states_usage[i].disable;

		any_enabled |= enabled;
		any_usable |= enabled &&
			      f->drv.states[i].exit_latency_ns <= f->latency_req_ns;
	}

	KUNIT_ASSERT_GE_MSG(test, idx, 0, "index below 0");
	KUNIT_ASSERT_LT_MSG(test, idx, max(f->drv.state_count, 1),
			    "index out of range");
	s = &f->drv.states[idx];

	if (any_enabled)
		KUNIT_EXPECT_FALSE_MSG(test, f->dev.states_usage[idx].disable,
				       "state %d is disabled", idx);
	if (any_usable)
		KUNIT_EXPECT_LE_MSG(test, s->exit_latency_ns, f->latency_req_ns,
				    "state %d exceeds the latency limit", idx);
	/* A stopped tick stays stopped whatever the governor says. */
	if ((s->flags & CPUIDLE_FLAG_POLLING) && !f->tick_stopped)
		KUNIT_EXPECT_FALSE_MSG(test, stop_tick,
				       "tick stopped for polling state %d", idx);
}

/* A selection, as the cpuidle core asks for it, checked for invariants. */
static int teo_fake_select(struct kunit *test, struct teo_fake *f,
			   bool *stop_tick)
{
	int reads = f->tick_stopped_reads;
	bool stop = true;
	int idx;

	idx = __teo_select(&f->cpu, &f->drv, &f->dev, &stop);
	teo_check_invariants(test, f, idx, stop);
	/* It cannot change during a selection, which asks for it once. */
	KUNIT_EXPECT_EQ_MSG(test, f->tick_stopped_reads - reads, 1,
			    "the tick's state asked for once");
	KUNIT_EXPECT_EQ(test, f->dev.last_state_idx, -1);
	if (stop_tick)
		*stop_tick = stop;
	return idx;
}

/*
 * The CPU was idle in @idx for @residency_ns, woken by the tick if @tick
 * or by the polling time limit if @poll_limit; then what ->reflect notes
 * (teo_reflect() itself works on the live per-CPU data, so not here).
 */
static void teo_fake_wake(struct teo_fake *f, int idx, s64 residency_ns,
			  bool tick, bool poll_limit)
{
	f->dev.last_residency_ns = residency_ns;
	f->dev.poll_time_limit = poll_limit;
	f->cpu.tick_wakeup = tick;
	f->dev.last_state_idx = idx;
}

/* @n wakeups after @residency_ns in state 1 with the next timer far away. */
static void teo_fake_intercepts(struct kunit *test, struct teo_fake *f, int n,
				s64 residency_ns)
{
	while (n--) {
		teo_fake_select(test, f, NULL);
		teo_fake_wake(f, 1, residency_ns, false, false);
	}
}

/* ---- Selection rows ---------------------------------------------------- */

/*
 * Where a row's answer depends on the tick period, it is written with these
 * (TICK_NSEC is this kernel's): whether a target residency of @us is below
 * the tick period, so that the tick, if kept, comes before the state pays
 * off; and whether a bin ending at @us ends within it, so that its
 * intercepts count as intercepts within a tick.
 */
#define BELOW_TICK(us)		(US(us) < TICK_NSEC)
#define WITHIN_TICK(us)		(US(us) <= TICK_NSEC)

/**
 * struct teo_row - What every selection row has first.
 * @desc: What the row shows.
 * @table: State table.
 */
struct teo_row {
	const char *desc;
	const struct teo_table *table;
};

/**
 * struct teo_select_case - One selection scenario.
 * @row: Description and state table.
 * @disabled: Disabled states (bit mask).
 * @latency_req_ns: Latency limit (NO_LIMIT if none).
 * @tick_stopped: The tick is already stopped.
 * @sleep_ns: Sleep length, if @sleep_tick_pct is 0.
 * @sleep_tick_pct: Sleep length as a percentage of the tick period.
 * @delta_tick_ns: Time to the next tick, if @delta_tick_pct is 0.
 * @delta_tick_pct: Time to the next tick as a percentage of the tick period;
 *	with neither set, a whole tick period.
 * @hits: Initial hits metric per bin.
 * @intercepts: Initial intercepts metric per bin; those of a bin that ends
 *	within a tick period (the next state's target residency is at most
 *	TICK_NSEC) also count as intercepts within a tick.
 * @brief_idles: Initial short-idles metric.
 * @want_idx: Expected state.
 * @want_stop_tick: Expected tick decision.
 * @want_asked: Whether the sleep length must have been asked for.
 */
struct teo_select_case {
	struct teo_row row;
	u32 disabled;
	s64 latency_req_ns;
	bool tick_stopped;
	s64 sleep_ns;
	unsigned int sleep_tick_pct;
	s64 delta_tick_ns;
	unsigned int delta_tick_pct;
	unsigned int hits[CPUIDLE_STATE_MAX];
	unsigned int intercepts[CPUIDLE_STATE_MAX];
	unsigned int brief_idles;
	int want_idx;
	bool want_stop_tick;
	bool want_asked;
};

static const struct teo_select_case teo_select_cases[] = {
	{
		.row.desc = "one state shorter than the tick: use it, keep the tick, no query",
		.row.table = &wfi_only, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "one state shorter than the tick, tick stopped: stop it",
		.row.table = &wfi_only, .latency_req_ns = NO_LIMIT,
		.tick_stopped = true, .sleep_ns = MS(50),
		.want_idx = 0, .want_stop_tick = true, .want_asked = false,
	}, {
		.row.desc = "only C3 enabled: no query, the tick kept if C3 is below it",
		.row.table = &x86, .disabled = 0x7, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(10),
		.want_idx = 3, .want_stop_tick = !BELOW_TICK(3102),
		.want_asked = false,
	}, {
		.row.desc = "intercepts 400/250/251 in bins 0-2: no deeper than the most common",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.intercepts = { [0] = 400, [1] = 250, [2] = 251 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "arm2 intercepts pick WFI, the shallowest: tick kept",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(50), .delta_tick_pct = 50,
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "arm2 intercepts pick WFI, tick stopped, timer in 50 ms: cpu-off",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_ns = MS(50),
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "arm2 intercepts, tick stopped, timer in 1.5 ticks: WFI, tick kept",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_tick_pct = 150,
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "one polling state: use it, keep the tick",
		.row.table = &poll_only, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "all states disabled: state 0, tick kept",
		.row.table = &x86, .disabled = 0xf, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "only C2 enabled: use it without a query, tick kept",
		.row.table = &x86, .disabled = 0xb, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(10),
		.want_idx = 2, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "timer wakeups, far timer: deepest state, tick stopped",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50, .hits = { [3] = 1000 },
		.want_idx = 3, .want_stop_tick = true, .want_asked = true,
	}, {
		/*
		 * With nothing counted, "intercepts within a tick are at least
		 * 2/3 of all wakeups" holds (0 >= 0), so the tick is kept and
		 * the state must fit before it.
		 */
		.row.desc = "no history, far timer: the tick kept below C3, the state fits it",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50,
		.want_idx = BELOW_TICK(3102) && US(3102) > TICK_NSEC / 2 ? 2 : 3,
		.want_stop_tick = !BELOW_TICK(3102), .want_asked = true,
	}, {
		.row.desc = "early timer picks a shallower state",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(500),
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "timer before the first bin picks polling, tick kept",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50),
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "polling state for an early timer: tick kept past the tick",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50), .delta_tick_ns = US(20),
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "POWER far timer: CEDE, tick stopped",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 30, .hits = { [1] = 1000 },
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "intercept majority at C1 picks C1, short idles: no query",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .brief_idles = 4000,
		.hits = { [3] = 2000 }, .intercepts = { [1] = 6000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "intercept majority at C1 picks C1, few short idles: query",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .brief_idles = 3999,
		.hits = { [3] = 2000 }, .intercepts = { [1] = 6000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "short idles do not spare the query for C2",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .brief_idles = SATURATED,
		.hits = { [3] = 2000 }, .intercepts = { [2] = 6000 },
		.want_idx = 2, .want_stop_tick = !WITHIN_TICK(3102),
		.want_asked = true,
	}, {
		.row.desc = "intercept minority keeps the deepest state",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50,
		.hits = { [3] = 6000 }, .intercepts = { [1] = 2000 },
		.want_idx = 3, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "intercept median picks C2, the tick kept if its bin is within it",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.hits = { [3] = 1000 }, .intercepts = { [1] = 1000, [2] = 4000 },
		.want_idx = 2, .want_stop_tick = !WITHIN_TICK(3102),
		.want_asked = true,
	}, {
		.row.desc = "polling state 0 and short candidate: no query",
		.row.table = &x86, .disabled = 0xc, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "latency limit caps the choice at C2",
		.row.table = &x86, .latency_req_ns = US(200),
		.sleep_ns = MS(100), .delta_tick_pct = 50, .hits = { [3] = 1000 },
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "latency limit 0 with polling state 0: poll, no query",
		.row.table = &x86, .latency_req_ns = 0,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "latency limit 0, nothing fits: state 0, tick kept",
		.row.table = &arm3, .latency_req_ns = 0,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "POLL disabled, limit below C1's latency: C1, never POLL",
		.row.table = &x86, .disabled = 0x1, .latency_req_ns = 0,
		.sleep_ns = MS(100),
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "POLL disabled, limit admits C1 only: C1, intercepts or not",
		.row.table = &x86, .disabled = 0x1, .latency_req_ns = US(1),
		.sleep_ns = MS(100),
		.hits = { [3] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "tick stopped, CEDE disabled: snooze, the tick left stopped",
		.row.table = &power, .disabled = 0x2, .latency_req_ns = NO_LIMIT,
		.tick_stopped = true, .sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = true, .want_asked = false,
	}, {
		.row.desc = "early timer under a limit: past the state over it to POLL",
		.row.table = &inverted, .latency_req_ns = US(50),
		.sleep_ns = US(50),
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "early timer without a limit: the slow-exit state fits",
		.row.table = &inverted, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50),
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "latency limit leaves WFI only: no query, tick kept",
		.row.table = &arm2, .latency_req_ns = US(100),
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
	}, {
		.row.desc = "limit leaves WFI only, timers wake the CPU: query, to count hits",
		.row.table = &arm2, .latency_req_ns = US(100),
		.sleep_ns = MS(100), .hits = { [1] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "tick running: intercepts in bin 0 pick WFI, tick kept",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "tick stopped, no timer within two ticks: the deepest that fits",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "tick stopped: an early timer still picks WFI",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_ns = US(500),
		.want_idx = 0, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "state 0 disabled: intercepts pick the shallowest enabled",
		.row.table = &arm3, .disabled = 0x1, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "state 0 disabled, timer before every enabled state fits",
		.row.table = &arm3, .disabled = 0x1, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(300),
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "intercepts pick cpu-sleep, an earlier timer picks WFI",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(300),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "intercepts in cpu-sleep's bin: the tick kept if within it, WFI",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(50), .delta_tick_ns = US(500),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = WITHIN_TICK(2000) ? 0 : 1,
		.want_stop_tick = !WITHIN_TICK(2000), .want_asked = true,
	}, {
		.row.desc = "intercepts in cpu-sleep's bin, which fits before the tick",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(50), .delta_tick_pct = 95,
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 1, .want_stop_tick = !WITHIN_TICK(2000),
		.want_asked = true,
	}, {
		.row.desc = "timer before the next tick: tick kept, the state fits the timer",
		.row.table = &tick3, .latency_req_ns = NO_LIMIT,
		.sleep_tick_pct = 75, .delta_tick_pct = 90,
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "timer after the next tick, no history: tick kept, the state fits it",
		.row.table = &tick3, .latency_req_ns = NO_LIMIT,
		.sleep_tick_pct = 150, .delta_tick_pct = 40,
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
	}, {
		.row.desc = "timer after the next tick, timer wakeups: the deepest, tick stopped",
		.row.table = &tick3, .latency_req_ns = NO_LIMIT,
		.sleep_tick_pct = 150, .delta_tick_pct = 40, .hits = { [2] = 1000 },
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "timer wakeups, timer 2 ticks away: cpu-off if it fits, tick stopped",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT,
		.sleep_tick_pct = 200, .delta_tick_pct = 30, .hits = { [1] = 1000 },
		.want_idx = US(4488) <= 2 * TICK_NSEC ? 1 : 0,
		.want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "equal target residencies: the deeper twin is taken",
		.row.table = &armeq, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(2600),
		.want_idx = 2, .want_stop_tick = !BELOW_TICK(2580), .want_asked = true,
	}, {
		.row.desc = "equal target residencies, deeper twin over the limit",
		.row.table = &armeq, .latency_req_ns = US(300),
		.sleep_ns = US(2600),
		.want_idx = 1, .want_stop_tick = !BELOW_TICK(2580), .want_asked = true,
	}, {
		.row.desc = "equal target residencies, deeper twin disabled",
		.row.table = &armeq, .disabled = 0x4, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50, .hits = { [1] = 1000 },
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
	}, {
		.row.desc = "equal target residencies: intercepts take the deeper twin",
		.row.table = &armeq4, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(50),
		.hits = { [3] = 1000 }, .intercepts = { [2] = 8000 },
		.want_idx = 2,
		.want_stop_tick = !(BELOW_TICK(2580) && WITHIN_TICK(10000)),
		.want_asked = true,
	}, {
		.row.desc = "equal target residencies: an early timer takes the deeper twin",
		.row.table = &armeq4, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(5),
		.want_idx = 2, .want_stop_tick = !BELOW_TICK(2580), .want_asked = true,
	}, {
		.row.desc = "equal target residencies: early wakeups skip the empty bin",
		.row.table = &armeq, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 4000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
	},
};

static void teo_select_desc(const struct teo_select_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s: %s", c->row.table->name,
		 c->row.desc);
}

KUNIT_ARRAY_PARAM(teo_select, teo_select_cases, teo_select_desc);

static s64 teo_pct_of_tick(unsigned int pct)
{
	return div_s64((s64)TICK_NSEC * pct, 100);
}

/*
 * Load @hits and @intercepts into @f's bins, with the totals derived from
 * them as the update keeps them: all wakeups, and the intercepts of the bins
 * that end within a tick period (the next state's target residency is at
 * most TICK_NSEC).
 */
static void teo_fake_metrics(struct teo_fake *f, const unsigned int *hits,
			     const unsigned int *intercepts)
{
	const struct cpuidle_driver *drv = &f->drv;
	int i;

	for (i = 0; i < CPUIDLE_STATE_MAX; i++) {
		f->cpu.state_bins[i].hits = hits[i];
		f->cpu.state_bins[i].intercepts = intercepts[i];
		f->cpu.total += hits[i] + intercepts[i];
		if (i + 1 < drv->state_count &&
		    drv->states[i + 1].target_residency_ns <= TICK_NSEC)
			f->cpu.tick_intercepts += intercepts[i];
	}
}

static void teo_test_select(struct kunit *test)
{
	const struct teo_select_case *c = test->param_value;
	struct teo_fake *f;
	bool stop_tick;
	int i, idx;

	f = teo_fake_new(test, c->row.table);
	for (i = 0; i < CPUIDLE_STATE_MAX; i++)
		f->dev.states_usage[i].disable = !!(c->disabled & BIT(i));
	teo_fake_metrics(f, c->hits, c->intercepts);
	f->cpu.short_idles = c->brief_idles;
	f->latency_req_ns = c->latency_req_ns;
	f->tick_stopped = c->tick_stopped;
	f->sleep_length_ns = c->sleep_tick_pct ?
			     teo_pct_of_tick(c->sleep_tick_pct) : c->sleep_ns;
	if (c->delta_tick_pct)
		f->delta_tick_ns = teo_pct_of_tick(c->delta_tick_pct);
	else if (c->delta_tick_ns)
		f->delta_tick_ns = c->delta_tick_ns;

	idx = teo_fake_select(test, f, &stop_tick);

	KUNIT_EXPECT_EQ_MSG(test, idx, c->want_idx, "state");
	KUNIT_EXPECT_EQ_MSG(test, stop_tick, c->want_stop_tick, "stop_tick");
	KUNIT_EXPECT_EQ_MSG(test, f->sleep_length_reads, c->want_asked ? 1 : 0,
			    "sleep length asked for");
	KUNIT_EXPECT_EQ_MSG(test, f->cpu.sleep_length_ns,
			    c->want_asked ? f->sleep_length_ns : KTIME_MAX,
			    "sleep length kept for the update");
}

/* ---- Accounting rows --------------------------------------------------- */

/**
 * struct teo_account_case - One idle period and where it must be counted.
 * @desc: What the row shows.
 * @table: State table.
 * @entered: The state the CPU was idle in.
 * @sleep_length_ns: Sleep length asked for before it (KTIME_MAX if not).
 * @residency_ns: Idle time the cpuidle core measured.
 * @tick: The tick woke the CPU.
 * @poll_limit: The polling time limit ended the idle period.
 * @want_bin: Bin the pulse must land in.
 * @want_hit: Whether it must count as a hit (else as an intercept).
 */
struct teo_account_case {
	const char *desc;
	const struct teo_table *table;
	int entered;
	s64 sleep_length_ns;
	s64 residency_ns;
	bool tick;
	bool poll_limit;
	int want_bin;
	bool want_hit;
};

static const struct teo_account_case teo_account_cases[] = {
	{
		.desc = "x86: woke by the timer in C2's bin: hit in C2",
		.table = &x86, .entered = 2, .want_bin = 2, .want_hit = true,
		.sleep_length_ns = MS(2), .residency_ns = MS(2) + US(120),
	}, {
		.desc = "x86: in the timer's bin but 1.5 ms before it: intercept in C3",
		.table = &x86, .entered = 3, .want_bin = 3, .want_hit = false,
		.sleep_length_ns = MS(5), .residency_ns = MS(4),
	}, {
		.desc = "x86: interrupt at 100 us, timer at 2 ms: intercept in C1",
		.table = &x86, .entered = 2, .want_bin = 1, .want_hit = false,
		.sleep_length_ns = MS(2), .residency_ns = US(100),
	}, {
		.desc = "x86: interrupt at 1 ms, timer at 5 ms: intercept in C2",
		.table = &x86, .entered = 3, .want_bin = 2, .want_hit = false,
		.sleep_length_ns = MS(5), .residency_ns = MS(1),
	}, {
		.desc = "x86: half the exit latency is taken off: 370 -> C1",
		.table = &x86, .entered = 2, .want_bin = 1, .want_hit = false,
		.sleep_length_ns = MS(5), .residency_ns = US(370),
	}, {
		.desc = "x86: residency below exit latency is halved: 0.6 us -> POLL",
		.table = &x86, .entered = 3, .want_bin = 0, .want_hit = false,
		.sleep_length_ns = MS(5), .residency_ns = 1500,
	}, {
		.desc = "x86: woke after the timer: hit in the timer's bin",
		.table = &x86, .entered = 2, .want_bin = 2, .want_hit = true,
		.sleep_length_ns = US(500), .residency_ns = US(900),
	}, {
		.desc = "x86: tick wakeup counts as a hit at the sleep length",
		.table = &x86, .entered = 2, .want_bin = 3, .want_hit = true,
		.sleep_length_ns = MS(50), .residency_ns = US(700), .tick = true,
	}, {
		.desc = "x86: polling time limit counts as a hit at the sleep length",
		.table = &x86, .entered = 0, .want_bin = 2, .want_hit = true,
		.sleep_length_ns = US(800), .residency_ns = US(10),
		.poll_limit = true,
	}, {
		.desc = "x86: polling time limit, sleep length not asked: deepest bin, intercept",
		.table = &x86, .entered = 0, .want_bin = 3, .want_hit = false,
		.sleep_length_ns = KTIME_MAX, .residency_ns = US(10),
		.poll_limit = true,
	}, {
		.desc = "x86: polling time limit after an overdue timer: hit, no overflow",
		.table = &x86, .entered = 0, .want_bin = 0, .want_hit = true,
		.sleep_length_ns = -US(700), .residency_ns = US(60),
		.poll_limit = true,
	}, {
		.desc = "arm2: tick wakeup, sleep length not asked: deepest bin",
		.table = &arm2, .entered = 0, .want_bin = 1, .want_hit = true,
		.sleep_length_ns = KTIME_MAX, .residency_ns = MS(3), .tick = true,
	}, {
		.desc = "arm2: tick wakeups dominate, one before a 9 ms timer: hit in cpu-off",
		.table = &arm2, .entered = 0, .want_bin = 1, .want_hit = true,
		.sleep_length_ns = MS(9), .residency_ns = MS(2), .tick = true,
	}, {
		.desc = "arm3: sleep length not asked, early wakeup: intercept",
		.table = &arm3, .entered = 0, .want_bin = 0, .want_hit = false,
		.sleep_length_ns = KTIME_MAX, .residency_ns = US(20),
	}, {
		.desc = "arm3: sleep length not asked, long idle: intercept in the deepest",
		.table = &arm3, .entered = 0, .want_bin = 2, .want_hit = false,
		.sleep_length_ns = KTIME_MAX, .residency_ns = MS(30),
	}, {
		.desc = "armeq: 3 ms lands in the deeper twin's bin",
		.table = &armeq, .entered = 0, .want_bin = 2, .want_hit = true,
		.sleep_length_ns = MS(3), .residency_ns = MS(3) + US(1),
	}, {
		.desc = "armeq: interrupt at 2.6 ms, timer at 1 s: intercept, no deeper bin",
		.table = &armeq, .entered = 0, .want_bin = 2, .want_hit = false,
		.sleep_length_ns = MS(1000), .residency_ns = US(2600),
	}, {
		.desc = "power: interrupt at 100 us, timer at 1 ms: intercept",
		.table = &power, .entered = 0, .want_bin = 0, .want_hit = false,
		.sleep_length_ns = MS(1), .residency_ns = US(100),
	},
};

static void teo_account_desc(const struct teo_account_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(teo_account, teo_account_cases, teo_account_desc);

/*
 * The idle period of @c, after which the next selection (made with the tick
 * running and a timer 50 ms away) counts it.
 */
static void teo_fake_account(struct kunit *test, struct teo_fake *f,
			     int entered, s64 sleep_length_ns,
			     s64 residency_ns, bool tick, bool poll_limit)
{
	f->cpu.sleep_length_ns = sleep_length_ns;
	teo_fake_wake(f, entered, residency_ns, tick, poll_limit);
	teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_FALSE_MSG(test, f->dev.poll_time_limit,
			       "polling time limit left set");
}

static void teo_test_account(struct kunit *test)
{
	const struct teo_account_case *c = test->param_value;
	struct teo_fake *f = teo_fake_new(test, c->table);
	int i;

	teo_fake_account(test, f, c->entered, c->sleep_length_ns,
			 c->residency_ns, c->tick, c->poll_limit);

	for (i = 0; i < CPUIDLE_STATE_MAX; i++) {
		unsigned int hits = i == c->want_bin && c->want_hit ? PULSE : 0;
		unsigned int icpt = i == c->want_bin && !c->want_hit ? PULSE : 0;

		KUNIT_EXPECT_EQ_MSG(test, f->cpu.state_bins[i].hits, hits,
				    "hits of bin %d", i);
		KUNIT_EXPECT_EQ_MSG(test, f->cpu.state_bins[i].intercepts, icpt,
				    "intercepts of bin %d", i);
	}
	KUNIT_EXPECT_EQ(test, f->cpu.total, PULSE);
}

static void teo_test_decay(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &x86);
	int i;

	f->cpu.state_bins[0].hits = 5;
	f->cpu.state_bins[1].intercepts = 7;
	f->cpu.state_bins[2].hits = SATURATED;
	f->cpu.state_bins[2].intercepts = 1;

	/* Woken 1 ns after a 100 ms timer: a hit in C3. */
	teo_fake_account(test, f, 0, MS(100), MS(100) + 1, false, false);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[2].hits,
			SATURATED - SATURATED / 8);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[3].hits, PULSE);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[2].intercepts, 0);

	/* Values below the decay step must still reach zero. */
	for (i = 0; i < 7; i++)
		teo_fake_account(test, f, 0, MS(100), MS(100) + 1, false, false);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[0].hits, 0);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[1].intercepts, 0);

	/*
	 * A steady stream of hits settles within one decay step of the
	 * saturation value, and everything else decays to zero.
	 */
	for (i = 0; i < 200; i++)
		teo_fake_account(test, f, 0, MS(100), MS(100) + 1, false, false);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[2].hits, 0);
	KUNIT_EXPECT_LE(test, f->cpu.state_bins[3].hits, SATURATED);
	KUNIT_EXPECT_GT(test, f->cpu.state_bins[3].hits,
			SATURATED - (1 << DECAY_SHIFT));
}

/* An endless idle period with no timer lands in the table's last bin. */
static void teo_test_account_stays_in_table(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &arm2);
	int i;

	for (i = 0; i < CPUIDLE_STATE_MAX; i++)
		f->cpu.state_bins[i].hits = 8;
	teo_fake_account(test, f, 1, KTIME_MAX, S64_MAX, false, false);

	/* Woken at "infinity" with no timer: not a timer's hit. */
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[1].hits, 7);
	KUNIT_EXPECT_EQ(test, f->cpu.state_bins[1].intercepts, PULSE);
	for (i = 2; i < CPUIDLE_STATE_MAX; i++)
		KUNIT_EXPECT_EQ_MSG(test, f->cpu.state_bins[i].hits, 8,
				    "bin %d beyond the table was touched", i);
}

/* ---- Callback tests ---------------------------------------------------- */

/*
 * A wakeup by the polling time limit is consumed by the next selection and
 * counts as a long idle period: POLL left at its limit again and again does
 * not make the governor expect short idle periods, which the same
 * residencies without the limit do.
 */
static void teo_test_poll_limit(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &x86);
	int i, idx;

	for (i = 0; i < 12; i++) {
		teo_fake_select(test, f, NULL);
		KUNIT_EXPECT_FALSE(test, f->dev.poll_time_limit);
		teo_fake_wake(f, 0, US(100), false, true);
	}
	idx = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_EQ_MSG(test, idx, 3, "after polling-limit wakeups");

	teo_fake_enable(f);
	for (i = 0; i < 12; i++) {
		teo_fake_select(test, f, NULL);
		teo_fake_wake(f, 0, US(100), false, false);
	}
	idx = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_LT_MSG(test, idx, 3, "after 100 us wakeups");
}

/*
 * A state disabled between its selection and the next one: the update
 * still accounts for it, and it is not selected again.
 */
static void teo_test_disabled_in_between(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &x86);
	int idx;

	idx = teo_fake_select(test, f, NULL);
	KUNIT_ASSERT_EQ(test, idx, 3);
	teo_fake_wake(f, idx, MS(50), false, false);
	f->dev.states_usage[3].disable = 1;
	idx = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_EQ(test, idx, 2);
	teo_fake_wake(f, idx, MS(50), false, false);
	f->dev.states_usage[3].disable = 0;
	KUNIT_EXPECT_EQ(test, teo_fake_select(test, f, NULL), 3);
}

/* A fresh start (->enable, a governor switch) forgets the history. */
static void teo_test_reenable(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &x86);

	teo_fake_intercepts(test, f, 16, US(100));
	KUNIT_EXPECT_LT(test, teo_fake_select(test, f, NULL), 3);
	teo_fake_enable(f);
	KUNIT_EXPECT_EQ(test, teo_fake_select(test, f, NULL), 3);
}

/*
 * With the tick already stopped, a shallow state chosen for early wakeups
 * stands if a timer is due within two tick periods, which will end it;
 * with no timer for longer, the deepest state that fits the sleep length
 * is taken, as nothing else may wake the CPU.
 */
static void teo_test_tick_stopped(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &x86);
	int idx;

	teo_fake_intercepts(test, f, 16, US(100));
	f->tick_stopped = true;
	f->sleep_length_ns = TICK_NSEC + TICK_NSEC / 2;
	f->sleep_length_reads = 0;
	idx = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_LE_MSG(test, idx, 1, "timer in 1.5 ticks");
	KUNIT_EXPECT_EQ_MSG(test, f->sleep_length_reads, 1,
			    "the sleep length is needed with the tick stopped");
	teo_fake_wake(f, idx, US(100), false, false);

	f->sleep_length_ns = 20 * TICK_NSEC;
	idx = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_EQ_MSG(test, idx, 3, "timer in 20 ticks");
}

/*
 * A driver that rejects the entry (returns a negative index) gets no
 * ->reflect: the next selection has nothing to account and decides as if
 * the rejected one had not happened.
 */
static void teo_test_rejected(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &x86);
	int i, idx, first;

	teo_fake_intercepts(test, f, 16, US(100));
	first = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_LT(test, first, 3);
	for (i = 0; i < 100; i++) {
		idx = teo_fake_select(test, f, NULL);
		KUNIT_EXPECT_EQ_MSG(test, idx, first, "after %d rejections",
				    i + 1);
	}
}

/*
 * The table changes under the governor (an ACPI _CST change): the core
 * disables the device, the driver rewrites its table and ->enable runs
 * again.  The history of the old table is gone, and a table of fewer states
 * never sees a state of the old one.
 */
static void teo_test_table_change(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &hostile_max);
	int i, idx;

	/* Learn intercepts in a deep bin, and leave a deep state entered. */
	for (i = 0; i < 32; i++) {
		idx = teo_fake_select(test, f, NULL);
		teo_fake_wake(f, idx, MS(10), false, false);
	}
	idx = teo_fake_select(test, f, NULL);
	KUNIT_EXPECT_GE(test, idx, 7);
	KUNIT_EXPECT_LT(test, idx, 9);
	teo_fake_wake(f, 9, MS(30), false, false);

	teo_fake_load(f, &arm2);
	teo_fake_enable(f);
	for (i = 0; i < 32; i++) {
		idx = teo_fake_select(test, f, NULL);
		KUNIT_EXPECT_EQ_MSG(test, idx, 1, "selection %d after the change",
				    i);
		teo_fake_wake(f, idx, MS(30), false, false);
	}

	/* And back to the long table: its deepest state, no old history. */
	teo_fake_load(f, &hostile_max);
	teo_fake_enable(f);
	KUNIT_EXPECT_EQ(test, teo_fake_select(test, f, NULL), 9);
}

/*
 * ->enable after a table change, with the old table's deepest state entered
 * last: that state and the sleep length of the old table are forgotten, so
 * the first selection on the new table accounts for nothing.
 */
static void teo_test_enable_forgets(struct kunit *test)
{
	struct teo_fake *f = teo_fake_new(test, &hostile_max);
	int i;

	teo_fake_select(test, f, NULL);
	teo_fake_wake(f, 9, MS(30), false, false);
	KUNIT_ASSERT_EQ(test, f->dev.last_state_idx, 9);

	teo_fake_load(f, &arm2);
	teo_fake_enable(f);
	KUNIT_EXPECT_EQ_MSG(test, f->dev.last_state_idx, -1,
			    "a state of the old table is left to account for");
	KUNIT_EXPECT_EQ(test, f->cpu.sleep_length_ns, KTIME_MAX);

	KUNIT_EXPECT_EQ(test, teo_fake_select(test, f, NULL), 1);
	KUNIT_EXPECT_EQ(test, f->cpu.total, 0);
	for (i = 0; i < CPUIDLE_STATE_MAX; i++)
		KUNIT_EXPECT_EQ_MSG(test, f->cpu.state_bins[i].hits +
				    f->cpu.state_bins[i].intercepts, 0,
				    "bin %d counted a wakeup", i);
}

/* ---- Hostile state tables ---------------------------------------------- */

/*
 * Each hostile table through the callbacks: every state disabled in turn
 * and all of them at once, latency limits from 0 to none, the tick running
 * and stopped, sleep lengths and residencies from 0 to KTIME_MAX, and tick
 * and polling-limit wakeups.  Every selection keeps the invariants (checked
 * in teo_fake_select()).
 */
static void teo_test_hostile(struct kunit *test)
{
	static const s64 limits[] = { 0, 1, US(2), US(150), NO_LIMIT };
	static const s64 times[] = { 0, 1, US(100), MS(3), MS(100), KTIME_MAX };
	const struct teo_table *t = *(const struct teo_table *const *)
				    test->param_value;
	struct teo_fake *f = teo_fake_new(test, t);
	int d, l, s, r, idx;

	for (d = -1; d <= t->count; d++) {
		for (idx = 0; idx < t->count; idx++)
			f->dev.states_usage[idx].disable =
				d == t->count || idx == d;
		for (l = 0; l < ARRAY_SIZE(limits); l++) {
			f->latency_req_ns = limits[l];
			for (s = 0; s < ARRAY_SIZE(times); s++) {
				f->sleep_length_ns = times[s];
				f->delta_tick_ns = min_t(s64, times[s], TICK_NSEC);
				f->tick_stopped = s % 2;
				for (r = 0; r < ARRAY_SIZE(times); r++) {
					const struct cpuidle_state *st;

					idx = teo_fake_select(test, f, NULL);
					st = &f->drv.states[idx];
					teo_fake_wake(f, idx, times[r], r == 2,
						      (st->flags & CPUIDLE_FLAG_POLLING) &&
						      r == 3);
				}
			}
		}
	}
}

static void teo_table_desc(const struct teo_table *const *t, char *desc)
{
	strscpy(desc, (*t)->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(teo_hostile, teo_hostile_tables, teo_table_desc);

static struct kunit_case teo_test_cases[] = {
	KUNIT_CASE_PARAM(teo_test_select, teo_select_gen_params),
	KUNIT_CASE_PARAM(teo_test_account, teo_account_gen_params),
	KUNIT_CASE(teo_test_decay),
	KUNIT_CASE(teo_test_account_stays_in_table),
	KUNIT_CASE(teo_test_poll_limit),
	KUNIT_CASE(teo_test_disabled_in_between),
	KUNIT_CASE(teo_test_reenable),
	KUNIT_CASE(teo_test_tick_stopped),
	KUNIT_CASE(teo_test_rejected),
	KUNIT_CASE(teo_test_table_change),
	KUNIT_CASE(teo_test_enable_forgets),
	KUNIT_CASE_PARAM(teo_test_hostile, teo_hostile_gen_params),
	{}
};

static struct kunit_suite teo_test_suite = {
	.name = "cpuidle_teo",
	.test_cases = teo_test_cases,
};

kunit_test_suite(teo_test_suite);

MODULE_DESCRIPTION("KUnit tests for the TEO cpuidle governor");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
