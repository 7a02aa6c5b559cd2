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

int replay(const struct cpuidle_driver *drv0, const struct trace *t,
	   const struct gov *g, const struct replay_cfg *cfg,
	   struct result *r)
{
	static struct cpuidle_device devs[SHIM_NR_CPUS];
	static struct cpuidle_device sdevs[SHIM_NR_CPUS];
	static bool kept_stopped[SHIM_NR_CPUS];
	struct cpuidle_driver drv = *drv0;
	double peak[CPUIDLE_STATE_MAX], table[CPUIDLE_STATE_MAX];
	double stop_uj = tick_stop_uj(&drv, cfg);
	/*
	 * The trace's own time, idle and busy: the tick's phase at each idle
	 * entry is the same for every governor.
	 */
	u64 now = 0;
	size_t k;

	memset(r, 0, sizeof(*r));
	model_costs(&drv, peak, table);
	memset(kept_stopped, 0, sizeof(kept_stopped));
	shim_view.tick_ns = cfg->tick_ns;
	reset_devices(devs, trace_cpus(t), &drv, g, cfg);
	if (cfg->shadow)
		reset_devices(sdevs, trace_cpus(t), &drv, cfg->shadow, cfg);
	if (g->model) {
		r->plan_uj = make_plan(&drv, devs, t, cfg,
				       g->model == MODEL_TABLE ? table : peak);
		if (r->plan_uj < 0) {
			fprintf(stderr, "cpuidle-replay: out of memory\n");
			exit(2);
		}
	}

