// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the TEO cpuidle governor: its decision core and its
 * cpuidle callbacks.
 *
 * Three tables drive the suite:
 *
 * - selection rows: a state table, disabled states, latency limit, tick
 *   state, wakeup metrics and (if asked for) sleep length and time to the
 *   next tick, with the expected state, tick decision and whether the sleep
 *   length was asked for.  A row with no HZ given runs at HZ=100, 250 and
 *   1000 and must give the same answer at each;
 * - accounting rows: one idle period, with the bin and the metric (hit or
 *   intercept) it must land in;
 * - histories: a simulated CPU (timers, interrupts, the tick) replayed
 *   through selection and accounting for many wakeups.
 *
 * Every decision, in every table, is also checked against the governor's
 * invariants: the index is in range and usable (when any state is), the
 * exit latency is within the limit, the tick is never stopped for a polling
 * state and no sleep length query is left pending.
 *
 * The glue tests call the cpuidle callbacks themselves on a fake CPU whose
 * questions to the kernel (tick, sleep length, latency limit, utilization)
 * static stubs answer, with ordinary tables and with hostile ones driven
 * at random (see teo_glue_chaos()).
 *
 * Copyright (C) 2026 The TEO governor developers
 */

#include <kunit/static_stub.h>
#include <kunit/test.h>
#include <linux/container_of.h>
#include <linux/cpumask.h>
#include <linux/cpuidle.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/prandom.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include "../../drivers/cpuidle/governors/teo.h"

#define US(x)		((s64)(x) * NSEC_PER_USEC)
#define MS(x)		((s64)(x) * NSEC_PER_MSEC)
#define NO_LIMIT	S64_MAX
#define SATURATED	(TEO_PULSE << TEO_DECAY_SHIFT)

/* The core reads only the _ns fields, the flags (and the name, in messages). */
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

