// SPDX-License-Identifier: GPL-2.0
/*
 * The replayed cpuidle core: the idle loop around a governor over a whole
 * trace, as the kernel runs it (the tick, which stays stopped when an
 * interrupt ends an idle period without waking a task; the polling time
 * limit; the latency limit; disabled states) and the above/below ("too
 * deep"/"too shallow") accounting of cpuidle_enter_state().
 */
#include "replay.h"

/*
 * When a kept tick ends the idle time of a call @elapsed_ns into period
 * @p, the next tick being @delta_tick_ns away: then, unless the line
 * records whether the tick ran (version 3); it then ends at the measured
 * residency either way, and this is S64_MAX.  (Under emulation a tick is
 * often taken long after it was due: ending the line at the due time would
 * put the wakeup in another bin than the kernel's.)  Nor does a tick due
 * after a recorded line's timer end it: the timer, seen late, did.
 */
s64 kept_tick_cut(const struct period *p, s64 delta_tick_ns,
		  s64 elapsed_ns)
{
	if (p->woke >= 0 ||
	    (p->tick_ns >= 0 && delta_tick_ns >= p->timer_ns - elapsed_ns))
		return S64_MAX;
	return delta_tick_ns;
}

/*
 * Whether a recorded line of @t that a governor's own choice cut short (a
 * kept tick the line says nothing of, or a polling limit it says nothing
 * of) goes on in another call for the rest of the line, as the kernel
 * would go back to idle: from version 3, whose lines say where the tick
 * ran, so that a cut one did not (the kernel had stopped it); a version 2
 * line ends there.
 */
bool line_resumes(const struct trace *t)
{
	return t->version >= 3;
}

/*
 * The time to the next tick from a call @elapsed_ns into period @p, which
 * began @now_ns into the trace, the tick's period being @tick_ns: on a
 * modeled line the ticks fall on multiples of the period; on a recorded
 * one the first call is told the recorded tick, and a call @again after
 * it the tick after @elapsed_ns, the recorded one and then one every
 * period (a period away right after a tick that was due, even one due at
 * the line's start).
 */
s64 next_tick(const struct period *p, u64 now_ns, s64 elapsed_ns,
	      bool again, s64 tick_ns)
{
	if (p->tick_ns < 0)
		return tick_ns - (s64)((now_ns + elapsed_ns) % tick_ns);
	if (!again)
		return p->tick_ns;
	if (elapsed_ns < p->tick_ns)
		return p->tick_ns - elapsed_ns;
	return tick_ns - (elapsed_ns - p->tick_ns) % tick_ns;
}

/* The invariants a governor's answer breaks (BROKEN_*), 0 if none. */
static int broken_invariants(const struct cpuidle_driver *drv,
			     const struct cpuidle_device *dev, int idx,
			     bool stop_tick, bool stopped, s64 lat_ns)
{
	bool any_enabled = false, any_usable = false;
	int i, broken = 0;

	for (i = 0; i < drv->state_count; i++) {
		any_enabled |= !dev->states_usage[i].disable;
		any_usable |= usable(drv, dev, i, lat_ns);
	}
	if (any_enabled && dev->states_usage[idx].disable)
		broken |= BROKEN_DISABLED;
	if (any_usable && drv->states[idx].exit_latency_ns > lat_ns)
		broken |= BROKEN_LATENCY;
	if (stop_tick && !stopped &&
	    (drv->states[idx].flags & CPUIDLE_FLAG_POLLING))
		broken |= BROKEN_POLL_TICK;
	return broken;
}

/* cpuidle_poll_time(): how long a polling state may spin. */
static s64 poll_limit(const struct cpuidle_driver *drv,
		      const struct cpuidle_device *dev, s64 tick_ns)
{
	int i;

	for (i = 1; i < drv->state_count; i++) {
		if (dev->states_usage[i].disable ||
		    drv->states[i].target_residency_ns < POLL_MIN_NS)
			continue;
		return min(drv->states[i].target_residency_ns, tick_ns / 16);
	}
	return tick_ns / 16;
}

/* cpuidle_enter_state()'s above/below accounting. */
void account(const struct cpuidle_driver *drv,
	     struct cpuidle_device *dev, int idx, s64 diff,
	     struct result *r)
{
	s64 delay = drv->states[idx].exit_latency_ns;
	int i;

