// SPDX-License-Identifier: GPL-2.0
/*
 * Timer events oriented (TEO) CPU idle governor.
 *
 * The TEO design (timer-first prediction with "hits" and "intercepts" per
 * idle state bin) is Rafael J. Wysocki's.  This file restates it as a pure
 * decision core with explicit inputs and a thin layer of kernel glue.
 */

/**
 * DOC: teo-description
 *
 * Why timers first
 * ----------------
 *
 * Most idle periods of a CPU end with a timer, and the time until the next
 * timer (the *sleep length*) is known before the CPU goes idle.  It is the
 * best single predictor of the idle duration.  It is not free, though:
 * tick_nohz_get_sleep_length() walks the timer queues, so the governor asks
 * for it only when the answer can depend on it.  Other interrupts end some
 * idle periods early; the governor learns how often from recent wakeups.
 *
 * Data: one bin per idle state
 * ----------------------------
 *
 * The target residencies of the driver's states cut the time axis into
 * bins: bin i holds idle durations from the target residency of state i up
 * to that of state i + 1; the last bin has no upper end.  Each bin keeps
 * two metrics: *hits* (the idle period ended close to the sleep length and
 * in its bin: the timer predicted it) and *intercepts* (it ended in this bin
 * for another reason).  After every wakeup each metric loses an eighth of
 * its value (a metric smaller than eight drops to zero) and the event adds
 * 1024 to one of them.  Three more metrics decay the same way: wakeups by
 * the tick, intercepts within one tick period and *short idles* (less than
 * 15 us).
 *
 * The measured idle duration is the core's residency less half the exit
 * latency of the state entered (the typical share of it spent before the
 * CPU runs again); a wakeup is a hit if that duration is in the sleep
 * length's bin and within half the exit latency of the sleep length.
 * A polling state that reached its time limit counts as an endless idle
 * period.  A tick wakeup is a hit in the deepest bin if tick wakeups are
 * over two thirds of all events (otherwise a kept tick keeps the CPU in a
 * shallow state forever on systems with a long tick period), or a hit in
 * the sleep length's bin if intercepts within a tick period are under two
 * thirds of all events (the tick probably ended a wait for an intercept
 * that did not come).
 *
 * Selection
 * ---------
 *
 * 1. The candidate is the deepest enabled state.  If no state is enabled,
 *    state 0 is used with the tick kept.  If one state is enabled, it is
 *    used, and the tick is stopped unless it polls or its target residency
 *    is below the tick period.
 *
 * 2. If the intercepts in the bins below the candidate are over half of
 *    the events in the candidate's bin and above (hits below the candidate
 *    are left out: the sleep length finds those), the governor walks down
 *    from the candidate summing intercepts, and stops at the first enabled
 *    state at which they exceed half of the intercepts below the candidate
 *    and that is not deeper than the bin with the most intercepts.
 *
 * 3. The state is capped by the deepest state within the latency limit.
 *
 * 4. With the tick running, a state below 15 us (or state 0) needs no sleep
 *    length if short idles are at least half of all events or the latency
 *    limit is below 7.5 us: it is used and the tick is kept.
 *
 * 5. Otherwise the sleep length is asked for.  With the tick already
 *    stopped and no timer within two tick periods, a state whose target
 *    residency is below the tick period is replaced by the deepest enabled
 *    state within the latency limit that fits the sleep length, so that
 *    the CPU does not sit shallow with nothing to wake it.
 *
 * 6. State 0 keeps the tick.  Any other state deeper than the sleep length
 *    allows is replaced by the deepest enabled shallower state that fits
 *    it.  If intercepts within a tick period are two thirds of all events
 *    and the state's target residency is below the tick period, the idle
 *    period is expected to end within the tick period.
 *
 * 7. The tick is stopped if the tick is stopped already, or the state does
 *    not poll and the expected idle duration is at least one tick period.
 *    When the tick stays, a state deeper than the time left until the next
 *    tick is replaced by the deepest enabled shallower state that fits it.
 */

#include <kunit/static_stub.h>
#include <kunit/visibility.h>
#include <linux/cpuidle.h>
#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/tick.h>

#include "gov.h"
#include "teo.h"

/* Below this exit latency limit, step 4 needs no sleep length. */
#define TEO_LATENCY_THRESHOLD_NS	(RESIDENCY_THRESHOLD_NS / 2)