/* POWER-like snooze and CEDE. */
static const struct teo_table power = {
	.name = "power", .count = 2, .states = {
		STATE("snooze", 0, 0, CPUIDLE_FLAG_POLLING),
		STATE("CEDE", 12, 120, 0),
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

static const unsigned int teo_hz[] = { 100, 250, 1000 };

static s64 teo_tick_ns(unsigned int hz)
{
	return div_u64(NSEC_PER_SEC, hz);
}

/* The input for table @t with the states in the mask @disabled disabled. */
static void teo_make_input(struct kunit *test, struct teo_input *in,
			   const struct teo_table *t, u32 disabled,
			   s64 latency_req_ns, unsigned int hz, bool tick_stopped)
{
	struct cpuidle_state_usage *usage;
	int i;

	usage = kunit_kcalloc(test, CPUIDLE_STATE_MAX, sizeof(*usage),
			      GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, usage);
	for (i = 0; i < CPUIDLE_STATE_MAX; i++)
		usage[i].disable = !!(disabled & BIT(i));
	*in = (struct teo_input) {
		.states = t->states,
		.state_count = t->count,
		.usage = usage,
		.latency_req_ns = latency_req_ns,
		.tick_period_ns = teo_tick_ns(hz),
		.tick_stopped = tick_stopped,
	};
}

/* Invariants every final decision must satisfy. */
static void teo_check_invariants(struct kunit *test, const struct teo_input *in,
				 const struct teo_decision *d, const char *what)
{
	bool any_enabled = false, any_usable = false;
	const struct cpuidle_state *s;
	int i;

	for (i = 0; i < in->state_count; i++) {
		bool enabled = !in->usage[i].disable;

		any_enabled |= enabled;
		any_usable |= enabled &&
			      in->states[i].exit_latency_ns <= in->latency_req_ns;
	}

	KUNIT_ASSERT_GE_MSG(test, d->idx, 0, "%s: index below 0", what);
	KUNIT_ASSERT_LT_MSG(test, d->idx, max(in->state_count, 1),
			    "%s: index out of range", what);
	s = &in->states[d->idx];

	if (any_enabled)
		KUNIT_EXPECT_FALSE_MSG(test, in->usage[d->idx].disable,
				       "%s: state %d is disabled", what, d->idx);
	if (any_usable)
		KUNIT_EXPECT_LE_MSG(test, s->exit_latency_ns, in->latency_req_ns,
				    "%s: state %d exceeds the latency limit",
				    what, d->idx);
	if (s->flags & CPUIDLE_FLAG_POLLING)
		KUNIT_EXPECT_FALSE_MSG(test, d->stop_tick,
				       "%s: tick stopped for polling state %d",
				       what, d->idx);
	KUNIT_EXPECT_FALSE_MSG(test, d->need_sleep_length,
			       "%s: sleep length query left pending", what);
}

/*
 * Run both phases the way the kernel glue does; the sleep length and the
 * time to the next tick are handed over only if the early phase asks.
 */
static bool teo_decide(const struct teo_input *in, const struct teo_metrics *m,
		       s64 sleep_length_ns, s64 delta_tick_ns,
		       struct teo_decision *d)
{
	bool asked;

	teo_decide_early(in, m, d);
	asked = d->need_sleep_length;
	if (asked)
		teo_decide_late(in, sleep_length_ns, delta_tick_ns, d);
	return asked;
}

/**
 * struct teo_row - What every selection row and history has first.
 * @desc: What the row shows.
 * @table: State table.
 * @hz: HZ of the row, or 0 to run it at every HZ in teo_hz[].
 */
struct teo_row {
	const char *desc;
	const struct teo_table *table;
	unsigned int hz;
};

/**
 * struct teo_param - A row at one HZ: the parameter of a test case.
 * @row: The row.
 * @hz: The HZ to run it at.
 */
struct teo_param {
	const struct teo_row *row;
	unsigned int hz;
};

/*
 * Expand @nrows rows of @size bytes, each starting with a struct teo_row,
 * into one parameter per row and HZ it runs at, in @params (room for
 * @nrows * ARRAY_SIZE(teo_hz)); then walk them as a KUnit generator.
 */
static const void *teo_gen_params(const void *prev, char *desc,
				  const void *rows, size_t nrows, size_t size,
				  struct teo_param *params, int *nparams)
{
	const struct teo_param *p;
	int i, h;

	if (!prev) {
		*nparams = 0;
		for (i = 0; i < nrows; i++) {
			const struct teo_row *row =
				(const void *)((const char *)rows + i * size);

			for (h = 0; h < ARRAY_SIZE(teo_hz); h++) {
				if (row->hz && row->hz != teo_hz[h])
					continue;
				params[*nparams].row = row;
				params[*nparams].hz = teo_hz[h];
				(*nparams)++;
			}
		}
		p = params;
	} else {
		p = (const struct teo_param *)prev + 1;
	}
	if (p >= params + *nparams)
		return NULL;

	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s: %s @HZ=%u",
		 p->row->table->name, p->row->desc, p->hz);
	return p;
}

/*
 * TEO_PARAMS(name): the parameters and the KUnit generator
 * name##_gen_params() for the case table name##_cases, whose rows start
 * with the struct teo_row that teo_gen_params() reads.
 */
#define TEO_PARAMS(name)						\
	static struct teo_param						\
	name##_params[ARRAY_SIZE(name##_cases) * ARRAY_SIZE(teo_hz)];	\
	static int name##_nparams;					\
	static const void *name##_gen_params(struct kunit *test,	\
					     const void *prev, char *desc) \
	{								\
		return teo_gen_params(prev, desc, name##_cases,		\
				      ARRAY_SIZE(name##_cases),		\
				      sizeof(name##_cases[0]),		\
				      name##_params, &name##_nparams);	\
	}								\
	static_assert(offsetof(typeof(name##_cases[0]), row) == 0)

/* ---- Selection rows ---------------------------------------------------- */

/**
 * struct teo_select_case - One selection scenario.
 * @row: Description, state table and HZ.
 * @disabled: Disabled states (bit mask).
 * @latency_req_ns: Latency limit (NO_LIMIT if none).
 * @tick_stopped: The tick is already stopped.
 * @sleep_ns: Sleep length, if @sleep_tick_pct is 0.
 * @sleep_tick_pct: Sleep length as a percentage of the tick period.
 * @delta_tick_ns: Time to the next tick, if @delta_tick_pct is 0.
 * @delta_tick_pct: Time to the next tick as a percentage of the tick period;
 *	with neither set, a whole tick period.
 * @hits: Initial hits metric per bin.
 * @intercepts: Initial intercepts metric per bin.
 * @outlived_ns: If not 0, the tick or the polling limit woke the CPU this
 *	long after its last real wakeup.
 * @brief_idles: Initial short-idles metric.
 * @want_idx: Expected state.
 * @want_stop_tick: Expected tick decision.
 * @want_asked: Whether the sleep length must have been asked for.
 * @want_reason: Expected reason for the state.
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
	s64 outlived_ns;
	unsigned int brief_idles;
	int want_idx;
	bool want_stop_tick;
	bool want_asked;
	enum teo_reason want_reason;
};

static const struct teo_select_case teo_select_cases[] = {
	{
		.row.desc = "one state shorter than the tick: use it, keep the tick, no query",
		.row.table = &wfi_only, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "one state shorter than the tick, tick stopped: stop it",
		.row.table = &wfi_only, .latency_req_ns = NO_LIMIT,
		.tick_stopped = true, .sleep_ns = MS(50),
		.want_idx = 0, .want_stop_tick = true, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "only C3 enabled, deeper than a 1 ms tick: stop the tick",
		.row.table = &x86, .disabled = 0x7, .latency_req_ns = NO_LIMIT,
		.row.hz = 1000, .sleep_ns = US(10),
		.want_idx = 3, .want_stop_tick = true, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "only C3 enabled, within a 4 ms tick: keep the tick",
		.row.table = &x86, .disabled = 0x7, .latency_req_ns = NO_LIMIT,
		.row.hz = 250, .sleep_ns = MS(50),
		.want_idx = 3, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "intercepts 400/250/251 in bins 0-2: no deeper than the most common",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.intercepts = { [0] = 400, [1] = 250, [2] = 251 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "arm2 intercepts pick WFI, the shallowest: tick kept",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(50), .delta_tick_pct = 50,
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "arm2 intercepts pick WFI, tick stopped, timer in 50 ms: cpu-off",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_ns = MS(50),
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "arm2 intercepts, tick stopped, timer in 1.5 ticks: WFI, tick kept",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_tick_pct = 150,
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "one polling state: use it, keep the tick",
		.row.table = &poll_only, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "all states disabled: state 0, tick kept",
		.row.table = &x86, .disabled = 0xf, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "only C2 enabled: use it without a query, tick kept",
		.row.table = &x86, .disabled = 0xb, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(10),
		.want_idx = 2, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "no history, far timer: deepest state, tick stopped",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50,
		.want_idx = 3, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "early timer picks a shallower state",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(500),
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "timer before the first bin picks polling, tick kept",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50),
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "polling state for an early timer: tick kept past the tick",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(50), .delta_tick_ns = US(20),
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "POWER far timer: CEDE, tick stopped",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 30,
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "intercept majority at C1 picks C1, short idles: no query",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .brief_idles = 4000,
		.hits = { [3] = 2000 }, .intercepts = { [1] = 6000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "intercept majority at C1 picks C1, few short idles: query",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .brief_idles = 3999,
		.hits = { [3] = 2000 }, .intercepts = { [1] = 6000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "short idles do not spare the query for C2",
		.row.table = &x86, .latency_req_ns = NO_LIMIT, .row.hz = 250,
		.sleep_ns = MS(100), .brief_idles = SATURATED,
		.hits = { [3] = 2000 }, .intercepts = { [2] = 6000 },
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "intercept minority keeps the deepest state",
		.row.table = &x86, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50,
		.hits = { [3] = 6000 }, .intercepts = { [1] = 2000 },
		.want_idx = 3, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "intercept median picks the middle state, tick kept",
		.row.table = &x86, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = MS(100),
		.hits = { [3] = 1000 }, .intercepts = { [1] = 1000, [2] = 4000 },
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "intercept median picks the middle state, tick kept",
		.row.table = &x86, .latency_req_ns = NO_LIMIT, .row.hz = 250,
		.sleep_ns = MS(100),
		.hits = { [3] = 1000 }, .intercepts = { [1] = 1000, [2] = 4000 },
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "intercept median picks the middle state, past the tick: stopped",
		.row.table = &x86, .latency_req_ns = NO_LIMIT, .row.hz = 1000,
		.sleep_ns = MS(100),
		.hits = { [3] = 1000 }, .intercepts = { [1] = 1000, [2] = 4000 },
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "polling state 0 and short candidate: no query",
		.row.table = &x86, .disabled = 0xc, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "latency limit caps the choice at C2",
		.row.table = &x86, .latency_req_ns = US(200),
		.sleep_ns = MS(100), .delta_tick_pct = 50,
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_LATENCY,
	}, {
		.row.desc = "latency limit 0 with polling state 0: poll, no query",
		.row.table = &x86, .latency_req_ns = 0,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "latency limit 0, nothing fits: state 0, tick kept",
		.row.table = &arm3, .latency_req_ns = 0,
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "POLL disabled, limit below C1's latency: C1, never POLL",
		.row.table = &x86, .disabled = 0x1, .latency_req_ns = 0,
		.sleep_ns = MS(100),
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "POLL disabled, limit admits C1 only: C1, intercepts or not",
		.row.table = &x86, .disabled = 0x1, .latency_req_ns = US(1),
		.sleep_ns = MS(100),
		.hits = { [3] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "tick stopped, CEDE disabled: snooze, and stop_tick stays clear",
		.row.table = &power, .disabled = 0x2, .latency_req_ns = NO_LIMIT,
		.tick_stopped = true, .sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "latency limit leaves WFI only: no query, tick kept",
		.row.table = &arm2, .latency_req_ns = US(100),
		.sleep_ns = MS(100),
		.want_idx = 0, .want_stop_tick = false, .want_asked = false,
		.want_reason = TEO_REASON_SINGLE,
	}, {
		.row.desc = "tick running: intercepts in bin 0 pick WFI, tick kept",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "tick woke after the intercepts' bin: deepest, tick stopped",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .outlived_ns = US(900),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "tick woke within the intercepts' bin: WFI again",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .outlived_ns = US(899),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "polling limit woke after the intercepts' bin: poll again",
		.row.table = &power, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .outlived_ns = US(120),
		.hits = { [1] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "tick stopped, no timer within two ticks: the deepest that fits",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "tick stopped: an early timer still picks WFI",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .tick_stopped = true,
		.sleep_ns = US(500),
		.want_idx = 0, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "state 0 disabled: intercepts pick the shallowest enabled",
		.row.table = &arm3, .disabled = 0x1, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 8000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "state 0 disabled, timer before every enabled state fits",
		.row.table = &arm3, .disabled = 0x1, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(300),
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "intercepts pick cpu-sleep, an earlier timer picks WFI",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT,
		.sleep_ns = US(300),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "intercepts keep the tick; state must fit before it",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = MS(50), .delta_tick_ns = US(500),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TICK,
	}, {
		.row.desc = "intercepts keep the tick; state fits before it",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = MS(50), .delta_tick_ns = MS(5),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "intercepts past the tick period: stop the tick, not demote",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .row.hz = 1000,
		.sleep_ns = MS(50), .delta_tick_ns = US(500),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "intercepts past the tick period, state fits: tick stopped",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .row.hz = 1000,
		.sleep_ns = MS(50), .delta_tick_ns = US(950),
		.hits = { [2] = 1000 }, .intercepts = { [1] = 8000 },
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "timer before the next tick: tick kept, state fits",
		.row.table = &arm3, .latency_req_ns = NO_LIMIT, .row.hz = 250,
		.sleep_ns = MS(3), .delta_tick_ns = US(3500),
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "timer after the next tick within a period: tick stopped",
		.row.table = &x86, .latency_req_ns = NO_LIMIT, .row.hz = 1000,
		.sleep_tick_pct = 150, .delta_tick_pct = 40,
		.want_idx = 2, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "timer after the next tick at HZ=250: C3, tick stopped",
		.row.table = &x86, .latency_req_ns = NO_LIMIT, .row.hz = 250,
		.sleep_tick_pct = 150, .delta_tick_pct = 40,
		.want_idx = 3, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "HZ=100 Arm: timer 9 ms away, tick in 3 ms: cpu-off",
		.row.table = &arm2, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_tick_pct = 90, .delta_tick_pct = 30,
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "equal target residencies: the deeper twin is taken",
		.row.table = &armeq, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = US(2600),
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "equal target residencies, deeper twin over the limit",
		.row.table = &armeq, .latency_req_ns = US(300), .row.hz = 100,
		.sleep_ns = US(2600),
		.want_idx = 1, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_LATENCY,
	}, {
		.row.desc = "equal target residencies, deeper twin disabled",
		.row.table = &armeq, .disabled = 0x4, .latency_req_ns = NO_LIMIT,
		.sleep_ns = MS(100), .delta_tick_pct = 50,
		.want_idx = 1, .want_stop_tick = true, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "equal target residencies: intercepts take the deeper twin",
		.row.table = &armeq4, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = MS(50),
		.hits = { [3] = 1000 }, .intercepts = { [2] = 8000 },
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	}, {
		.row.desc = "equal target residencies: an early timer takes the deeper twin",
		.row.table = &armeq4, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = MS(5),
		.want_idx = 2, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_TIMER,
	}, {
		.row.desc = "equal target residencies: early wakeups skip the empty bin",
		.row.table = &armeq, .latency_req_ns = NO_LIMIT, .row.hz = 100,
		.sleep_ns = MS(100),
		.hits = { [2] = 1000 }, .intercepts = { [0] = 4000 },
		.want_idx = 0, .want_stop_tick = false, .want_asked = true,
		.want_reason = TEO_REASON_INTERCEPTS,
	},
};

TEO_PARAMS(teo_select);

static s64 teo_pct_of_tick(unsigned int hz, unsigned int pct)
{
	return div_s64(teo_tick_ns(hz) * pct, 100);
}

static void teo_test_select(struct kunit *test)
{
	const struct teo_param *p = test->param_value;
	const struct teo_select_case *c =
		container_of(p->row, struct teo_select_case, row);
	s64 sleep_ns = c->sleep_tick_pct ?
		       teo_pct_of_tick(p->hz, c->sleep_tick_pct) : c->sleep_ns;
	s64 delta_ns = c->delta_tick_ns;
	struct teo_metrics m = {
		.artificial = c->outlived_ns > 0,
		.outlived_ns = c->outlived_ns,
		.brief_idles = c->brief_idles,
	};
	struct teo_decision d;
	struct teo_input in;
	bool asked;
	int i;

	if (c->delta_tick_pct)
		delta_ns = teo_pct_of_tick(p->hz, c->delta_tick_pct);
	else if (!delta_ns)
		delta_ns = teo_tick_ns(p->hz);

	teo_make_input(test, &in, c->row.table, c->disabled, c->latency_req_ns, p->hz,
		       c->tick_stopped);
	for (i = 0; i < CPUIDLE_STATE_MAX; i++) {
		m.bins[i].hits = c->hits[i];
		m.bins[i].intercepts = c->intercepts[i];
		m.events += c->hits[i] + c->intercepts[i];
	}

	asked = teo_decide(&in, &m, sleep_ns, delta_ns, &d);

	teo_check_invariants(test, &in, &d, c->row.desc);
	KUNIT_EXPECT_EQ_MSG(test, d.idx, c->want_idx, "state");
	KUNIT_EXPECT_EQ_MSG(test, d.stop_tick, c->want_stop_tick, "stop_tick");
	KUNIT_EXPECT_EQ_MSG(test, asked, c->want_asked, "sleep length asked");
	KUNIT_EXPECT_EQ_MSG(test, d.reason, c->want_reason, "reason");
}

/* ---- Accounting rows --------------------------------------------------- */

/**
 * struct teo_account_case - One idle period and where it must be counted.
 * @desc: What the row shows.
 * @table: State table.
 * @w: The idle period.
 * @want_bin: Bin the pulse must land in.
 * @want_hit: Whether it must count as a hit (else as an intercept).
 */
struct teo_account_case {
	const char *desc;
	const struct teo_table *table;
	struct teo_wakeup w;
	int want_bin;
	bool want_hit;
};

static const struct teo_account_case teo_account_cases[] = {
	{
		.desc = "x86: woke by the timer in C2's bin: hit in C2",
		.table = &x86, .want_bin = 2, .want_hit = true,
		.w = { .sleep_length_ns = MS(2), .residency_ns = MS(2) + US(120),
		       .exit_latency_ns = US(120) },
	}, {
		.desc = "x86: in the timer's bin but 1.5 ms before it: intercept in C3",
		.table = &x86, .want_bin = 3, .want_hit = false,
		.w = { .sleep_length_ns = MS(5), .residency_ns = MS(4),
		       .exit_latency_ns = US(1034) },
	}, {
		.desc = "x86: interrupt at 100 us, timer at 2 ms: intercept in C1",
		.table = &x86, .want_bin = 1, .want_hit = false,
		.w = { .sleep_length_ns = MS(2), .residency_ns = US(100),
		       .exit_latency_ns = US(120) },
	}, {
		.desc = "x86: interrupt at 1 ms, timer at 5 ms: intercept in C2",
		.table = &x86, .want_bin = 2, .want_hit = false,
		.w = { .sleep_length_ns = MS(5), .residency_ns = MS(1),
		       .exit_latency_ns = US(1034) },
	}, {
		.desc = "x86: half the exit latency is taken off: 370 -> C1",
		.table = &x86, .want_bin = 1, .want_hit = false,
		.w = { .sleep_length_ns = MS(5), .residency_ns = US(370),
		       .exit_latency_ns = US(120) },
	}, {
		.desc = "x86: residency below exit latency is halved: 0.6 us -> POLL",
		.table = &x86, .want_bin = 0, .want_hit = false,
		.w = { .sleep_length_ns = MS(5), .residency_ns = 1500,
		       .exit_latency_ns = US(1034) },
	}, {
		.desc = "x86: woke after the timer: hit in the timer's bin",
		.table = &x86, .want_bin = 2, .want_hit = true,
		.w = { .sleep_length_ns = US(500), .residency_ns = US(900),
		       .exit_latency_ns = US(120) },
	}, {
		.desc = "x86: tick wakeup counts as a hit at the sleep length",
		.table = &x86, .want_bin = 3, .want_hit = true,
		.w = { .sleep_length_ns = MS(50), .residency_ns = US(700),
		       .exit_latency_ns = US(120), .artificial = true },
	}, {
		.desc = "x86: polling time limit counts as a hit at the sleep length",
		.table = &x86, .want_bin = 2, .want_hit = true,
		.w = { .sleep_length_ns = US(800), .residency_ns = US(10),
		       .artificial = true },
	}, {
		.desc = "arm2: tick wakeup, sleep length not asked: deepest bin",
		.table = &arm2, .want_bin = 1, .want_hit = true,
		.w = { .sleep_length_ns = KTIME_MAX, .residency_ns = MS(3),
		       .exit_latency_ns = US(1), .artificial = true },
	}, {
		.desc = "arm2: HZ=100 tick wakeup before a 9 ms timer: hit in cpu-off",
		.table = &arm2, .want_bin = 1, .want_hit = true,
		.w = { .sleep_length_ns = MS(9), .residency_ns = MS(2),
		       .exit_latency_ns = US(1), .artificial = true },
	}, {
		.desc = "arm3: sleep length not asked, early wakeup: intercept",
		.table = &arm3, .want_bin = 0, .want_hit = false,
		.w = { .sleep_length_ns = KTIME_MAX, .residency_ns = US(20),
		       .exit_latency_ns = US(1) },
	}, {
		.desc = "arm3: sleep length not asked, long idle: intercept in the deepest",
		.table = &arm3, .want_bin = 2, .want_hit = false,
		.w = { .sleep_length_ns = KTIME_MAX, .residency_ns = MS(30),
		       .exit_latency_ns = US(1) },
	}, {
		.desc = "armeq: 3 ms lands in the deeper twin's bin",
		.table = &armeq, .want_bin = 2, .want_hit = true,
		.w = { .sleep_length_ns = MS(3), .residency_ns = MS(3) + US(1),
		       .exit_latency_ns = US(1) },
	}, {
		.desc = "armeq: interrupt at 2.6 ms, timer at 1 s: intercept, no deeper bin",
		.table = &armeq, .want_bin = 2, .want_hit = false,
		.w = { .sleep_length_ns = MS(1000), .residency_ns = US(2600),
		       .exit_latency_ns = US(1) },
	}, {
		.desc = "power: interrupt at 100 us, timer at 1 ms: intercept",
		.table = &power, .want_bin = 0, .want_hit = false,
		.w = { .sleep_length_ns = MS(1), .residency_ns = US(100),
		       .exit_latency_ns = 0 },
	},
};

static void teo_account_desc(const struct teo_account_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->desc);
}

KUNIT_ARRAY_PARAM(teo_account, teo_account_cases, teo_account_desc);

static void teo_test_account(struct kunit *test)
{
	const struct teo_account_case *c = test->param_value;
	struct teo_metrics m = {};
	struct teo_input in;
	struct teo_count got;
	int i;

	teo_make_input(test, &in, c->table, 0, NO_LIMIT, 1000, false);
	got = teo_account(&in, &m, &c->w);

	/* What teo_account() reports (the trace event) is what it did. */
	KUNIT_EXPECT_EQ_MSG(test, got.bin, c->want_bin, "reported bin");
	KUNIT_EXPECT_EQ_MSG(test, got.kind,
			    c->w.artificial ? TEO_KIND_ARTIFICIAL :
			    c->want_hit ? TEO_KIND_HIT : TEO_KIND_INTERCEPT,
			    "reported kind");
	if (c->w.artificial) {
		KUNIT_EXPECT_EQ_MSG(test, got.idle_ns, c->w.sleep_length_ns,
				    "an artificial wakeup is taken for the sleep length");
	} else {
		KUNIT_EXPECT_LE(test, got.idle_ns, c->w.sleep_length_ns);
		KUNIT_EXPECT_LE(test, got.idle_ns, c->w.residency_ns);
		KUNIT_EXPECT_GE(test, got.idle_ns, c->table->states[got.bin].target_residency_ns);
	}

	for (i = 0; i < CPUIDLE_STATE_MAX; i++) {
		unsigned int hits = i == c->want_bin && c->want_hit ? TEO_PULSE : 0;
		unsigned int icpt = i == c->want_bin && !c->want_hit ? TEO_PULSE : 0;

		KUNIT_EXPECT_EQ_MSG(test, m.bins[i].hits, hits, "hits of bin %d", i);
		KUNIT_EXPECT_EQ_MSG(test, m.bins[i].intercepts, icpt,
				    "intercepts of bin %d", i);
	}
}

/*
 * The idle time the tick and the polling limit cut short adds up until a real
 * wakeup, and saturates instead of wrapping.
 */
static void teo_test_outlived(struct kunit *test)
{
	struct teo_wakeup w = {
		.sleep_length_ns = MS(100), .residency_ns = MS(4),
		.exit_latency_ns = US(1), .artificial = true,
	};
	struct teo_metrics m = {};
	struct teo_input in;

	teo_make_input(test, &in, &arm3, 0, NO_LIMIT, 250, false);
	teo_account(&in, &m, &w);
	teo_account(&in, &m, &w);
	KUNIT_EXPECT_EQ(test, m.outlived_ns, MS(8));
	KUNIT_EXPECT_TRUE(test, m.artificial);

	w.artificial = false;
	teo_account(&in, &m, &w);
	KUNIT_EXPECT_EQ(test, m.outlived_ns, 0);
	KUNIT_EXPECT_FALSE(test, m.artificial);

	w.artificial = true;
	w.residency_ns = S64_MAX;
	teo_account(&in, &m, &w);
	teo_account(&in, &m, &w);
	teo_account(&in, &m, &w);
	KUNIT_EXPECT_EQ(test, m.outlived_ns, KTIME_MAX);
}

static void teo_test_decay(struct kunit *test)
{
	struct teo_metrics m = {};
	struct teo_wakeup w = {
		.sleep_length_ns = MS(100), .residency_ns = MS(100) + 1,
	};
	struct teo_input in;
	int i;

	teo_make_input(test, &in, &x86, 0, NO_LIMIT, 1000, false);
	m.bins[0].hits = 5;
	m.bins[1].intercepts = 7;
	m.bins[2].hits = SATURATED;
	m.bins[2].intercepts = 1;

	teo_account(&in, &m, &w);
	KUNIT_EXPECT_EQ(test, m.bins[2].hits, SATURATED - SATURATED / 8);
	KUNIT_EXPECT_EQ(test, m.bins[3].hits, TEO_PULSE);
	KUNIT_EXPECT_EQ(test, m.bins[2].intercepts, 0);

	/* Values below the decay step must still reach zero. */
	for (i = 0; i < 7; i++)
		teo_account(&in, &m, &w);
	KUNIT_EXPECT_EQ(test, m.bins[0].hits, 0);
	KUNIT_EXPECT_EQ(test, m.bins[1].intercepts, 0);

	/*
	 * A steady stream of hits settles within one decay step of the
	 * saturation value, and everything else decays to zero.
	 */
	for (i = 0; i < 200; i++)
		teo_account(&in, &m, &w);
	KUNIT_EXPECT_EQ(test, m.bins[2].hits, 0);
	KUNIT_EXPECT_LE(test, m.bins[3].hits, SATURATED);
	KUNIT_EXPECT_GT(test, m.bins[3].hits, SATURATED - (1 << TEO_DECAY_SHIFT));
}

static void teo_test_account_stays_in_table(struct kunit *test)
{
	struct teo_metrics m = {};
	struct teo_wakeup w = {
		.sleep_length_ns = KTIME_MAX, .residency_ns = S64_MAX,
		.exit_latency_ns = -1, .artificial = false,
	};
	struct teo_input in;
	int i;

	teo_make_input(test, &in, &arm2, 0, NO_LIMIT, 100, false);
	for (i = 0; i < CPUIDLE_STATE_MAX; i++)
		m.bins[i].hits = 8;
	teo_account(&in, &m, &w);

	/* Woken at "infinity" with no timer: not a timer's hit. */
	KUNIT_EXPECT_EQ(test, m.bins[1].hits, 7);
	KUNIT_EXPECT_EQ(test, m.bins[1].intercepts, TEO_PULSE);
	for (i = 2; i < CPUIDLE_STATE_MAX; i++)
		KUNIT_EXPECT_EQ_MSG(test, m.bins[i].hits, 8,
				    "bin %d beyond the table was touched", i);
}

/* ---- Histories --------------------------------------------------------- */

/**
 * struct teo_history_case - A simulated CPU replayed over many wakeups.
 * @row: Description, state table and HZ.
 * @timer_period_ns: Timers fire at every multiple of this.
 * @irq_after_ns: A non-timer wakeup comes this long into every idle
 *	period (0: none).
 * @busy_ns: Time the CPU runs between idle periods.
 * @start_intercepts_bin0: Start with bin 0's intercepts saturated, as a CPU
 *	locked in its shallowest state would have them.
 * @within: Every decision from this wakeup on must be the settled one.
 * @settled_idx: The state it settles in (-1: the deepest that fits the
 *	sleep length, with the tick stopped whenever the timer is after the
 *	next tick).
 * @settled_stop_tick: The tick decision it settles on (with @settled_idx
 *	not -1).
 * @settled_asked: Whether it asks for the sleep length once settled (with
 *	@settled_idx not -1; a state kept with the tick must then also fit
 *	before the next tick).
 */
struct teo_history_case {
	struct teo_row row;
	s64 timer_period_ns;
	s64 irq_after_ns;
	s64 busy_ns;
	bool start_intercepts_bin0;
	int within;
	int settled_idx;
	bool settled_stop_tick;
	bool settled_asked;
};

static const struct teo_history_case teo_history_cases[] = {
	{
		.row.desc = "tick-dominated idle CPU leaves WFI, 9 ms timers",
		.row.table = &arm2, .row.hz = 100, .timer_period_ns = MS(9),
		.busy_ns = US(20), .start_intercepts_bin0 = true,
		.within = 12, .settled_idx = -1,
	}, {
		.row.desc = "tick-dominated idle CPU leaves WFI, 9 ms timers",
		.row.table = &arm3, .row.hz = 100, .timer_period_ns = MS(9),
		.busy_ns = US(20), .start_intercepts_bin0 = true,
		.within = 12, .settled_idx = -1,
	}, {
		.row.desc = "tick-dominated idle CPU leaves WFI, far timer",
		.row.table = &arm2, .timer_period_ns = MS(1000),
		.busy_ns = US(20), .start_intercepts_bin0 = true,
		.within = 12, .settled_idx = -1,
	}, {
		.row.desc = "tick-dominated idle CPU leaves WFI, far timer",
		.row.table = &arm3, .timer_period_ns = MS(1000),
		.busy_ns = US(20), .start_intercepts_bin0 = true,
		.within = 12, .settled_idx = -1,
	}, {
		.row.desc = "tick-dominated idle CPU leaves polling, far timer",
		.row.table = &x86, .timer_period_ns = MS(1000),
		.busy_ns = US(20), .start_intercepts_bin0 = true,
		.within = 12, .settled_idx = -1,
	}, {
		.row.desc = "periodic 2 ms timer: C2 every time",
		.row.table = &x86, .row.hz = 1000, .timer_period_ns = MS(2),
		.busy_ns = US(100),
		.within = 3, .settled_idx = -1,
	}, {
		.row.desc = "interrupts every 40 us learned: C1, tick kept",
		.row.table = &x86, .timer_period_ns = MS(1000), .irq_after_ns = US(40),
		.busy_ns = US(5),
		.within = 12, .settled_idx = 1, .settled_stop_tick = false,
		.settled_asked = true,
	}, {
		.row.desc = "interrupts every 1.4 ms learned: cpu-sleep, tick kept",
		.row.table = &arm3, .timer_period_ns = MS(1000), .irq_after_ns = US(1400),
		.busy_ns = US(5), .row.hz = 100,
		.within = 12, .settled_idx = 1, .settled_stop_tick = false,
		.settled_asked = true,
	}, {
		.row.desc = "interrupts every 1.4 ms learned: cpu-sleep, tick kept",
		.row.table = &arm3, .timer_period_ns = MS(1000), .irq_after_ns = US(1400),
		.busy_ns = US(5), .row.hz = 250,
		.within = 12, .settled_idx = 1, .settled_stop_tick = false,
		.settled_asked = true,
	}, {
		.row.desc = "interrupts every 1.4 ms, past the tick: cpu-sleep, tick stopped",
		.row.table = &arm3, .timer_period_ns = MS(1000), .irq_after_ns = US(1400),
		.busy_ns = US(5), .row.hz = 1000,
		.within = 12, .settled_idx = 1, .settled_stop_tick = true,
		.settled_asked = true,
	}, {
		.row.desc = "periodic 3 ms timer never uses the empty twin bin",
		.row.table = &armeq, .row.hz = 100, .timer_period_ns = MS(3),
		.busy_ns = US(100),
		.within = 3, .settled_idx = -1,
	},
};

TEO_PARAMS(teo_history);

/* Time from @now to the next multiple of @period (a whole period if on one). */
static s64 teo_until_next(u64 now, s64 period)
{
	u64 rem;

	div64_u64_rem(now, period, &rem);
	return period - rem;
}

/* The deepest usable state whose target residency fits @duration_ns. */
static int teo_best_fit(const struct teo_input *in, s64 duration_ns)
{
	int i;

	for (i = in->state_count - 1; i > 0; i--) {
		if (in->states[i].target_residency_ns <= duration_ns)
			return i;
	}
	return 0;
}

#define TEO_HISTORY_WAKEUPS	200

static void teo_test_history(struct kunit *test)
{
	const struct teo_param *p = test->param_value;
	const struct teo_history_case *c =
		container_of(p->row, struct teo_history_case, row);
	s64 tick_ns = teo_tick_ns(p->hz);
	struct teo_metrics m = {};
	struct teo_input in;
	int k, last_miss = -1;
	char miss[96] = "";
	u64 now = 0;

	teo_make_input(test, &in, c->row.table, 0, NO_LIMIT, p->hz, false);
	if (c->start_intercepts_bin0)
		m.bins[0].intercepts = SATURATED;

	for (k = 0; k < TEO_HISTORY_WAKEUPS; k++) {
		s64 sleep_ns = teo_until_next(now, c->timer_period_ns);
		s64 delta_ns = teo_until_next(now, tick_ns);
		s64 wake_ns = sleep_ns;
		struct teo_decision d;
		struct teo_wakeup w;
		bool asked, tick_woke = false;
		int want_idx = c->settled_idx;
		bool want_stop = c->settled_stop_tick;
		bool want_asked = c->settled_asked;

		asked = teo_decide(&in, &m, sleep_ns, delta_ns, &d);
		teo_check_invariants(test, &in, &d, c->row.desc);

		if (want_idx < 0) {
			want_idx = teo_best_fit(&in, sleep_ns);
			want_stop = sleep_ns > delta_ns;
			want_asked = true;
		} else if (want_asked && !want_stop) {
			want_idx = min(want_idx, teo_best_fit(&in, delta_ns));
		}
		if (d.idx != want_idx || d.stop_tick != want_stop ||
		    asked != want_asked) {
			last_miss = k;
			snprintf(miss, sizeof(miss),
				 "state %d tick %s asked %d, want %d %s %d",
				 d.idx, d.stop_tick ? "stopped" : "kept", asked,
				 want_idx, want_stop ? "stopped" : "kept",
				 want_asked);
		}

		if (c->irq_after_ns)
			wake_ns = min(wake_ns, c->irq_after_ns);
		if (!d.stop_tick && delta_ns < wake_ns) {
			wake_ns = delta_ns;
			tick_woke = true;
		}

		/* The core's residency includes half the exit latency. */
		w = (struct teo_wakeup) {
			.sleep_length_ns = asked ? sleep_ns : KTIME_MAX,
			.residency_ns = wake_ns +
					in.states[d.idx].exit_latency_ns / 2,
			.exit_latency_ns = in.states[d.idx].exit_latency_ns,
			.artificial = tick_woke,
		};
		teo_account(&in, &m, &w);
		now += wake_ns + c->busy_ns;
	}

	/* Settled: every decision from wakeup last_miss + 1 on is as expected. */
	KUNIT_EXPECT_LE_MSG(test, last_miss + 1, c->within,
			    "wakeup %d of %d still missed: %s", last_miss,
			    TEO_HISTORY_WAKEUPS, miss);
}

/* ---- Utilization awareness (issue rules R1-R6) ------------------------- */

#define TEO_CAPACITY	1024
#define TEO_UTIL_STEP	US(100)

/**
 * struct teo_phase - Idle periods that repeat alike in a util scenario.
 * @periods: Number of idle periods.
 * @timer_ns: Time from the start of each idle period to the next timer.
 * @irq_ns: Time to a non-timer wakeup (0: none).
 * @busy_ns: Time the CPU runs after each idle period.
 * @noise_pct: Chance, in percent, that a random interrupt (seeded, at a
 *	uniformly random time before the timer) ends an idle period that
 *	@irq_ns does not end first; it wakes a task for 30 us.
 */
struct teo_phase {
	int periods;
	s64 timer_ns;
	s64 irq_ns;
	s64 busy_ns;
	unsigned int noise_pct;
};

/* The seeds each scenario with random interrupts is replayed with. */
#define TEO_SEEDS	3

/**
 * struct teo_run - What a simulated CPU did over a util scenario.
 * @wakeups: Wakeups, tick wakeups included.
 * @too_deep: Wakeups before the entered state's target residency while a
 *	shallower state was usable.
 * @too_shallow: Wakeups after the next deeper state's target residency
 *	(plus the exit latency).
 * @idle_ns: Idle time per state.
 * @misfit_ns: Idle time in states shallower than the deepest one that fits
 *	the idle period.
 * @deepest_entries: Entries into the deepest state.
 * @deepest_tick_cut: Those of them that the tick ended.
 * @util_polls: Decisions made on utilization that picked a polling state.
 * @utilized: Decisions made on utilization.
 */
struct teo_run {
	int wakeups;
	int too_deep;
	int too_shallow;
	u64 idle_ns[CPUIDLE_STATE_MAX];
	u64 misfit_ns;
	int deepest_entries;
	int deepest_tick_cut;
	int util_polls;
	int utilized;
};

/* PELT in 100 us steps: a half-life of about 35 ms either way. */
/* What the glue finds for @util on a CPU of TEO_CAPACITY. */
static bool teo_util_above(unsigned long util)
{
	return util > TEO_CAPACITY >> TEO_UTIL_THRESHOLD_SHIFT;
}

static unsigned long teo_pelt(unsigned long util, s64 ns, bool running)
{
	for (; ns > 0; ns -= TEO_UTIL_STEP) {
		util -= util * 2 / TEO_CAPACITY;
		if (running)
			util += (TEO_CAPACITY - util) * 2 / TEO_CAPACITY;
	}
	return util;
}

/* cpuidle_enter_state()'s too deep / too shallow verdict on one wakeup. */
static void teo_judge(const struct teo_input *in, int idx, s64 res_ns,
		      struct teo_run *r)
{
	const struct cpuidle_state *s = in->states;

	if (res_ns < s[idx].target_residency_ns) {
		r->too_deep += idx > 0;
	} else if (idx + 1 < in->state_count &&
		   res_ns - s[idx].exit_latency_ns >=
		   s[idx + 1].target_residency_ns) {
		r->too_shallow++;
	}
}

/*
 * Replay @phases, @warmup times and then @rounds times, counting only the
 * latter, on a CPU starting at @util (0: utilization awareness off
 * throughout), with random interrupts seeded with @seed, the way the core
 * does: a kept tick ends an idle
 * period at the next tick boundary and the CPU goes idle again with the rest
 * of the period ahead.
 */
static void teo_simulate(struct kunit *test, const struct teo_input *in0,
			 const struct teo_phase *phases, int warmup, int rounds,
			 unsigned long util, u64 seed, struct teo_run *r)
{
	struct teo_metrics m = {};
	struct teo_input in = *in0;
	const struct teo_phase *ph;
	struct rnd_state rnd;
	u64 now = 0;
	int round, k;

	prandom_seed_state(&rnd, seed);
	for (round = 0; round < warmup + rounds; round++) {
		if (round == warmup)
			memset(r, 0, sizeof(*r));
		for (ph = phases; ph->periods; ph++) {
			for (k = 0; k < ph->periods; k++) {
				s64 end = ph->irq_ns ? min(ph->irq_ns, ph->timer_ns) :
						       ph->timer_ns;
				s64 elapsed = 0, busy_ns = ph->busy_ns;

				if (prandom_u32_state(&rnd) % 100 < ph->noise_pct) {
					s64 irq = div_u64((u64)prandom_u32_state(&rnd) *
							  ph->timer_ns, U32_MAX);

					if (irq < end) {
						end = max(irq, US(1));
						busy_ns = US(30);
					}
				}

				in.tick_stopped = false;
				in.utilized = teo_util_above(util);
				while (elapsed < end) {
					s64 sleep_ns = ph->timer_ns - elapsed;
					s64 delta_ns = teo_until_next(now, in.tick_period_ns);
					s64 wake_ns = end - elapsed, res_ns;
					struct teo_decision d;
					struct teo_wakeup w;
					bool asked, tick_woke = false;

					if (in.tick_stopped)
						delta_ns = sleep_ns;
					asked = teo_decide(&in, &m, sleep_ns, delta_ns, &d);
					teo_check_invariants(test, &in, &d, "util scenario");
					r->utilized += d.utilized;
					r->util_polls += d.utilized &&
						(in.states[d.idx].flags & CPUIDLE_FLAG_POLLING);
					in.tick_stopped |= d.stop_tick;
					if (!in.tick_stopped && delta_ns < wake_ns) {
						wake_ns = delta_ns;
						tick_woke = true;
					}
					res_ns = wake_ns + in.states[d.idx].exit_latency_ns / 2;

					r->wakeups++;
					r->idle_ns[d.idx] += res_ns;
					if (d.idx < teo_best_fit(&in, end - elapsed))
						r->misfit_ns += res_ns;
					if (d.idx == in.state_count - 1) {
						r->deepest_entries++;
						r->deepest_tick_cut += tick_woke;
					}
					teo_judge(&in, d.idx, res_ns, r);

					w = (struct teo_wakeup) {
						.sleep_length_ns = asked ? sleep_ns : KTIME_MAX,
						.residency_ns = res_ns,
						.exit_latency_ns = in.states[d.idx].exit_latency_ns,
						.artificial = tick_woke,
					};
					teo_account(&in, &m, &w);
					elapsed += wake_ns;
					now += res_ns;
				}
				now += busy_ns;
				if (util) {
					util = teo_pelt(util, end, false);
					util = teo_pelt(util, busy_ns, true);
					util = max(util, 1UL);
				}
			}
		}
	}
}

static u64 teo_total_ns(const struct teo_run *r)
{
	u64 sum = 0;
	int i;

	for (i = 0; i < CPUIDLE_STATE_MAX; i++)
		sum += r->idle_ns[i];
	return max(sum, 1ULL);
}

/* Which of the rules a util scenario checks. */
enum teo_rule { TEO_R1, TEO_R2, TEO_R3, TEO_R4, TEO_R5, TEO_FRAMES };

/**
 * struct teo_util_case - A util scenario: phases replayed with utilization
 *	awareness on and off, and the rule the two runs must meet.
 * @row: Description, state table and HZ.
 * @rule: The rule checked (see teo_test_util()).
 * @util: Utilization at the start (it then follows the run/idle timeline).
 * @warmup: How many times @phases are replayed before counting (for the
 *	patterns to be learnt).
 * @rounds: How many times @phases are then replayed and counted.
 * @phases: The phases, ended by one with no periods.
 */
struct teo_util_case {
	struct teo_row row;
	enum teo_rule rule;
	unsigned long util;
	int warmup;
	int rounds;
	struct teo_phase phases[4];
};

static const struct teo_util_case teo_util_cases[] = {
	{
		.row.desc = "R1: 500 us every 19.457 ms keeps cpu-off, tick stopped",
		.row.table = &arm2, .rule = TEO_R1, .util = 32, .rounds = 1,
		.phases = { { 200, US(18957), 0, US(500) } },
	}, {
		.row.desc = "R1: the same with 5% random interrupts",
		.row.table = &arm2, .rule = TEO_R1, .util = 32, .rounds = 1,
		.phases = { { 300, US(18957), 0, US(500), 5 } },
	}, {
		.row.desc = "R1: the same with 20% random interrupts",
		.row.table = &arm2, .rule = TEO_R1, .util = 32, .rounds = 1,
		.phases = { { 300, US(18957), 0, US(500), 20 } },
	}, {
		.row.desc = "R2: burst, then 4 ms timers while utilization decays",
		.row.table = &arm3, .rule = TEO_R2, .util = 800, .rounds = 8,
		.phases = { { 60, MS(10), US(100), MS(2) },
			    { 80, US(3800), 0, US(200) } },
	}, {
		.row.desc = "R2: burst, then 8 ms timers while utilization decays",
		.row.table = &arm2, .rule = TEO_R2, .util = 800, .rounds = 8,
		.phases = { { 60, MS(10), US(100), MS(2) },
			    { 40, US(7800), 0, US(200) } },
	}, {
		.row.desc = "R3: 73 Hz thread never polls for utilization",
		.row.table = &x86, .rule = TEO_R3, .util = 40, .rounds = 1,
		.phases = { { 200, US(13300), 0, US(400) } },
	}, {
		.row.desc = "R3: ping-pong never polls for utilization",
		.row.table = &x86, .rule = TEO_R3, .util = 200, .rounds = 4,
		.phases = { { 30, MS(100), US(8), US(3) },
			    { 20, MS(100), US(25), US(4) },
			    { 1, MS(2), 0, US(800) } },
	}, {
		.row.desc = "R4: interrupt bursts after timer runs: half the too-deep",
		.row.table = &x86, .rule = TEO_R4, .util = 200, .warmup = 30,
		.rounds = 10,
		.phases = { { 20, MS(8), 0, US(300) },
			    { 30, MS(100), US(60), US(20) } },
	}, {
		.row.desc = "R4: interrupt bursts after timer runs: half the too-deep",
		.row.table = &arm3, .rule = TEO_R4, .util = 200, .warmup = 30,
		.rounds = 10,
		.phases = { { 20, MS(8), 0, US(300) },
			    { 30, MS(100), US(60), US(20) } },
	}, {
		.row.desc = "R5: 8 ms timer, 10% random interrupts",
		.row.table = &arm2, .row.hz = 250, .rule = TEO_R5, .util = 32,
		.rounds = 1, .phases = { { 400, MS(8) - US(240), 0, US(240), 10 } },
	}, {
		.row.desc = "R5: 8 ms timer, 40% random interrupts",
		.row.table = &arm2, .row.hz = 250, .rule = TEO_R5, .util = 32,
		.rounds = 1, .phases = { { 400, MS(8) - US(240), 0, US(240), 40 } },
	}, {
		.row.desc = "R5: 2 ms timer, 20% random interrupts",
		.row.table = &x86, .row.hz = 1000, .rule = TEO_R5, .util = 32,
		.rounds = 1, .phases = { { 800, US(1940), 0, US(60), 20 } },
	}, {
		.row.desc = "R5: 19.457 ms timer, 40% random interrupts",
		.row.table = &arm3, .rule = TEO_R5, .util = 32, .rounds = 1,
		.phases = { { 300, US(18873), 0, US(584), 40 } },
	}, {
		.row.desc = "R5: 8 ms timer, 20% random interrupts",
		.row.table = &x86, .rule = TEO_R5, .util = 32, .rounds = 1,
		.phases = { { 400, MS(8) - US(240), 0, US(240), 20 } },
	}, {
		.row.desc = "frames: three GPU waits, then vsync deep with the tick stopped",
		.row.table = &arm3, .rule = TEO_FRAMES, .util = 200, .rounds = 30,
		.phases = { { 3, MS(16), US(200), MS(1) },
			    { 1, US(12800), 0, 0 } },
	}, {
		.row.desc = "frames: three GPU waits, then vsync deep with the tick stopped",
		.row.table = &x86, .rule = TEO_FRAMES, .util = 200, .rounds = 30,
		.phases = { { 3, MS(16), US(200), MS(1) },
			    { 1, US(12800), 0, 0 } },
	},
};

TEO_PARAMS(teo_util);

/* Permille of all idle time that @r spent in state @idx. */
static u64 teo_share(const struct teo_run *r, int idx)
{
	return div64_u64(r->idle_ns[idx] * 1000, teo_total_ns(r));
}

/*
 * One scenario's rule on one pair of runs, with utilization awareness on and
 * off (see teo_test_util()).
 */
static void teo_check_util_rule(struct kunit *test,
				const struct teo_util_case *c, u64 seed,
				s64 tick_ns, const struct teo_run *on,
				const struct teo_run *off)
{
	int deepest = c->row.table->count - 1;

	switch (c->rule) {
	case TEO_R1:
		KUNIT_EXPECT_GE_MSG(test, on->idle_ns[deepest] * 100,
				    teo_total_ns(on) * 75,
				    "seed %llu: deepest state holds %llu of %llu ns",
				    seed, on->idle_ns[deepest], teo_total_ns(on));
		KUNIT_EXPECT_EQ_MSG(test, on->deepest_tick_cut, 0,
				    "seed %llu: the tick ended %d of %d deepest entries",
				    seed, on->deepest_tick_cut, on->deepest_entries);
		break;
	case TEO_R2:
		KUNIT_EXPECT_LE_MSG(test, on->misfit_ns,
				    off->misfit_ns + (u64)c->rounds * tick_ns,
				    "too-shallow idle time %llu ns on, %llu ns off, of %llu",
				    on->misfit_ns, off->misfit_ns, teo_total_ns(on));
		KUNIT_EXPECT_GT_MSG(test, on->utilized, 0,
				    "utilization awareness never acted");
		break;
	case TEO_R3:
		KUNIT_EXPECT_EQ(test, on->util_polls, 0);
		KUNIT_EXPECT_LE_MSG(test, on->idle_ns[0], off->idle_ns[0],
				    "polling time %llu ns on, %llu ns off",
				    on->idle_ns[0], off->idle_ns[0]);
		break;
	case TEO_R4:
		KUNIT_EXPECT_GT_MSG(test, off->too_deep, 0,
				    "the scenario has nothing to gain");
		KUNIT_EXPECT_LE_MSG(test, on->too_deep * 2, off->too_deep,
				    "too deep: %d of %d wakeups on, %d of %d off",
				    on->too_deep, on->wakeups, off->too_deep,
				    off->wakeups);
		KUNIT_EXPECT_LE_MSG(test, on->too_shallow * 100,
				    off->too_shallow * 100 + on->wakeups * 3,
				    "too shallow: %d of %d wakeups on, %d of %d off",
				    on->too_shallow, on->wakeups, off->too_shallow,
				    off->wakeups);
		break;
	case TEO_R5:
		KUNIT_EXPECT_GE_MSG(test, teo_share(on, deepest) + 10,
				    teo_share(off, deepest),
				    "seed %llu: deepest state holds %llu permille of idle time on, %llu off",
				    seed, teo_share(on, deepest),
				    teo_share(off, deepest));
		KUNIT_EXPECT_LE_MSG(test, on->misfit_ns * 100,
				    off->misfit_ns * 100 + teo_total_ns(on),
				    "seed %llu: too-shallow idle time %llu ns on, %llu ns off, of %llu",
				    seed, on->misfit_ns, off->misfit_ns,
				    teo_total_ns(on));
		break;
	case TEO_FRAMES:
		KUNIT_EXPECT_GT_MSG(test, off->too_shallow, 0,
				    "the scenario has nothing to gain");
		KUNIT_EXPECT_LE_MSG(test, on->too_shallow * 2, off->too_shallow,
				    "too shallow: %d of %d wakeups on, %d of %d off",
				    on->too_shallow, on->wakeups, off->too_shallow,
				    off->wakeups);
		KUNIT_EXPECT_LE_MSG(test, on->too_deep, off->too_deep,
				    "too deep: %d of %d wakeups on, %d of %d off",
				    on->too_deep, on->wakeups, off->too_deep,
				    off->wakeups);
		break;
	}
}

/*
 * Each scenario runs with utilization awareness on and off; one with random
 * interrupts runs so with each of TEO_SEEDS seeds, and each pair of runs
 * must meet the rule.  R1: the deepest state holds at least 75% of idle time
 * and the tick never cuts it short (it is stopped, or not due before the
 * wakeup).  R2: idle time in states shallower than the best fit for the
 * idle period grows by one tick period per burst at most, the cost bound
 * of the one wrong "early" a burst's end may cost (and utilization
 * awareness did act).  R3: no decision made on utilization picks a polling
 * state, and polling time does not grow.  R4 (counted once a warm-up has
 * taught the patterns the rhythm): at most half the too-deep wakeups and at
 * most 3% of wakeups more too-shallow ones.  R5 (random
 * interrupts on a utilized CPU): the deepest state's share of idle time at
 * most 1 point lower, and idle time in states shallower than the best fit
 * at most 1% of all idle time higher.  Frames: the wakeup after three early
 * ones is always a timer, which the metrics (three intercepts in four)
 * cannot tell but the pattern can: at most half the too-shallow wakeups, no
 * more too-deep ones.
 */
static void teo_test_util(struct kunit *test)
{
	const struct teo_param *p = test->param_value;
	const struct teo_util_case *c =
		container_of(p->row, struct teo_util_case, row);
	const struct teo_phase *ph;
	struct teo_run *on, *off;
	struct teo_input in;
	u64 seed, seeds = 1;

	on = kunit_kzalloc(test, sizeof(*on), GFP_KERNEL);
	off = kunit_kzalloc(test, sizeof(*off), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, on);
	KUNIT_ASSERT_NOT_NULL(test, off);

	for (ph = c->phases; ph->periods; ph++) {
		if (ph->noise_pct)
			seeds = TEO_SEEDS;
	}
	teo_make_input(test, &in, c->row.table, 0, NO_LIMIT, p->hz, false);
	for (seed = 1; seed <= seeds; seed++) {
		teo_simulate(test, &in, c->phases, c->warmup, c->rounds, c->util,
			     seed, on);
		teo_simulate(test, &in, c->phases, c->warmup, c->rounds, 0,
			     seed, off);
		teo_check_util_rule(test, c, seed, in.tick_period_ns, on, off);
	}
}

/**
 * struct teo_guess_case - A decision on a utilized (or idle) CPU whose
 *	wakeup pattern is set up by hand.
 * @row: Description, state table and HZ.
 * @util: Utilization (capacity 1024; the threshold is 16).
 * @artificial: The last wakeup came from the tick.
 * @tick_stopped: The tick is stopped already.
 * @early: Early wakeups that followed the current run.
 * @seen: Wakeups that followed the current run.
 * @early_us: Mean duration of the early wakeups, in us.
 * @intercepts: The metrics say early wakeups (in bin 0) dominate.
 * @want_idx: Expected state.
 * @want_utilized: Utilization awareness must have changed the choice.
 *
 * On the Arm 3-state table the candidate's target residency is 2 ms, so
 * with early wakeups of 100 us a right "early" saves b = 1.9 ms of the
 * candidate's break-even time, and a wrong one costs at most a = one tick
 * period in WFI (the tick is kept).  The pattern says "early" when the sum
 * k * b - (n - k) * a over its n wakeups, k of them early, is positive by
 * more than two standard errors, sqrt(4 * n * a * b), and "timer" when it
 * is as far below zero.
 */
struct teo_guess_case {
	struct teo_row row;
	unsigned long util;
	bool artificial;
	bool tick_stopped;
	u8 early;
	u8 seen;
	unsigned int early_us;
	bool intercepts;
	int want_idx;
	bool want_utilized;
};

static const struct teo_guess_case teo_guess_cases[] = {
	{
		.row.desc = "30 in 32 early, 4 ms tick: WFI",
		.row.table = &arm3, .row.hz = 250, .util = 200,
		.early = 30, .seen = 32, .early_us = 100, .want_idx = 0,
		.want_utilized = true,
	}, {
		.row.desc = "14 in 16 early, 4 ms tick: not yet clear enough",
		.row.table = &arm3, .row.hz = 250, .util = 200,
		.early = 14, .seen = 16, .early_us = 100, .want_idx = 2,
	}, {
		.row.desc = "24 in 32 early, 1 ms tick: WFI",
		.row.table = &arm3, .row.hz = 1000, .util = 200,
		.early = 24, .seen = 32, .early_us = 100, .want_idx = 0,
		.want_utilized = true,
	}, {
		.row.desc = "24 in 32 early is too few with a 10 ms tick",
		.row.table = &arm3, .row.hz = 100, .util = 200,
		.early = 24, .seen = 32, .early_us = 100, .want_idx = 2,
	}, {
		.row.desc = "early wakeups near the candidate's residency gain nothing",
		.row.table = &arm3, .row.hz = 1000, .util = 200,
		.early = 32, .seen = 32, .early_us = 1990, .want_idx = 2,
	}, {
		.row.desc = "not utilized: the pattern is not used",
		.row.table = &arm3, .util = 16,
		.early = 32, .seen = 32, .early_us = 100, .want_idx = 2,
	}, {
		.row.desc = "after a tick wakeup: the pattern is not used",
		.row.table = &arm3, .util = 200, .artificial = true,
		.early = 32, .seen = 32, .early_us = 100, .want_idx = 2,
	}, {
		.row.desc = "tick stopped: a timer 100 ms away, so never early",
		.row.table = &arm3, .util = 200, .tick_stopped = true,
		.early = 32, .seen = 32, .early_us = 100, .want_idx = 2,
	}, {
		.row.desc = "a pattern never seen says nothing",
		.row.table = &arm3, .util = 200,
		.early = 0, .seen = 0, .early_us = 100, .want_idx = 2,
	}, {
		.row.desc = "never early after such runs: the intercepts are overruled",
		.row.table = &arm3, .row.hz = 250, .util = 200, .intercepts = true,
		.early = 0, .seen = 32, .early_us = 100, .want_idx = 2,
		.want_utilized = true,
	}, {
		.row.desc = "20 in 32 early, 4 ms tick: unclear, the intercepts stand",
		.row.table = &arm3, .row.hz = 250, .util = 200, .intercepts = true,
		.early = 20, .seen = 32, .early_us = 100, .want_idx = 0,
	}, {
		.row.desc = "not utilized: the intercepts stand",
		.row.table = &arm3, .util = 16, .intercepts = true,
		.early = 0, .seen = 32, .early_us = 100, .want_idx = 0,
	},
};

TEO_PARAMS(teo_guess);

/*
 * Utilization awareness reads the pattern of the current run: early wakeups
 * that clearly save energy make the choice shallower, clearly too few keep
 * the candidate although the metrics say otherwise.  The sleep length
 * (100 ms) plays no part.  The same decision without utilization must say
 * whether utilization would change it (the glue asks for it only then).
 */
static void teo_test_guess(struct kunit *test)
{
	const struct teo_param *p = test->param_value;
	const struct teo_guess_case *c =
		container_of(p->row, struct teo_guess_case, row);
	struct teo_metrics m = {
		.artificial = c->artificial,
		.context = TEO_CONTEXT(true, 6),
		.early_bin = 0,
		.early_ns = US(c->early_us),
	};
	struct teo_decision d, off;
	struct teo_input in;

	teo_make_input(test, &in, c->row.table, 0, NO_LIMIT, p->hz, c->tick_stopped);
	m.patterns[TEO_CONTEXT(true, 6)] = (struct teo_pattern) {
		.early = c->early, .seen = c->seen,
	};
	m.bins[2].hits = TEO_PULSE;
	if (c->intercepts)
		m.bins[0].intercepts = SATURATED;
	m.events = m.bins[2].hits + m.bins[0].intercepts;

	in.utilized = teo_util_above(c->util);
	teo_decide(&in, &m, MS(100), teo_tick_ns(p->hz), &d);
	teo_check_invariants(test, &in, &d, c->row.desc);
	KUNIT_EXPECT_EQ(test, d.idx, c->want_idx);
	KUNIT_EXPECT_EQ(test, d.utilized, c->want_utilized);
	/* No later step moves these states: the reason is utilization. */
	KUNIT_EXPECT_EQ_MSG(test, d.reason == TEO_REASON_UTIL, c->want_utilized,
			    "reason %d", d.reason);

	in.utilized = true;
	teo_decide(&in, &m, MS(100), teo_tick_ns(p->hz), &d);
	in.utilized = false;
	teo_decide(&in, &m, MS(100), teo_tick_ns(p->hz), &off);
	KUNIT_EXPECT_EQ_MSG(test, off.util_matters, d.utilized,
			    "utilization would %schange the decision",
			    d.utilized ? "" : "not ");
	KUNIT_EXPECT_FALSE(test, off.utilized);
}

/*
 * R6: with the tick stopped, a wrong guess would leave the CPU in a
 * shallow state until the next timer, which is far (HZ=1000, 100 ms): no
 * evidence pays for that, so utilization never makes the choice shallower
 * then, and a choice it does make shallower keeps the tick (the cost bound
 * of the rule: one tick period).  Seeded random patterns, mostly early.
 */
static void teo_test_util_cost_bound(struct kunit *test)
{
	struct teo_metrics m = {};
	struct teo_decision d, off;
	struct teo_input in;
	struct rnd_state rnd;
	int i, shallower = 0;

	prandom_seed_state(&rnd, 12);
	for (i = 0; i < 200; i++) {
		bool stopped = i & 1;
		u8 seen = 1 + prandom_u32_state(&rnd) % (TEO_PATTERN_WINDOW - 1);

		teo_make_input(test, &in, &x86, 0, NO_LIMIT, 1000, stopped);
		memset(&m, 0, sizeof(m));
		m.context = TEO_CONTEXT(true, 1 + prandom_u32_state(&rnd) %
						   (TEO_RUN_MAX - 1));
		m.early_bin = 1;
		m.early_ns = US(5 + prandom_u32_state(&rnd) % 300);
		m.patterns[m.context] = (struct teo_pattern) {
			.seen = seen,
			.early = seen - prandom_u32_state(&rnd) % (seen / 8 + 1),
		};
		m.bins[3].hits = SATURATED;
		m.events = SATURATED;

		in.utilized = false;
		teo_decide(&in, &m, MS(100), stopped ? MS(100) : US(700), &off);
		in.utilized = true;
		teo_decide(&in, &m, MS(100), stopped ? MS(100) : US(700), &d);
		teo_check_invariants(test, &in, &d, "cost bound");
		if (stopped) {
			KUNIT_EXPECT_GE_MSG(test, d.idx, off.idx,
					    "case %d: state %d with the tick stopped, %d without utilization",
					    i, d.idx, off.idx);
			KUNIT_EXPECT_FALSE(test, off.util_matters);
		} else if (d.idx < off.idx) {
			shallower++;
			KUNIT_EXPECT_FALSE_MSG(test, d.stop_tick,
					       "case %d: state %d for utilization with the tick stopped",
					       i, d.idx);
		}
	}
	KUNIT_EXPECT_GT_MSG(test, shallower, 0,
			    "utilization never acted with the tick running");
}

/*
 * Each real wakeup is counted in the pattern of the run before it, then
 * extends that run or starts a new one; the tick leaves the patterns alone
 * and a pattern's counts halve once it has been seen often enough.
 */
static void teo_test_patterns(struct kunit *test)
{
	struct teo_wakeup timer = {
		.sleep_length_ns = MS(3), .residency_ns = MS(3) + US(500),
		.exit_latency_ns = US(500),
	};
	struct teo_wakeup early = {
		.sleep_length_ns = MS(3), .residency_ns = US(80),
		.exit_latency_ns = US(1),
	};
	struct teo_wakeup tick = {
		.sleep_length_ns = MS(30), .residency_ns = MS(4),
		.exit_latency_ns = US(1), .artificial = true,
	};
	struct teo_metrics m = {};
	struct teo_input in;
	int i;

	teo_make_input(test, &in, &arm3, 0, NO_LIMIT, 250, false);
	teo_account(&in, &m, &timer);
	teo_account(&in, &m, &timer);
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(false, 2));
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(false, 1)].seen, 1);

	teo_account(&in, &m, &tick);
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(false, 2));
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(false, 2)].seen, 0);

	teo_account(&in, &m, &early);
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(true, 1));
	KUNIT_EXPECT_EQ(test, m.early_bin, 0);
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(false, 2)].early, 1);
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(false, 2)].seen, 1);
	KUNIT_EXPECT_GT(test, m.early_ns, 0);
	KUNIT_EXPECT_LT(test, m.early_ns, US(80));

	for (i = 0; i < 2 * TEO_RUN_MAX; i++)
		teo_account(&in, &m, &early);
	/* The mean early duration has caught up with 80 us less its share. */
	KUNIT_EXPECT_GT(test, m.early_ns, US(70));
	KUNIT_EXPECT_LE(test, m.early_ns, US(80));
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(true, TEO_RUN_MAX - 1));
	KUNIT_EXPECT_EQ(test, m.patterns[m.context].seen, TEO_RUN_MAX + 2);

	for (i = 0; i < TEO_PATTERN_WINDOW; i++)
		teo_account(&in, &m, &early);
	KUNIT_EXPECT_LT(test, m.patterns[m.context].seen, TEO_PATTERN_WINDOW);
	KUNIT_EXPECT_EQ(test, m.patterns[m.context].early,
			m.patterns[m.context].seen);
}