	if (diff < drv->states[idx].target_residency_ns) {
		for (i = idx - 1; i >= 0; i--) {
			if (dev->states_usage[i].disable)
				continue;
			dev->states_usage[idx].above++;
			r->above++;
			break;
		}
	} else if (diff > delay) {
		for (i = idx + 1; i < drv->state_count; i++) {
			if (dev->states_usage[i].disable)
				continue;
			if (diff - delay >= drv->states[i].target_residency_ns) {
				dev->states_usage[idx].below++;
				r->below++;
			}
			break;
		}
	}
}

static void reset_devices(struct cpuidle_device *devs, int ncpus,
			  const struct cpuidle_driver *drv, const struct gov *g,
			  const struct replay_cfg *cfg)
{
	int i, s;

	for (i = 0; i < ncpus; i++) {
		memset(&devs[i], 0, sizeof(devs[i]));
		devs[i].cpu = i;
		devs[i].last_state_idx = -1;
		for (s = 0; s < drv->state_count; s++)
			devs[i].states_usage[s].disable = !!(cfg->disabled & BIT(s));
		if (g->ops && g->ops->enable) {
			shim_this_cpu = i;
			g->ops->enable((struct cpuidle_driver *)drv, &devs[i]);
		}
	}
}

/* The utilization @g is told in period @p: its own, or forced (find_gov()). */
static unsigned long util_seen(const struct gov *g, const struct period *p)
{
	return g->no_util ? 0 : g->full_util ? p->capacity : p->util;
}

/*
 * Lockstep comparison: the shadow governor is asked for its decision with
 * the inputs the replayed one got (but the utilization its name forces,
 * if it does: "teo-noutil" is told 0 whichever governor leads), and is
 * then told that the replayed one's state was entered, with the same
 * residency and the same tick and polling-limit flags.  Both therefore see
 * one history, and a difference is a difference of decision alone.  With
 * the tick already stopped the tick decision is ignored, as the core
 * ignores it.
 */
static int shadow_select(struct cpuidle_driver *drv,
			 struct cpuidle_device *sdev, const struct replay_cfg *cfg,
			 const struct period *p, int idx, bool stop_tick,
			 bool stopped, size_t k, struct result *r)
{
	unsigned long util = shim_view.util;
	bool sstop = true;
	int sidx;

	shim_view.util = util_seen(cfg->shadow, p);
	sidx = cfg->shadow->ops->select(drv, sdev, &sstop);
	shim_view.util = util;

	r->shadow_idx_same += sidx == idx;
	if (sidx == idx && (stopped || sstop == stop_tick)) {
		r->shadow_same++;
		return sidx;
	}
	if (!r->shadow_first[0])
		snprintf(r->shadow_first, sizeof(r->shadow_first),
			 "period %zu: state %d, tick %s; %s: state %d, tick %s (sleep length %lld ns%s)",
			 k + 1, idx, stop_tick ? "stopped" : "kept",
			 cfg->shadow->name, sidx, sstop ? "stopped" : "kept",
			 shim_view.sleep_length_ns, stopped ? ", tick stopped" : "");
	return sidx;
}

/* What a replay carries from one idle period of its trace to the next. */
struct run {
	struct cpuidle_driver drv;	/* the table, as the governors see it */
	const struct trace *t;
	const struct gov *g;
	const struct replay_cfg *cfg;
	struct result *r;
	struct cpuidle_device *devs, *sdevs;
	bool *kept_stopped;		/* per CPU: the tick still stopped */
	double peak[CPUIDLE_STATE_MAX];	/* the energy models' costs */
	double table[CPUIDLE_STATE_MAX];
	double stop_uj;			/* a stop and restart of the tick */
	/*
	 * The trace's own time, idle and busy: the tick's phase at each idle
	 * entry is the same for every governor.
	 */
	u64 now;
};

/* One idle period (trace line) as the idle loop goes through it. */
struct visit {
	const struct period *p;
	size_t k;
	struct cpuidle_device *dev, *sdev;
	s64 natural;		/* when the period ends, from its start */
	s64 elapsed;		/* how far into it this call is */
	s64 lat;		/* the latency limit */
	/*
	 * A recorded entry: one call, its tick as recorded, and more only
	 * after a kept tick or a polling limit that the line says nothing of
	 * (@again).
	 */
	bool irq, recorded, again;
	bool stopped;		/* the tick, at this call */
};

