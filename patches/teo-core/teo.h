/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Timer events oriented (TEO) CPU idle governor: the decision core.
 *
 * The types below are the explicit inputs and outputs of the governor's
 * decision logic.  The functions are visible outside teo.c only in kernels
 * with KUnit (VISIBLE_IF_KUNIT), so that tests call the very code the kernel
 * runs.
 */
#ifndef __CPUIDLE_GOV_TEO_H
#define __CPUIDLE_GOV_TEO_H

#include <linux/cpuidle.h>
#include <linux/ktime.h>
#include <linux/types.h>

/* Added to the metric an event is counted in. */
#define TEO_PULSE		1024
/* Every metric loses 1/2^TEO_DECAY_SHIFT of itself per wakeup. */
#define TEO_DECAY_SHIFT		3

/**
 * struct teo_bin - Decaying wakeup metrics of the bin owned by one state.
 * @intercepts: Wakeups that ended in this bin earlier than the next timer
 *	would have ended them.
 * @hits: Wakeups that the next timer predicted (or tick wakeups counted as
 *	such), by the bin the timer was in.
 *
 * Bin i holds idle durations from the target residency of state i up to
 * (not including) that of state i + 1; the last bin is unbounded.
 */
struct teo_bin {
	unsigned int intercepts;
	unsigned int hits;
};

/**
 * struct teo_metrics - Per-CPU wakeup history of the governor.
 * @bins: One bin per idle state of the driver.
 * @events: What all bins' metrics add up to after the last update.
 * @brief_idles: Decaying count of wakeups after less than
 *	%RESIDENCY_THRESHOLD_NS of idle (or within the exit latency).
 * @early_in_tick: Decaying count of intercepts within one tick period.
 * @tick_wakeups: Decaying count of wakeups by the scheduler tick.
 */
struct teo_metrics {
	struct teo_bin bins[CPUIDLE_STATE_MAX];
	unsigned int events;
	unsigned int brief_idles;
	unsigned int early_in_tick;
	unsigned int tick_wakeups;
};

/**
 * struct teo_input - Everything a selection depends on besides the metrics.
 * @states: The driver's state table, shallowest first.
 * @state_count: Number of entries in @states.
 * @usage: The CPU's usage record of each state; only .disable is read
 *	(state i is disabled if it is not zero).
 * @latency_req_ns: Exit latency limit for this CPU (global and per-CPU QoS).
 * @tick_period_ns: Length of the scheduler tick period (TICK_NSEC).
 * @tick_stopped: The tick is already stopped on this CPU.
 */
struct teo_input {
	const struct cpuidle_state *states;
	int state_count;
	const struct cpuidle_state_usage *usage;
	s64 latency_req_ns;
	s64 tick_period_ns;
	bool tick_stopped;
};

/**
 * struct teo_decision - Result of (each phase of) an idle state selection.
 * @idx: Index of the selected state.
 * @stop_tick: Whether the tick may be stopped.
 * @need_sleep_length: Set by the early phase when the sleep length may
 *	change the answer: the caller must query it and run the late phase.
 * @first_idx: The shallowest enabled state (for the late phase).
 * @constraint_idx: The deepest enabled state within the latency limit, or
 *	0 (for the late phase).
 */
struct teo_decision {
	int idx;
	bool stop_tick;
	bool need_sleep_length;
	int first_idx;
	int constraint_idx;
};

/**
 * struct teo_wakeup - What happened in the last idle period.
 * @sleep_length_ns: Time till the next timer at selection time, or
 *	KTIME_MAX if the governor did not ask for it.
 * @residency_ns: Idle time measured by the cpuidle core.
 * @exit_latency_ns: Exit latency of the state that was entered.
 * @polling_limit: A polling state's time limit ended the idle period.
 * @tick: The scheduler tick woke the CPU.
 */
struct teo_wakeup {
	s64 sleep_length_ns;
	s64 residency_ns;
	s64 exit_latency_ns;
	bool polling_limit;
	bool tick;
};

#if IS_ENABLED(CONFIG_KUNIT)
void teo_decide_early(const struct teo_input *in,
		      const struct teo_metrics *m, struct teo_decision *d);
void teo_decide_late(const struct teo_input *in, const struct teo_metrics *m,
		     s64 sleep_length_ns, s64 delta_tick_ns,
		     struct teo_decision *d);
void teo_account(const struct teo_input *in, struct teo_metrics *m,
		 const struct teo_wakeup *w);

/* The glue, and what it asks the kernel (KUnit static stubs). */
int teo_select(struct cpuidle_driver *drv, struct cpuidle_device *dev,
	       bool *stop_tick);
void teo_reflect(struct cpuidle_device *dev, int index);
int teo_enable(struct cpuidle_driver *drv, struct cpuidle_device *dev);
bool teo_tick_stopped(void);
bool teo_got_tick(void);
ktime_t teo_sleep_length(ktime_t *delta_tick);
#endif

#endif /* __CPUIDLE_GOV_TEO_H */