/*
 * An interrupt is early whether or not the timer was near (here in the
 * shallowest bin, where nothing lies below the sleep length's bin); the timer
 * is not, and neither is an interrupt in the deepest bin.
 */
static void teo_test_patterns_near_timer(struct kunit *test)
{
	struct teo_wakeup irq = {
		.sleep_length_ns = US(500), .residency_ns = US(80),
		.exit_latency_ns = US(1),
	};
	struct teo_wakeup timer = {
		.sleep_length_ns = US(500), .residency_ns = US(501),
		.exit_latency_ns = US(2),
	};
	struct teo_wakeup deep_irq = {
		.sleep_length_ns = MS(30), .residency_ns = MS(10),
		.exit_latency_ns = US(500),
	};
	struct teo_metrics m = {};
	struct teo_input in;

	teo_make_input(test, &in, &arm3, 0, NO_LIMIT, 250, false);
	teo_account(&in, &m, &irq);
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(true, 1));
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(false, 0)].early, 1);
	KUNIT_EXPECT_EQ(test, m.early_bin, 0);

	teo_account(&in, &m, &timer);
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(false, 1));
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(true, 1)].early, 0);
	KUNIT_EXPECT_EQ(test, m.patterns[TEO_CONTEXT(true, 1)].seen, 1);

	teo_account(&in, &m, &deep_irq);
	KUNIT_EXPECT_EQ(test, m.bins[2].intercepts, TEO_PULSE);
	KUNIT_EXPECT_EQ(test, m.context, TEO_CONTEXT(false, 2));
	KUNIT_EXPECT_EQ(test, m.early_bin, 0);
}