/* How one state entry ended, as enter() works it out. */
struct entry {
	int idx, sidx;		/* the state; the shadow's, -1 if none */
	bool stop_tick;
	s64 idle;		/* the time in the state, exit latency apart */
	bool tick_woke, poll_woke, measured;
};

/* The period @k of the trace begins: what its calls have in common. */
static void begin(struct run *run, struct visit *v, size_t k)
{
	const struct period *p = &run->t->p[k];
	const struct replay_cfg *cfg = run->cfg;

	*v = (struct visit){
		.p = p, .k = k, .dev = &run->devs[p->cpu],
		.sdev = &run->sdevs[p->cpu], .natural = p->timer_ns,
		.lat = cfg->has_qos ? min(p->latency_ns, cfg->qos_ns) : p->latency_ns,
		.recorded = p->tick_ns >= 0,
		/*
		 * The idle loop restarts a stopped tick only when the CPU
		 * leaves it to run a task: after an interrupt that woke no
		 * task (a non-timer wakeup with no busy time) the CPU
		 * re-enters idle with the tick still stopped.
		 */
		.stopped = p->stopped >= 0 ? p->stopped :
			   run->kept_stopped[p->cpu],
	};
	if (p->irq_ns >= 0 && p->irq_ns < v->natural) {
		v->natural = p->irq_ns;
		/*
		 * Unless the line records that a timer woke the CPU: the
		 * residency starts at the state's entry, the sleep length at
		 * the idle loop's, and under emulation the time between them
		 * is long.
		 */
		v->irq = p->by_timer <= 0;
	} else if (v->recorded && p->irq_ns >= 0) {
		/* The measured residency: the timer, seen late. */
		v->natural = p->irq_ns;
	}
	shim_this_cpu = p->cpu;
	shim_view.latency_req_ns = v->lat;
	shim_view.util = util_seen(run->g, p);
	shim_view.capacity = p->capacity;
	run->r->util_sum += (double)p->util / p->capacity;
}

/*
 * Ask the governor (or the bound) for a state and a tick decision at the
 * call @v has reached, the tick being @delta_tick away and cutting the
 * idle time at @cut if kept; fills @e->idx, @e->sidx and @e->stop_tick
 * and counts what the answer alone decides.  -1 for an index out of
 * range.
 */
static int ask(struct run *run, struct visit *v, s64 delta_tick, s64 cut,
	       struct entry *e)
{
	const struct replay_cfg *cfg = run->cfg;
	struct result *r = run->r;

	shim_view.sleep_length_ns = v->p->timer_ns - v->elapsed;
	shim_view.delta_tick_ns = v->stopped ? shim_view.sleep_length_ns :
			       delta_tick;
	shim_view.tick_stopped = v->stopped;
	shim_view.got_tick = false;
	shim_view.clock_ns = run->now + v->elapsed;

	e->stop_tick = true;
	e->sidx = -1;
	if (run->g->ops) {
		e->idx = run->g->ops->select(&run->drv, v->dev, &e->stop_tick);
	} else {
		struct call c = {
			.drv = &run->drv, .dev = v->dev, .k = v->k,
			.elapsed_ns = v->elapsed, .idle_ns = v->natural - v->elapsed,
			.tick_cut_ns = cut, .lat_ns = v->lat,
			.stopped = v->stopped, .recorded = v->recorded,
		};

		e->idx = run->g->bound(&c, &e->stop_tick);
	}
	if (e->idx < 0 || e->idx >= run->drv.state_count) {
		r->bad_index = e->idx;
		return -1;
	}
	if (cfg->shadow)
		e->sidx = shadow_select(&run->drv, v->sdev, cfg, v->p, e->idx,
					e->stop_tick, v->stopped, v->k, r);
	if (cfg->check_invariants) {
		int broken = broken_invariants(&run->drv, v->dev, e->idx,
					       e->stop_tick, v->stopped, v->lat);

		r->violations += !!broken;
		r->disabled_picks += !!(broken & BROKEN_DISABLED);
	}
	if (cfg->decisions)
		fprintf(cfg->decisions, "%zu %u %d %d %d\n", v->k + 1,
			v->p->cpu, e->idx, e->stop_tick, v->stopped);
	if (e->stop_tick && !v->stopped) {
		r->tick_stops++;
		r->energy_uj += run->stop_uj;
		r->energy_table_uj += run->stop_uj;
	}
	v->stopped |= e->stop_tick;
	return 0;
}