/**
 * struct teo_cpu - Per-CPU data of the governor.
 * @metrics: Wakeup history, binned by idle state.
 * @sleep_length_ns: Sleep length found at the last selection, or KTIME_MAX
 *	if it was not asked for.
 * @tick_wakeup: The last idle period was ended by the tick.
 */
struct teo_cpu {
	struct teo_metrics metrics;
	s64 sleep_length_ns;
	bool tick_wakeup;
};

static DEFINE_PER_CPU(struct teo_cpu, teo_cpus);

static s64 teo_residency(const struct teo_input *in, int i)
{
	return in->states[i].target_residency_ns;
}

static bool teo_enabled(const struct teo_input *in, int i)
{
	return !in->usage[i].disable;
}

/*
 * The deepest enabled state below @idx whose target residency fits in
 * @duration_ns or, if none does, the shallowest enabled state below @idx
 * (@idx itself if there is none).
 *
 * Like teo_tick_rule(), inlined: the selection calls both from more than
 * one place, and a call would cost it about as much as the work.
 */
static __always_inline int teo_shallower(const struct teo_input *in, int idx,
					 s64 duration_ns)
{
	int i;

	for (i = idx - 1; i >= 0; i--) {
		if (!teo_enabled(in, i))
			continue;
		idx = i;
		if (teo_residency(in, i) <= duration_ns)
			break;
	}
	return idx;
}

/* Step 7: the tick decision, and a state that fits before a kept tick. */
static __always_inline void teo_tick_rule(const struct teo_input *in,
					  s64 duration_ns, s64 delta_tick_ns,
					  struct teo_decision *d)
{
	int idx = d->idx;

	d->need_sleep_length = false;
	d->stop_tick = true;
	if (in->tick_stopped ||
	    (!(in->states[idx].flags & CPUIDLE_FLAG_POLLING) &&
	     duration_ns >= in->tick_period_ns))
		return;

	if (idx > d->first_idx && teo_residency(in, idx) > delta_tick_ns)
		d->idx = teo_shallower(in, idx, delta_tick_ns);
	d->stop_tick = false;
}

/*
 * The candidate (the deepest enabled state), the shallowest enabled state,
 * and the deepest enabled state other than state 0 whose exit latency is
 * within the limit (state 0 if there is none), into @d; -1 for the
 * candidate if no state is enabled.
 */
static int teo_scan(const struct teo_input *in, struct teo_decision *d)
{
	int i, cand = -1;

	d->first_idx = 0;
	d->constraint_idx = 0;
	for (i = 0; i < in->state_count; i++) {
		if (!teo_enabled(in, i))
			continue;
		if (cand < 0)
			d->first_idx = i;
		cand = i;
		if (i && in->states[i].exit_latency_ns <= in->latency_req_ns)
			d->constraint_idx = i;
	}
	return cand;
}

/*
 * The bin with the most intercepts among all but the last one, the deeper
 * of equals (-1 for a single-state table): @bin, the busiest of the bins
 * below @from, or one of those from @from on.
 */
static int teo_busiest(const struct teo_input *in, const struct teo_metrics *m,
		       int from, int bin)
{
	unsigned int most = bin >= 0 ? m->bins[bin].intercepts : 0;
	int i;

	for (i = from; i + 1 < in->state_count; i++) {
		if (m->bins[i].intercepts >= most) {
			most = m->bins[i].intercepts;
			bin = i;
		}
	}
	return bin;
}

/*
 * Step 2: walking down from below @cand, the first enabled state at which
 * the intercepts of the bins passed (the disabled states' included) are
 * over half of @early, all intercepts below @cand, and that is not deeper
 * than @busiest; the last enabled state passed if none is.
 */
static int teo_intercept_walk(const struct teo_input *in,
			      const struct teo_metrics *m, int cand, int first,
			      unsigned int early, int busiest)
{
	unsigned int passed = 0;
	int i, idx = cand;

	for (i = cand - 1; i >= first; i--) {
		passed += m->bins[i].intercepts;
		if (!teo_enabled(in, i))
			continue;
		idx = i;
		if (2 * passed > early && i <= busiest)
			break;
	}
	return idx;
}

/**
 * teo_decide_early - Select an idle state without the sleep length.
 * @in: State table, limits and tick state.
 * @m: Wakeup history of the CPU.
 * @d: Decision to fill in.
 *
 * Steps 1 to 4 of the selection in the DOC block.  On return @d->idx and
 * @d->stop_tick are final unless @d->need_sleep_length is set, in which case
 * the caller must query the sleep length and complete the decision with
 * teo_decide_late().
 */