/*
 * Seeded random histories on the Arm table with two equal target
 * residencies (2.58 ms): every idle period ends after 50-150 us, with the
 * sleep length near (2 ms, the shallowest bin) four times in five and far
 * (3 ms) otherwise.  The metrics pick WFI; had the interrupts before a near
 * timer counted as not early, the patterns would say "timer", and
 * utilization would keep the deepest state for the far ones, every one of
 * them too deep.
 */
static void teo_test_util_near_timers(struct kunit *test)
{
	struct teo_decision d, off;
	struct teo_metrics m;
	struct teo_input in;
	struct rnd_state rnd;
	u64 seed;
	int i;

	teo_make_input(test, &in, &armeq, 0, NO_LIMIT, 100, false);
	for (seed = 1; seed <= TEO_SEEDS; seed++) {
		memset(&m, 0, sizeof(m));
		prandom_seed_state(&rnd, seed);
		for (i = 0; i < 400; i++) {
			bool far = prandom_u32_state(&rnd) % 5 == 0;
			struct teo_wakeup w = {
				.sleep_length_ns = far ? MS(3) : MS(2),
				.residency_ns = US(50 + prandom_u32_state(&rnd) % 100),
				.exit_latency_ns = US(1),
			};

			teo_account(&in, &m, &w);
			in.utilized = false;
			teo_decide(&in, &m, MS(3), MS(3), &off);
			in.utilized = true;
			teo_decide(&in, &m, MS(3), MS(3), &d);
			teo_check_invariants(test, &in, &d, "near timers");
			KUNIT_EXPECT_LE_MSG(test, d.idx, off.idx,
					    "seed %llu, wakeup %d: state %d on, %d off",
					    seed, i, d.idx, off.idx);
		}
	}
}