/*
 * Enter state @e->idx at the call @v has reached, with the tick @cut
 * away if it runs: how long the CPU stays (@e->idle), what ends it (the
 * tick, the polling limit or the period's own wakeup) and whether the
 * residency is the line's measured one; sets @v->again if the rest of a
 * recorded line is another call.
 */
static void enter(struct run *run, struct visit *v, s64 cut, struct entry *e)
{
	const struct replay_cfg *cfg = run->cfg;
	const struct period *p = v->p;
	bool polls = run->drv.states[e->idx].flags & CPUIDLE_FLAG_POLLING;
	bool tick_cut = false;

	e->idle = v->natural - v->elapsed;
	e->tick_woke = false;
	e->poll_woke = false;
	if (p->woke >= 0) {
		e->tick_woke = p->woke;
	} else if (!v->stopped && cut < e->idle &&
		   !(polls && cfg->tick_in_poll)) {
		e->idle = cut;
		e->tick_woke = true;
		tick_cut = true;
	}
	if (polls) {
		s64 poll_ns = poll_limit(&run->drv, v->dev, cfg->tick_ns);

		/*
		 * A recorded tick may have run while it polled; a recorded
		 * limit (version 4) ended the entry, at the recorded
		 * residency, or did not, even past it (the polling loop reads
		 * the clock only now and then).
		 */
		if (p->limit >= 0 ? p->limit : poll_ns < e->idle) {
			if (p->limit < 0 || p->woke < 0)
				e->idle = min(e->idle, poll_ns);
			e->poll_woke = true;
			e->tick_woke = p->woke > 0;
		}
		if (cfg->tick_in_poll)
			e->tick_woke = p->woke >= 0 ? p->woke :
				       !v->stopped && cut < e->idle;
	}

	/*
	 * Cut short, before the line's end and its timer, by a kept tick or
	 * a polling limit that a recorded line says nothing of
	 * (kept_tick_cut() keeps the tick to the timer; a timer seen late,
	 * past its expiry, would have woken a polling CPU): the rest is
	 * chosen for again, and a tick that the line records ran at its end.
	 */
	v->again = v->recorded && line_resumes(run->t) &&
		   (tick_cut || (e->poll_woke && p->limit < 0)) &&
		   e->idle < min(v->natural, p->timer_ns) - v->elapsed;
	if (v->again && p->woke >= 0)
		e->tick_woke = false;

	/*
	 * A recorded residency has its exit latency in it, a modeled one a
	 * share of it.
	 */
	e->measured = v->recorded && !e->poll_woke &&
		      (!e->tick_woke || p->woke > 0);
}

/*
 * Count the entry @e in the device, the result and the energy models,
 * then tell the governor (and the shadow) how it went.
 */
