/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace events of the TEO cpuidle governor: why it picked each state, and
 * how it counted each wakeup.  They stay next to teo.c, not in
 * include/trace/events/power.h, because their fields (candidates, reasons,
 * bins) are the governor's own and nothing else in the kernel uses them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM teo

#if !defined(_TEO_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TEO_TRACE_H

#include <linux/ktime.h>
#include <linux/tracepoint.h>

#include "teo.h"

TRACE_DEFINE_ENUM(TEO_REASON_TIMER);
TRACE_DEFINE_ENUM(TEO_REASON_LATENCY);
TRACE_DEFINE_ENUM(TEO_REASON_INTERCEPTS);
TRACE_DEFINE_ENUM(TEO_REASON_UTIL);
TRACE_DEFINE_ENUM(TEO_REASON_TICK);
TRACE_DEFINE_ENUM(TEO_REASON_SINGLE);
TRACE_DEFINE_ENUM(TEO_KIND_HIT);
TRACE_DEFINE_ENUM(TEO_KIND_INTERCEPT);
TRACE_DEFINE_ENUM(TEO_KIND_ARTIFICIAL);

/* Read more than once by define_trace.h; this part is needed only once. */
#ifndef _TEO_TRACE_NS
#define _TEO_TRACE_NS
/* Times the governor did not ask for are KTIME_MAX; shown as -1. */
static inline s64 teo_trace_ns(s64 t)
{
	return t == KTIME_MAX ? -1 : t;
}
#endif

/*
 * teo_select - One selection: the candidate (-1 if no state was usable),
 * the state picked and why (enum teo_reason), the sleep length and the time
 * till the next tick if the governor asked for them, the latency limit, the
 * tick before and after, and whether the CPU was found utilized (asked only
 * when it would change the choice).
 */
TRACE_EVENT(teo_select,
	    TP_PROTO(int cpu, int cand, int state, enum teo_reason reason,
		     s64 sleep_length_ns, s64 delta_tick_ns, s64 latency_req_ns,
		     bool tick_stopped, bool stop_tick, bool utilized),
	    TP_ARGS(cpu, cand, state, reason, sleep_length_ns, delta_tick_ns,
		    latency_req_ns, tick_stopped, stop_tick, utilized),
	    TP_STRUCT__entry(__field(int, cpu)
			     __field(int, cand)
			     __field(int, state)
			     __field(int, reason)
			     __field(s64, sleep_length_ns)
			     __field(s64, delta_tick_ns)
			     __field(s64, latency_req_ns)
			     __field(bool, tick_stopped)
			     __field(bool, stop_tick)
			     __field(bool, utilized)),
	    TP_fast_assign(__entry->cpu = cpu;
			   __entry->cand = cand;
			   __entry->state = state;
			   __entry->reason = reason;
			   __entry->sleep_length_ns = teo_trace_ns(sleep_length_ns);
			   __entry->delta_tick_ns = teo_trace_ns(delta_tick_ns);
			   __entry->latency_req_ns = latency_req_ns;
			   __entry->tick_stopped = tick_stopped;
			   __entry->stop_tick = stop_tick;
			   __entry->utilized = utilized;),
	    TP_printk("cpu=%d cand=%d state=%d reason=%s sleep_length=%lld delta_tick=%lld latency_req=%lld tick_stopped=%d stop_tick=%d utilized=%d",
		      __entry->cpu, __entry->cand, __entry->state,
		      __print_symbolic(__entry->reason,
				       { TEO_REASON_TIMER, "timer" },
				       { TEO_REASON_LATENCY, "latency" },
				       { TEO_REASON_INTERCEPTS, "intercepts" },
				       { TEO_REASON_UTIL, "util" },
				       { TEO_REASON_TICK, "tick" },
				       { TEO_REASON_SINGLE, "single" }),
		      __entry->sleep_length_ns, __entry->delta_tick_ns,
		      __entry->latency_req_ns, __entry->tick_stopped,
		      __entry->stop_tick, __entry->utilized)
);

/*
 * teo_update - One wakeup, counted at the next selection: the state that
 * was entered, the idle time the cpuidle core measured, the sleep length
 * found when that state was picked (-1 if not asked for), and the idle
 * duration, bin and metric (enum teo_kind) the governor counted it as.
 */
TRACE_EVENT(teo_update,
	    TP_PROTO(int cpu, int state, s64 residency_ns, s64 sleep_length_ns,
		     s64 idle_ns, int bin, enum teo_kind kind),
	    TP_ARGS(cpu, state, residency_ns, sleep_length_ns, idle_ns, bin,
		    kind),
	    TP_STRUCT__entry(__field(int, cpu)
			     __field(int, state)
			     __field(s64, residency_ns)
			     __field(s64, sleep_length_ns)
			     __field(s64, idle_ns)
			     __field(int, bin)
			     __field(int, kind)),
	    TP_fast_assign(__entry->cpu = cpu;
			   __entry->state = state;
			   __entry->residency_ns = residency_ns;
			   __entry->sleep_length_ns = teo_trace_ns(sleep_length_ns);
			   __entry->idle_ns = teo_trace_ns(idle_ns);
			   __entry->bin = bin;
			   __entry->kind = kind;),
	    TP_printk("cpu=%d state=%d residency=%lld sleep_length=%lld idle=%lld bin=%d kind=%s",
		      __entry->cpu, __entry->state, __entry->residency_ns,
		      __entry->sleep_length_ns, __entry->idle_ns, __entry->bin,
		      __print_symbolic(__entry->kind,
				       { TEO_KIND_HIT, "hit" },
				       { TEO_KIND_INTERCEPT, "intercept" },
				       { TEO_KIND_ARTIFICIAL, "artificial" }))
);

#endif /* _TEO_TRACE_H */

#undef TRACE_INCLUDE_PATH
/* Found through CFLAGS_teo.o in the Makefile. */
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE teo_trace
#include <trace/define_trace.h>