/*
 * The last wakeup came in the polling state's bin on a utilized x86 CPU
 * whose metrics still say "timers": utilization may move it to C1, never to
 * the polling state; not utilized, or after a tick wakeup, nothing moves.
 */
static void teo_test_util_never_polls(struct kunit *test)
{
	static const struct {
		unsigned long util;
		bool artificial;
		int want_idx;
	} rows[] = { { 500, false, 1 }, { 0, false, 3 }, { 500, true, 3 } };
	struct teo_metrics m = {};
	struct teo_decision d;
	struct teo_input in;
	int i;

	teo_make_input(test, &in, &x86, 0, NO_LIMIT, 1000, false);
	m.bins[3].hits = SATURATED;
	m.bins[0].intercepts = TEO_PULSE;
	m.events = m.bins[3].hits + m.bins[0].intercepts;
	m.context = TEO_CONTEXT(true, 1);
	m.early_bin = 0;
	m.early_ns = US(5);
	m.patterns[m.context] = (struct teo_pattern) { .early = 32, .seen = 32 };
	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		in.utilized = teo_util_above(rows[i].util);
		m.artificial = rows[i].artificial;
		teo_decide(&in, &m, MS(50), US(500), &d);
		teo_check_invariants(test, &in, &d, "util never polls");
		KUNIT_EXPECT_EQ_MSG(test, d.idx, rows[i].want_idx,
				    "row %d: util %lu, artificial %d", i,
				    rows[i].util, rows[i].artificial);
		KUNIT_EXPECT_EQ(test, d.utilized, rows[i].want_idx == 1);
	}
}