static void leave(struct run *run, struct visit *v, const struct entry *e)
{
	const struct cpuidle_driver *drv = &run->drv;
	const struct replay_cfg *cfg = run->cfg;
	struct cpuidle_device *dev = v->dev;
	struct result *r = run->r;
	int idx = e->idx, best;
	double best_uj;
	s64 diff = e->idle + (e->measured ? 0 :
			      exit_share(&drv->states[idx], cfg));

	dev->last_residency_ns = diff;
	dev->poll_time_limit = e->poll_woke;
	dev->states_usage[idx].usage++;
	dev->states_usage[idx].time_ns += diff;
	account(drv, dev, idx, diff, r);
	if (idx < e->sidx && v->stopped)
		r->shallower_stopped_ns = max(r->shallower_stopped_ns, diff);
	else if (idx < e->sidx)
		r->shallower_kept_ns = max(r->shallower_kept_ns, diff);

	r->wakeups++;
	r->usage[idx]++;
	r->residency_ns[idx] += diff;
	r->tick_stopped += e->stop_tick;
	if (idx == drv->state_count - 1) {
		r->deepest_entries++;
		r->deepest_tick_stopped += e->stop_tick;
	}
	if (cfg->first_idx && !v->elapsed)
		cfg->first_idx[v->k] = idx;
	if (cfg->ref_idx && idx < cfg->ref_idx[v->k])
		r->below_ref_ns += diff;
	r->energy_uj += model_energy(drv, run->peak, idx, diff);
	r->energy_table_uj += model_energy(drv, run->table, idx, diff);
	best = cheapest(drv, dev, run->table, cfg, v->lat,
			v->natural - v->elapsed, !v->recorded, &best_uj);
	r->oracle_hits += idx == best;
	if (idx < best)
		r->misfit_ns += diff;
	v->elapsed += e->idle;
	/*
	 * A recorded tick that woke the CPU is no interrupt, nor is a polling
	 * limit recorded past the wakeup.
	 */
	if (v->irq && v->elapsed >= v->natural &&
	    !(e->measured && e->tick_woke) && !e->poll_woke) {
		if (cfg->irq_latencies)
			cfg->irq_latencies[r->irq_wakeups] =
				drv->states[idx].exit_latency_ns;
		r->irq_wakeups++;
		r->irq_exit_latency_ns += drv->states[idx].exit_latency_ns;
	}

	shim_view.got_tick = e->tick_woke;
	shim_view.clock_ns = run->now + v->elapsed;
	if (run->g->ops && run->g->ops->reflect)
		run->g->ops->reflect(dev, idx);
	if (cfg->shadow) {
		v->sdev->last_residency_ns = diff;
		v->sdev->poll_time_limit = e->poll_woke;
		cfg->shadow->ops->reflect(v->sdev, idx);
	}
}

/* The harness's answer to an allocation that failed: exit status 2. */
void out_of_memory(void)
{
	fputs("cpuidle-replay: out of memory\n", stderr);
	exit(2);
}

int replay(const struct cpuidle_driver *drv0, const struct trace *t,
	   const struct gov *g, const struct replay_cfg *cfg,
	   struct result *r)
{
	static struct cpuidle_device devs[SHIM_NR_CPUS];
	static struct cpuidle_device sdevs[SHIM_NR_CPUS];
	static bool kept_stopped[SHIM_NR_CPUS];
	struct run run;
	size_t k;

	run = (struct run){
		.drv = *drv0, .t = t, .g = g, .cfg = cfg, .r = r,
		.devs = devs, .sdevs = sdevs, .kept_stopped = kept_stopped,
	};
	memset(r, 0, sizeof(*r));
	run.stop_uj = tick_stop_uj(&run.drv, cfg);
	model_costs(&run.drv, run.peak, run.table);
	memset(kept_stopped, 0, sizeof(kept_stopped));
	shim_view.tick_ns = cfg->tick_ns;
	reset_devices(devs, trace_cpus(t), &run.drv, g, cfg);
	if (cfg->shadow)
		reset_devices(sdevs, trace_cpus(t), &run.drv, cfg->shadow, cfg);
	if (g->model) {
		r->plan_uj = make_plan(&run.drv, devs, t, cfg,
				       g->model == MODEL_TABLE ? run.table : run.peak);
		if (r->plan_uj < 0)
			out_of_memory();
	}

	for (k = 0; k < t->n; k++) {
		struct visit v;

		begin(&run, &v, k);
		/*
		 * The idle loop: a wakeup by the tick or the polling limit
		 * before the period's end re-enters idle for the rest of it,
		 * with the tick still stopped if the governor stopped it.
		 */
		do {
			s64 delta_tick = next_tick(v.p, run.now, v.elapsed,
						   v.again, cfg->tick_ns);
			s64 cut = kept_tick_cut(v.p, delta_tick, v.elapsed);
			struct entry e;

			if (ask(&run, &v, delta_tick, cut, &e))
				return -1;
			enter(&run, &v, cut, &e);
			leave(&run, &v, &e);
		} while (v.elapsed < v.natural && (!v.recorded || v.again));

		kept_stopped[v.p->cpu] = v.stopped && v.irq && !v.p->busy_ns;
		run.now += v.natural + v.p->busy_ns;
	}
	r->span_ns = run.now;
	return 0;
}