VISIBLE_IF_KUNIT void teo_decide_early(const struct teo_input *in,
				       const struct teo_metrics *m,
				       struct teo_decision *d)
{
	unsigned int early = 0, rest = m->events, most = 0;
	int i, busiest = -1, cand = teo_scan(in, d);

	d->need_sleep_length = false;
	d->stop_tick = false;

	/* Step 1. */
	d->idx = max(cand, 0);
	if (cand <= d->first_idx) {
		if (cand >= 0)
			teo_tick_rule(in, teo_residency(in, cand),
				      in->tick_period_ns / 2, d);
		return;
	}

	/*
	 * Step 2: the intercepts below the candidate against everything but
	 * the hits below it (and the busiest bin below it, on the way).
	 */
	for (i = 0; i < cand; i++) {
		unsigned int intercepts = m->bins[i].intercepts;

		early += intercepts;
		rest -= m->bins[i].hits;
		if (intercepts >= most) {
			most = intercepts;
			busiest = i;
		}
	}
	if (2 * early > rest)
		d->idx = teo_intercept_walk(in, m, cand, d->first_idx, early,
					    teo_busiest(in, m, cand, busiest));

	/* Step 3. */
	d->idx = min(d->idx, d->constraint_idx);

	/* Step 4: a shallow state needs no sleep length if idles are short. */
	if (!in->tick_stopped &&
	    (!d->idx || teo_residency(in, d->idx) < RESIDENCY_THRESHOLD_NS) &&
	    (2 * m->brief_idles >= m->events ||
	     in->latency_req_ns < TEO_LATENCY_THRESHOLD_NS))
		return;

	d->need_sleep_length = true;
}
EXPORT_SYMBOL_IF_KUNIT(teo_decide_early);

/**
 * teo_decide_late - Complete a selection once the sleep length is known.
 * @in: State table, limits and tick state (as given to teo_decide_early()).
 * @m: Wakeup history of the CPU (as given to teo_decide_early()).
 * @sleep_length_ns: Time till the next timer event.
 * @delta_tick_ns: Time till the next tick if the tick is not stopped.
 * @d: Decision made by teo_decide_early(), updated in place.
 *
 * Steps 5 to 7 of the selection in the DOC block.
 */
VISIBLE_IF_KUNIT void teo_decide_late(const struct teo_input *in,
				      const struct teo_metrics *m,
				      s64 sleep_length_ns, s64 delta_tick_ns,
				      struct teo_decision *d)
{
	s64 duration_ns = sleep_length_ns;
	int i;

	d->need_sleep_length = false;
	d->stop_tick = true;

	/*
	 * Step 5: nothing would wake the CPU from a shallow state soon (no
	 * timer within SAFE_TIMER_RANGE_NS, two ticks of the input's period).
	 */
	if (in->tick_stopped && duration_ns > 2 * in->tick_period_ns &&
	    teo_residency(in, d->idx) < in->tick_period_ns) {
		for (i = d->constraint_idx; i > d->idx; i--) {
			if (teo_enabled(in, i) && teo_residency(in, i) <= duration_ns) {
				d->idx = i;
				break;
			}
		}
		return;
	}

	/* Step 6. */
	if (!d->idx) {
		d->stop_tick = false;
		return;
	}
	if (teo_residency(in, d->idx) > duration_ns)
		d->idx = teo_shallower(in, d->idx, duration_ns);
	if (teo_residency(in, d->idx) < in->tick_period_ns &&
	    3 * m->early_in_tick >= 2 * m->events)
		duration_ns = in->tick_period_ns / 2;

	teo_tick_rule(in, duration_ns, delta_tick_ns, d);
}
EXPORT_SYMBOL_IF_KUNIT(teo_decide_late);

static void teo_decay(unsigned int *metric)
{
	unsigned int delta = *metric >> TEO_DECAY_SHIFT;

	*metric = delta ? *metric - delta : 0;
}

/*
 * The idle duration the wakeup stands for: endless for a polling state cut
 * short by its limit; otherwise the residency less half the exit latency
 * (the typical share of it spent waking up), or half the residency if it
 * is shorter than the exit latency.
 */