/*
 * Glue tests: the cpuidle callbacks themselves, on a fake driver and device,
 * with what they ask the kernel answered by static stubs from struct
 * teo_glue (the test's priv).  The test stays on one CPU (the governor's
 * data is per CPU) and uses that CPU's data: the KUnit kernel has no idle
 * driver, so the governor is not running there.
 */

/**
 * struct teo_glue - A fake CPU for the glue tests.
 * @drv: Its driver (the x86 table).
 * @dev: Its device.
 * @tick_stopped: What teo_tick_stopped() answers.
 * @got_tick: The tick's flag: teo_got_tick() reads and clears it.
 * @sleep_length_ns: What teo_sleep_length() answers.
 * @delta_tick_ns: Time to the next tick it reports.
 * @utilized: What teo_cpu_utilized() answers.
 * @latency_req_ns: What teo_latency_req() answers.
 * @got_tick_reads: Calls of teo_got_tick().
 * @sleep_length_reads: Calls of teo_sleep_length().
 * @utilized_reads: Calls of teo_cpu_utilized().
 */
struct teo_glue {
	struct cpuidle_driver drv;
	struct cpuidle_device dev;
	bool tick_stopped;
	bool got_tick;
	s64 sleep_length_ns;
	s64 delta_tick_ns;
	bool utilized;
	s64 latency_req_ns;
	int got_tick_reads;
	int sleep_length_reads;
	int utilized_reads;
};