	for (k = 0; k < t->n; k++) {
		const struct period *p = &t->p[k];
		struct cpuidle_device *dev = &devs[p->cpu];
		struct cpuidle_device *sdev = &sdevs[p->cpu];
		s64 natural = p->timer_ns, elapsed = 0;
		s64 lat = cfg->has_qos ? min(p->latency_ns, cfg->qos_ns) : p->latency_ns;
		/*
		 * A recorded entry: one call, its tick as recorded, and more
		 * only after a kept tick or a polling limit that the line says
		 * nothing of (@again).
		 */
		bool irq = false, recorded = p->tick_ns >= 0, again = false;
		/*
		 * The idle loop restarts a stopped tick only when the CPU
		 * leaves it to run a task: after an interrupt that woke no
		 * task (a non-timer wakeup with no busy time) the CPU
		 * re-enters idle with the tick still stopped.
		 */
		bool stopped = p->stopped >= 0 ? p->stopped :
			       kept_stopped[p->cpu];

		if (p->irq_ns >= 0 && p->irq_ns < natural) {
			natural = p->irq_ns;
			/*
			 * Unless the line records that a timer woke the CPU:
			 * the residency starts at the state's entry, the sleep
			 * length at the idle loop's, and under emulation the
			 * time between them is long.
			 */
			irq = p->by_timer <= 0;
		} else if (recorded && p->irq_ns >= 0) {
			/* The measured residency: the timer, seen late. */
			natural = p->irq_ns;
		}
		shim_this_cpu = p->cpu;
		shim_view.latency_req_ns = lat;
		shim_view.util = util_seen(g, p);
		shim_view.capacity = p->capacity;
		r->util_sum += (double)p->util / p->capacity;

		/*
		 * The idle loop: a wakeup by the tick or the polling limit
		 * before the period's end re-enters idle for the rest of it,
		 * with the tick still stopped if the governor stopped it.
		 */
		do {
			s64 delta_tick = next_tick(p, now, elapsed, again,
						   cfg->tick_ns);
			s64 idle = natural - elapsed, diff;
			s64 cut = kept_tick_cut(p, delta_tick, elapsed);
			bool stop_tick = true, tick_woke = false, tick_cut = false;
			bool poll_woke = false, polls, measured;
			int idx, best, sidx = -1;
			double best_uj;

			shim_view.sleep_length_ns = p->timer_ns - elapsed;
			shim_view.delta_tick_ns = stopped ? shim_view.sleep_length_ns :
					       delta_tick;
			shim_view.tick_stopped = stopped;
			shim_view.got_tick = false;
			shim_view.clock_ns = now + elapsed;

			if (g->ops) {
				idx = g->ops->select(&drv, dev, &stop_tick);
			} else {
				struct call c = {
					.drv = &drv, .dev = dev, .k = k,
					.elapsed_ns = elapsed, .idle_ns = idle,
					.tick_cut_ns = cut, .lat_ns = lat,
					.stopped = stopped, .recorded = recorded,
				};

				idx = g->bound(&c, &stop_tick);
			}
			if (idx < 0 || idx >= drv.state_count) {
				r->bad_index = idx;
				return -1;
			}
			if (cfg->shadow)
				sidx = shadow_select(&drv, sdev, cfg, p, idx,
						     stop_tick, stopped, k, r);
			if (cfg->check_invariants) {
				int broken = broken_invariants(&drv, dev, idx,
							       stop_tick, stopped,
							       lat);

				r->violations += !!broken;
				r->disabled_picks += !!(broken & BROKEN_DISABLED);
			}
			if (cfg->decisions)
				fprintf(cfg->decisions, "%zu %u %d %d %d\n", k + 1,
					p->cpu, idx, stop_tick, stopped);
			if (stop_tick && !stopped) {
				r->tick_stops++;
				r->energy_uj += stop_uj;
				r->energy_table_uj += stop_uj;
			}
			stopped |= stop_tick;
			polls = drv.states[idx].flags & CPUIDLE_FLAG_POLLING;

			if (p->woke >= 0) {
				tick_woke = p->woke;
			} else if (!stopped && cut < idle &&
				   !(polls && cfg->tick_in_poll)) {
				idle = cut;
				tick_woke = tick_cut = true;
			}
			if (polls) {
				s64 poll_ns = poll_limit(&drv, dev, cfg->tick_ns);

				/*
				 * A recorded tick may have run while it polled;
				 * a recorded limit (version 4) ended the entry,
				 * at the recorded residency, or did not, even
				 * past it (the polling loop reads the clock
				 * only now and then).
				 */
				if (p->limit >= 0 ? p->limit : poll_ns < idle) {
					if (p->limit < 0 || p->woke < 0)
						idle = min(idle, poll_ns);
					poll_woke = true;
					tick_woke = p->woke > 0;
				}
				if (cfg->tick_in_poll)
					tick_woke = p->woke >= 0 ? p->woke :
						    !stopped && cut < idle;
			}

			/*
			 * Cut short, before the line's end and its timer, by a
			 * kept tick or a polling limit that a recorded line says
			 * nothing of (kept_tick_cut() keeps the tick to the
			 * timer; a timer seen late, past its expiry, would have
			 * woken a polling CPU): the rest is chosen for again,
			 * and a tick that the line records ran at its end.
			 */
			again = recorded && line_resumes(t) &&
				(tick_cut || (poll_woke && p->limit < 0)) &&
				idle < min(natural, p->timer_ns) - elapsed;
			if (again && p->woke >= 0)
				tick_woke = false;

			/*
			 * A recorded residency has its exit latency in it, a
			 * modeled one a share of it.
			 */
			measured = recorded && !poll_woke &&
				   (!tick_woke || p->woke > 0);
			diff = idle + (measured ? 0 :
				       exit_share(&drv.states[idx], cfg));
			dev->last_residency_ns = diff;
			dev->poll_time_limit = poll_woke;
			dev->states_usage[idx].usage++;
			dev->states_usage[idx].time_ns += diff;
			account(&drv, dev, idx, diff, r);
			if (idx < sidx && (stopped || stop_tick))
				r->shallower_stopped_ns = max(r->shallower_stopped_ns, diff);
			else if (idx < sidx)
				r->shallower_kept_ns = max(r->shallower_kept_ns, diff);

			r->wakeups++;
			r->usage[idx]++;
			r->residency_ns[idx] += diff;
			r->tick_stopped += stop_tick;
			if (idx == drv.state_count - 1) {
				r->deepest_entries++;
				r->deepest_tick_stopped += stop_tick;
			}
			if (cfg->first_idx && !elapsed)
				cfg->first_idx[k] = idx;
			if (cfg->ref_idx && idx < cfg->ref_idx[k])
				r->below_ref_ns += diff;
			r->energy_uj += model_energy(&drv, peak, idx, diff);
			r->energy_table_uj += model_energy(&drv, table, idx, diff);
			best = cheapest(&drv, dev, table, cfg, lat, natural - elapsed,
					!recorded, &best_uj);
			r->oracle_hits += idx == best;
			if (idx < best)
				r->misfit_ns += diff;
			elapsed += idle;
			/*
			 * A recorded tick that woke the CPU is no interrupt,
			 * nor is a polling limit recorded past the wakeup.
			 */
			if (irq && elapsed >= natural && !(measured && tick_woke) &&
			    !poll_woke) {
				if (cfg->irq_latencies)
					cfg->irq_latencies[r->irq_wakeups] =
						drv.states[idx].exit_latency_ns;
				r->irq_wakeups++;
				r->irq_exit_latency_ns +=
					drv.states[idx].exit_latency_ns;
			}

			shim_view.got_tick = tick_woke;
			shim_view.clock_ns = now + elapsed;
			if (g->ops && g->ops->reflect)
				g->ops->reflect(dev, idx);
			if (cfg->shadow) {
				sdev->last_residency_ns = diff;
				sdev->poll_time_limit = poll_woke;
				cfg->shadow->ops->reflect(sdev, idx);
			}
		} while (elapsed < natural && (!recorded || again));

		kept_stopped[p->cpu] = stopped && irq && !p->busy_ns;
		now += natural + p->busy_ns;
	}
	r->span_ns = now;
	return 0;
}