static s64 teo_measured(const struct teo_wakeup *w)
{
	if (w->polling_limit)
		return S64_MAX;
	if (w->residency_ns < w->exit_latency_ns)
		return w->residency_ns / 2;
	return w->residency_ns - w->exit_latency_ns / 2;
}

/*
 * Where a tick wakeup counts as a hit: the deepest bin if tick wakeups are
 * over two thirds of all events, else the sleep length's bin @timer_bin if
 * intercepts within a tick period are under two thirds of @before (all
 * events before this one); -1 if it counts like any other wakeup.
 */
static int teo_tick_hit_bin(const struct teo_input *in,
			    const struct teo_metrics *m, unsigned int before,
			    int timer_bin)
{
	if (3 * m->tick_wakeups > 2 * m->events)
		return in->state_count - 1;
	if (3 * m->early_in_tick < 2 * before)
		return timer_bin;
	return -1;
}

/**
 * teo_account - Update the wakeup history after an idle period.
 * @in: State table (only the target residencies and the tick period are
 *	used).
 * @m: Wakeup history to update.
 * @w: What happened in the idle period.
 *
 * Decays every metric and counts the wakeup as the DOC block describes.
 */
VISIBLE_IF_KUNIT void teo_account(const struct teo_input *in,
				  struct teo_metrics *m,
				  const struct teo_wakeup *w)
{
	s64 measured_ns = teo_measured(w);
	s64 idle_ns = min(w->sleep_length_ns, measured_ns);
	int i, timer_bin = 0, idle_bin = 0, bin;
	unsigned int before = 0;

	/* A wakeup within the exit latency counts as short whatever it was. */
	teo_decay(&m->brief_idles);
	if (!w->polling_limit && (w->residency_ns < w->exit_latency_ns ||
				  measured_ns < RESIDENCY_THRESHOLD_NS))
		m->brief_idles += TEO_PULSE;

	/* One pass: decay, and find the sleep length's and the idle bin. */
	for (i = 0; i < in->state_count; i++) {
		teo_decay(&m->bins[i].hits);
		teo_decay(&m->bins[i].intercepts);
		if (teo_residency(in, i) <= w->sleep_length_ns)
			timer_bin = i;
		if (teo_residency(in, i) <= idle_ns)
			idle_bin = i;
		before += m->bins[i].hits + m->bins[i].intercepts;
	}
	m->events = before + TEO_PULSE;
	teo_decay(&m->early_in_tick);
	teo_decay(&m->tick_wakeups);

	if (w->tick) {
		m->tick_wakeups += TEO_PULSE;
		bin = teo_tick_hit_bin(in, m, before, timer_bin);
		if (bin >= 0) {
			m->bins[bin].hits += TEO_PULSE;
			return;
		}
	}

	/* A hit: in the sleep length's bin and close to the sleep length. */
	if (idle_bin == timer_bin &&
	    w->sleep_length_ns - measured_ns < w->exit_latency_ns / 2) {
		m->bins[timer_bin].hits += TEO_PULSE;
		return;
	}
	m->bins[idle_bin].intercepts += TEO_PULSE;
	if (measured_ns <= in->tick_period_ns)
		m->early_in_tick += TEO_PULSE;
}
EXPORT_SYMBOL_IF_KUNIT(teo_account);

/*
 * What the glue asks the kernel, each behind a function of its own that the
 * KUnit suite can redirect to a stub (KUNIT_STATIC_STUB_REDIRECT() is empty
 * without CONFIG_KUNIT).
 */
/**
 * teo_tick_stopped - Whether the tick is stopped on this CPU.
 *
 * Return: tick_nohz_tick_stopped(), or what a KUnit stub says.
 */
VISIBLE_IF_KUNIT bool teo_tick_stopped(void)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_tick_stopped);
	return tick_nohz_tick_stopped();
}
EXPORT_SYMBOL_IF_KUNIT(teo_tick_stopped);

/**
 * teo_got_tick - Whether the tick ended the last idle period; clears it.
 *
 * Return: tick_nohz_idle_got_tick(), or what a KUnit stub says.
 */
VISIBLE_IF_KUNIT bool teo_got_tick(void)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_got_tick);
	return tick_nohz_idle_got_tick();
}
EXPORT_SYMBOL_IF_KUNIT(teo_got_tick);

/**
 * teo_sleep_length - Time till the next timer event on this CPU.
 * @delta_tick: Set to the time till the next tick.
 *
 * Return: tick_nohz_get_sleep_length(), or what a KUnit stub says.
 */