static struct teo_glue *teo_glue_of_test(void)
{
	return kunit_get_current_test()->priv;
}

static bool teo_stub_tick_stopped(void)
{
	return teo_glue_of_test()->tick_stopped;
}

static bool teo_stub_got_tick(void)
{
	struct teo_glue *g = teo_glue_of_test();
	bool got = g->got_tick;

	g->got_tick_reads++;
	g->got_tick = false;
	return got;
}

static ktime_t teo_stub_sleep_length(ktime_t *delta_tick)
{
	struct teo_glue *g = teo_glue_of_test();

	g->sleep_length_reads++;
	*delta_tick = min(g->delta_tick_ns, g->sleep_length_ns);
	return g->sleep_length_ns;
}

static bool teo_stub_cpu_utilized(int cpu)
{
	struct teo_glue *g = teo_glue_of_test();

	g->utilized_reads++;
	return g->utilized;
}

static s64 teo_stub_latency_req(int cpu)
{
	return teo_glue_of_test()->latency_req_ns;
}

/* Give the fake CPU's driver table @t (as a _CST change would). */
static void teo_glue_load(struct teo_glue *g, const struct teo_table *t)
{
	int i;

	memset(g->drv.states, 0, sizeof(g->drv.states));
	g->drv.state_count = t->count;
	for (i = 0; i < t->count; i++)
		g->drv.states[i] = t->states[i];
}

/*
 * The fake CPU of a glue test with table @t, on the CPU the test now stays
 * on, with no latency limit but the default QoS one (2000 s).
 */
static struct teo_glue *teo_glue_setup_table(struct kunit *test,
					     const struct teo_table *t)
{
	struct teo_glue *g = kunit_kzalloc(test, sizeof(*g), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, g);
	teo_glue_load(g, t);
	g->sleep_length_ns = MS(50);
	g->delta_tick_ns = TICK_NSEC;
	g->latency_req_ns = 2000LL * NSEC_PER_SEC;
	test->priv = g;
	kunit_activate_static_stub(test, teo_tick_stopped, teo_stub_tick_stopped);
	kunit_activate_static_stub(test, teo_got_tick, teo_stub_got_tick);
	kunit_activate_static_stub(test, teo_sleep_length, teo_stub_sleep_length);
	kunit_activate_static_stub(test, teo_cpu_utilized, teo_stub_cpu_utilized);
	kunit_activate_static_stub(test, teo_latency_req, teo_stub_latency_req);

	/*
	 * The governor's data is per CPU: the test's thread (which ends with
	 * the test case) stays on this one, and calls the callbacks with
	 * preemption off, as the idle loop does.  Not migrate_disable(): the
	 * case's cleanup runs in another thread, which could not undo it.
	 */
	g->dev.cpu = raw_smp_processor_id();
	KUNIT_ASSERT_EQ(test, set_cpus_allowed_ptr(current,
						   cpumask_of(g->dev.cpu)), 0);
	KUNIT_ASSERT_EQ(test, raw_smp_processor_id(), g->dev.cpu);
	g->dev.last_state_idx = -1;
	teo_enable(&g->drv, &g->dev);
	return g;
}

static struct teo_glue *teo_glue_setup(struct kunit *test)
{
	return teo_glue_setup_table(test, &x86);
}

/* A selection through the callback, checked against the invariants. */
static int teo_glue_select(struct kunit *test, struct teo_glue *g,
			   bool *stop_tick)
{
	struct teo_input in = {
		.states = g->drv.states,
		.state_count = g->drv.state_count,
		.usage = g->dev.states_usage,
		.latency_req_ns = g->latency_req_ns,
	};
	struct teo_decision d = { };
	bool stop = true;

	preempt_disable();
	d.idx = teo_select(&g->drv, &g->dev, &stop);
	preempt_enable();
	d.stop_tick = stop;
	teo_check_invariants(test, &in, &d, "glue");
	KUNIT_EXPECT_EQ(test, g->dev.last_state_idx, -1);
	if (stop_tick)
		*stop_tick = stop;
	return d.idx;
}

/* The CPU was idle in @idx for @residency_ns; then the core reflects. */
static void teo_glue_wake(struct teo_glue *g, int idx, s64 residency_ns,
			  bool tick, bool poll_limit)
{
	g->dev.last_residency_ns = residency_ns;
	g->dev.poll_time_limit = poll_limit;
	g->got_tick = tick;
	preempt_disable();
	teo_reflect(&g->dev, idx);
	preempt_enable();
}

/* @n wakeups after @residency_ns in C1 with the next timer far away. */
static void teo_glue_intercepts(struct kunit *test, struct teo_glue *g, int n,
				s64 residency_ns)
{
	while (n--) {
		teo_glue_select(test, g, NULL);
		teo_glue_wake(g, 1, residency_ns, false, false);
	}
}

/*
 * Utilization is asked for only when the wakeup pattern would change the
 * decision: never while timers end every idle period, and then only before
 * the wakeups that follow eight timer wakeups, which the pattern learns are
 * early (one in nine: the metrics never say so).
 */
static void teo_test_glue_util_asked(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);
	int i, k, idx, selections = 0, shallow = 0;

	g->utilized = true;
	for (i = 0; i < 40; i++) {
		idx = teo_glue_select(test, g, NULL);
		teo_glue_wake(g, idx, g->sleep_length_ns + US(500), false, false);
	}
	KUNIT_EXPECT_EQ_MSG(test, g->utilized_reads, 0,
			    "utilization asked for with timer wakeups only");

	for (i = 0; i < 30; i++) {
		for (k = 0; k < 8; k++) {
			idx = teo_glue_select(test, g, NULL);
			teo_glue_wake(g, idx, g->sleep_length_ns + US(500),
				      false, false);
			selections++;
		}
		idx = teo_glue_select(test, g, NULL);
		shallow += idx == 1;
		teo_glue_wake(g, idx, US(20), false, false);
		selections++;
	}
	KUNIT_EXPECT_GT_MSG(test, shallow, 0,
			    "the learnt early wakeup never got C1");
	KUNIT_EXPECT_GE(test, g->utilized_reads, shallow);
	KUNIT_EXPECT_LE_MSG(test, g->utilized_reads, 30,
			    "utilization asked for in %d of %d selections",
			    g->utilized_reads, selections);
}

/*
 * The tick's flag is read (and cleared) after every idle period, also one
 * that the polling limit ended: otherwise it stays set and books the next
 * real wakeup as a tick wakeup.
 */