VISIBLE_IF_KUNIT ktime_t teo_sleep_length(ktime_t *delta_tick)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_sleep_length, delta_tick);
	return tick_nohz_get_sleep_length(delta_tick);
}
EXPORT_SYMBOL_IF_KUNIT(teo_sleep_length);

static void teo_gather(struct cpuidle_driver *drv, struct cpuidle_device *dev,
		       struct teo_input *in)
{
	in->states = drv->states;
	in->state_count = drv->state_count;
	in->usage = dev->states_usage;
	in->latency_req_ns = cpuidle_governor_latency_req(dev->cpu);
	in->tick_period_ns = TICK_NSEC;
	in->tick_stopped = teo_tick_stopped();
}

/**
 * teo_select - Select the idle state to enter (cpuidle ->select callback).
 * @drv: cpuidle driver of the CPU.
 * @dev: cpuidle device of the CPU.
 * @stop_tick: Set to whether the tick may be stopped.
 *
 * Accounts for the previous idle period, then runs the decision core,
 * querying the sleep length only if the core asks for it.
 *
 * Return: index of the idle state to enter.
 */
VISIBLE_IF_KUNIT int teo_select(struct cpuidle_driver *drv,
				struct cpuidle_device *dev, bool *stop_tick)
{
	struct teo_cpu *cpu_data = this_cpu_ptr(&teo_cpus);
	struct teo_decision d;
	struct teo_input in;

	teo_gather(drv, dev, &in);

	if (dev->last_state_idx >= 0) {
		struct teo_wakeup w = {
			.sleep_length_ns = cpu_data->sleep_length_ns,
			.residency_ns = dev->last_residency_ns,
			.exit_latency_ns =
				drv->states[dev->last_state_idx].exit_latency_ns,
			.polling_limit = dev->poll_time_limit,
			.tick = cpu_data->tick_wakeup,
		};

		dev->poll_time_limit = false;
		teo_account(&in, &cpu_data->metrics, &w);
		dev->last_state_idx = -1;
	}

	cpu_data->sleep_length_ns = KTIME_MAX;
	teo_decide_early(&in, &cpu_data->metrics, &d);
	if (d.need_sleep_length) {
		ktime_t delta_tick;

		cpu_data->sleep_length_ns = teo_sleep_length(&delta_tick);
		teo_decide_late(&in, &cpu_data->metrics,
				cpu_data->sleep_length_ns, delta_tick, &d);
	}

	if (!d.stop_tick)
		*stop_tick = false;
	return d.idx;
}
EXPORT_SYMBOL_IF_KUNIT(teo_select);

/**
 * teo_reflect - Note the state entered and whether the tick woke the CPU.
 * @dev: cpuidle device of the CPU.
 * @index: Index of the state that was entered.
 *
 * The history is updated at the next selection, off the wakeup path.  The
 * tick's flag is read (and so cleared) after every idle period, whatever
 * else ended it, so that it never leaks into the next one.
 */
VISIBLE_IF_KUNIT void teo_reflect(struct cpuidle_device *dev, int index)
{
	struct teo_cpu *cpu_data = this_cpu_ptr(&teo_cpus);

	cpu_data->tick_wakeup = teo_got_tick();
	dev->last_state_idx = index;
}
EXPORT_SYMBOL_IF_KUNIT(teo_reflect);

/**
 * teo_enable - Start a CPU with an empty history (cpuidle ->enable callback).
 * @drv: cpuidle driver of the CPU (unused).
 * @dev: cpuidle device of the CPU.
 *
 * Return: 0.
 */
VISIBLE_IF_KUNIT int teo_enable(struct cpuidle_driver *drv,
				struct cpuidle_device *dev)
{
	memset(per_cpu_ptr(&teo_cpus, dev->cpu), 0, sizeof(struct teo_cpu));
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(teo_enable);

/*
 * Rated below menu (20): registering does not make TEO the default; users
 * pick it with cpuidle.governor=teo or through current_governor in sysfs.
 */
static struct cpuidle_governor teo_gov = {
	.name		= "teo",
	.rating		= 19,
	.enable		= teo_enable,
	.select		= teo_select,
	.reflect	= teo_reflect,
};

static int __init teo_register(void)
{
	return cpuidle_register_governor(&teo_gov);
}
postcore_initcall(teo_register);