static void teo_test_glue_got_tick(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);

	teo_glue_select(test, g, NULL);
	teo_glue_wake(g, 0, US(50), true, true);
	KUNIT_EXPECT_EQ(test, g->got_tick_reads, 1);
	KUNIT_EXPECT_FALSE_MSG(test, g->got_tick,
			       "tick flag left set after a polling-limit wakeup");
	KUNIT_EXPECT_EQ(test, g->dev.last_state_idx, 0);

	teo_glue_select(test, g, NULL);
	teo_glue_wake(g, 1, US(50), false, false);
	KUNIT_EXPECT_EQ(test, g->got_tick_reads, 2);
	KUNIT_EXPECT_EQ(test, g->dev.last_state_idx, 1);
}

/*
 * A wakeup by the polling time limit is consumed by the next selection and
 * counts as a long idle period: POLL left at its limit again and again does
 * not make the governor expect short idle periods, which the same
 * residencies without the limit do.
 */
static void teo_test_glue_poll_limit(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);
	int i, idx = 0;

	for (i = 0; i < 12; i++) {
		teo_glue_select(test, g, NULL);
		KUNIT_EXPECT_FALSE(test, g->dev.poll_time_limit);
		teo_glue_wake(g, 0, US(100), false, true);
	}
	idx = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_EQ_MSG(test, idx, 3, "after polling-limit wakeups");
	KUNIT_EXPECT_FALSE(test, g->dev.poll_time_limit);

	teo_enable(&g->drv, &g->dev);
	g->dev.last_state_idx = -1;
	for (i = 0; i < 12; i++) {
		teo_glue_select(test, g, NULL);
		teo_glue_wake(g, 0, US(100), false, false);
	}
	idx = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_LT_MSG(test, idx, 3, "after real 100 us wakeups");
}

/*
 * A state disabled between its selection and the next one: the update
 * still accounts for it, and it is not selected again.
 */
static void teo_test_glue_disabled_in_between(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);
	int idx;

	idx = teo_glue_select(test, g, NULL);
	KUNIT_ASSERT_EQ(test, idx, 3);
	teo_glue_wake(g, idx, MS(50), false, false);
	g->dev.states_usage[3].disable = 1;
	idx = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_EQ(test, idx, 2);
	teo_glue_wake(g, idx, MS(50), false, false);
	g->dev.states_usage[3].disable = 0;
	KUNIT_EXPECT_EQ(test, teo_glue_select(test, g, NULL), 3);
}

/* ->enable again (a governor switch) forgets the history. */
static void teo_test_glue_reenable(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);

	teo_glue_intercepts(test, g, 16, US(100));
	KUNIT_EXPECT_LT(test, teo_glue_select(test, g, NULL), 3);
	teo_enable(&g->drv, &g->dev);
	g->dev.last_state_idx = -1;
	KUNIT_EXPECT_EQ(test, teo_glue_select(test, g, NULL), 3);
}

/*
 * With the tick already stopped, a shallow state chosen for early wakeups
 * stands if a timer is due within two tick periods, which will end it;
 * with no timer for longer, the deepest state that fits the sleep length
 * is taken, as nothing else may wake the CPU.
 */
static void teo_test_glue_tick_stopped(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);
	int idx;

	teo_glue_intercepts(test, g, 16, US(100));
	g->tick_stopped = true;
	g->sleep_length_ns = TICK_NSEC + TICK_NSEC / 2;
	g->sleep_length_reads = 0;
	idx = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_LE_MSG(test, idx, 1, "timer in 1.5 ticks");
	KUNIT_EXPECT_EQ_MSG(test, g->sleep_length_reads, 1,
			    "the sleep length is needed with the tick stopped");
	teo_glue_wake(g, idx, US(100), false, false);

	g->sleep_length_ns = 20 * TICK_NSEC;
	idx = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_EQ_MSG(test, idx, 3, "timer in 20 ticks");
}

/*
 * Hostile state tables: what drivers we never saw may register.  The core
 * only bounds the number of states (CPUIDLE_STATE_MAX); anything else in
 * them is legal, so the governor must keep its invariants on each.
 */

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

static void teo_table_desc(const struct teo_table *const *t, char *desc)
{
	strscpy(desc, (*t)->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(teo_hostile, teo_hostile_tables, teo_table_desc);

/* A value for a glue input: often ordinary, sometimes extreme. */
static s64 teo_chaos_ns(struct rnd_state *rnd, s64 scale_ns)
{
	switch (prandom_u32_state(rnd) % 8) {
	case 0:
		return 0;
	case 1:
		return KTIME_MAX;
	case 2:
		return prandom_u32_state(rnd) % 1000;
	default:
		return prandom_u32_state(rnd) % (u32)scale_ns;
	}
}

/* One in @n. */
static bool teo_chance(struct rnd_state *rnd, u32 n)
{
	return !(prandom_u32_state(rnd) % n);
}

/*
 * @steps idle periods of a fake CPU driven at random through the glue:
 * the tick stopped or not across periods, sleep lengths and residencies
 * from 0 to KTIME_MAX, polling-limit and tick wakeups, states disabled and
 * re-enabled between selection and update, latency limits from 0 to none,
 * entries the driver rejects (the core then skips ->reflect) and ->enable
 * again now and then (a governor switch).  Every selection is checked
 * against the invariants (in teo_glue_select()).
 */
static void teo_glue_chaos(struct kunit *test, struct teo_glue *g,
			   u64 seed, int steps)
{
	static const s64 limits[] = { 0, 1, US(2), US(150), S64_MAX };
	struct rnd_state rnd;
	int i, idx;

	prandom_seed_state(&rnd, seed);
	for (i = 0; i < steps; i++) {
		const struct cpuidle_state *s;

		if (teo_chance(&rnd, 8)) {
			idx = prandom_u32_state(&rnd) % g->drv.state_count;
			g->dev.states_usage[idx].disable ^= 1;
		}
		if (teo_chance(&rnd, 16))
			g->latency_req_ns = limits[prandom_u32_state(&rnd) %
						   ARRAY_SIZE(limits)];
		if (teo_chance(&rnd, 4))
			g->tick_stopped = !g->tick_stopped;
		g->sleep_length_ns = teo_chaos_ns(&rnd, MS(100));
		g->delta_tick_ns = teo_chaos_ns(&rnd, TICK_NSEC);
		g->utilized = teo_chance(&rnd, 2);

		idx = teo_glue_select(test, g, NULL);
		s = &g->drv.states[idx];

		/* Changed while the CPU is idle, before the next update. */
		if (teo_chance(&rnd, 8))
			g->dev.states_usage[idx].disable ^= 1;
		if (teo_chance(&rnd, 200)) {
			teo_enable(&g->drv, &g->dev);
			continue;
		}
		/* The driver rejected the entry: no ->reflect. */
		if (teo_chance(&rnd, 16))
			continue;
		teo_glue_wake(g, idx, teo_chaos_ns(&rnd, MS(200)),
			      teo_chance(&rnd, 4),
			      (s->flags & CPUIDLE_FLAG_POLLING) &&
			      teo_chance(&rnd, 3));
	}
}

/* Each hostile table through the glue: 4000 random idle periods. */
static void teo_test_glue_hostile(struct kunit *test)
{
	const struct teo_table *t = *(const struct teo_table *const *)
				    test->param_value;
	struct teo_glue *g = teo_glue_setup_table(test, t);
	int i, idx;

	/* First, a plain selection with no history, all states enabled. */
	idx = teo_glue_select(test, g, NULL);
	teo_glue_wake(g, idx, US(100), false, false);
	teo_glue_chaos(test, g, t->count * 7919 + t->states[0].exit_latency_ns,
		       4000);

	/* Then everything enabled again, no limit: it still selects. */
	for (i = 0; i < t->count; i++)
		g->dev.states_usage[i].disable = 0;
	g->latency_req_ns = S64_MAX;
	g->tick_stopped = false;
	g->sleep_length_ns = MS(50);
	g->delta_tick_ns = TICK_NSEC;
	for (i = 0; i < 50; i++) {
		idx = teo_glue_select(test, g, NULL);
		teo_glue_wake(g, idx, MS(50), false, false);
	}
}

/*
 * The table changes under the governor (an ACPI _CST change): the core
 * disables the device, the driver rewrites its table and ->enable runs
 * again.  The history of the old table is gone, whatever it was, and a
 * table of fewer states never sees a state of the old one.
 */
static void teo_test_glue_table_change(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup_table(test, &hostile_max);
	int i, idx;

	/* Learn intercepts in a deep bin, and leave a deep state entered. */
	for (i = 0; i < 32; i++) {
		idx = teo_glue_select(test, g, NULL);
		teo_glue_wake(g, idx, MS(10), false, false);
	}
	idx = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_GE(test, idx, 7);
	KUNIT_EXPECT_LT(test, idx, 9);
	teo_glue_wake(g, 9, MS(30), false, false);

	teo_glue_load(g, &arm2);
	teo_enable(&g->drv, &g->dev);
	for (i = 0; i < 32; i++) {
		idx = teo_glue_select(test, g, NULL);
		KUNIT_EXPECT_EQ_MSG(test, idx, 1, "selection %d after the change",
				    i);
		teo_glue_wake(g, idx, MS(30), false, false);
	}

	/* And back to the long table: its deepest state, no old history. */
	teo_glue_load(g, &hostile_max);
	teo_enable(&g->drv, &g->dev);
	KUNIT_EXPECT_EQ(test, teo_glue_select(test, g, NULL), 9);
}

/*
 * A driver that rejects the entry (returns a negative index) gets no
 * ->reflect: the next selection has nothing to account and decides as if
 * the rejected one had not happened.
 */
static void teo_test_glue_rejected(struct kunit *test)
{
	struct teo_glue *g = teo_glue_setup(test);
	int i, idx, first;

	teo_glue_intercepts(test, g, 16, US(100));
	first = teo_glue_select(test, g, NULL);
	KUNIT_EXPECT_LT(test, first, 3);
	for (i = 0; i < 100; i++) {
		idx = teo_glue_select(test, g, NULL);
		KUNIT_EXPECT_EQ_MSG(test, idx, first, "after %d rejections",
				    i + 1);
	}
	KUNIT_EXPECT_EQ(test, g->got_tick_reads, 16);
}

static struct kunit_case teo_test_cases[] = {
	KUNIT_CASE_PARAM(teo_test_select, teo_select_gen_params),
	KUNIT_CASE_PARAM(teo_test_account, teo_account_gen_params),
	KUNIT_CASE(teo_test_decay),
	KUNIT_CASE(teo_test_outlived),
	KUNIT_CASE(teo_test_account_stays_in_table),
	KUNIT_CASE_PARAM(teo_test_history, teo_history_gen_params),
	KUNIT_CASE_PARAM(teo_test_util, teo_util_gen_params),
	KUNIT_CASE(teo_test_util_never_polls),
	KUNIT_CASE_PARAM(teo_test_guess, teo_guess_gen_params),
	KUNIT_CASE(teo_test_patterns),
	KUNIT_CASE(teo_test_patterns_near_timer),
	KUNIT_CASE(teo_test_util_near_timers),
	KUNIT_CASE(teo_test_util_cost_bound),
	KUNIT_CASE(teo_test_glue_got_tick),
	KUNIT_CASE(teo_test_glue_util_asked),
	KUNIT_CASE(teo_test_glue_poll_limit),
	KUNIT_CASE(teo_test_glue_disabled_in_between),
	KUNIT_CASE(teo_test_glue_reenable),
	KUNIT_CASE(teo_test_glue_tick_stopped),
	KUNIT_CASE_PARAM(teo_test_glue_hostile, teo_hostile_gen_params),
	KUNIT_CASE(teo_test_glue_table_change),
	KUNIT_CASE(teo_test_glue_rejected),
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
