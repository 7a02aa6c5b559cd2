// SPDX-License-Identifier: GPL-2.0
/*
 * cpuidle-replay: replay idle periods through cpuidle governors compiled
 * unmodified in userspace (our teo.c; upstream mainline 7.3's and 6.12's
 * teo.c and menu.c, taken from the source packages at build time), with
 * the cpuidle core around them reproduced (replay.c).
 *
 *   cpuidle-replay --table FILE --trace FILE [--gov NAME[,NAME...]] [--hz N]
 *                  [--exit-share PCT] [--disable MASK] [--tick-cost NS]
 *                  [--latency-limit US] [--csv] [--no-cost]
 *   cpuidle-replay --table FILE --trace FILE --agree GOV [--with GOV] ...
 *   cpuidle-replay --table FILE --trace FILE --gov NAME --decisions FILE ...
 *   cpuidle-replay --self-test
 *
 * The formats are described in README in this directory.
 */
#include <errno.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "replay.h"

static const char usage_text[] =
	"usage: cpuidle-replay --table FILE --trace FILE [--gov NAME[,NAME...]] [--hz N] [--exit-share PCT] [--disable MASK] [--tick-cost NS] [--latency-limit US] [--csv | --misses] [--no-cost]\n"
	"       cpuidle-replay --table FILE --trace FILE --agree SHADOW [--gov NAME] [--hz N] ...\n"
	"       cpuidle-replay --agree SHADOW --gov NAME --random CASES --seed N [--extreme]\n"
	"       cpuidle-replay --table FILE --trace FILE --gov NAME --decisions FILE [--events FILE] [--hz N] ...\n"
	"       cpuidle-replay --self-test\n"
	"       cpuidle-replay --self-test-fuzz ITERATIONS\n"
	"       cpuidle-replay --fuzz SECONDS --seed N [--cases N]\n"
	"       cpuidle-replay --fuzz-case SEED\n"
	"--hz N is the tick's rate, %d (the kernel's default) if not given.  --seed N, the\n"
	"first random case's, is always given (make fuzz takes one from the clock and\n"
	"prints it).\n";

/* How to read the table a replay prints (--help, --legend). */
static const char legend_text[] =
	"The replay's table, one row per governor:\n"
	"  wakeups  idle periods the governor chose a state for\n"
	"  deep%    of them too deep: the idle time fell short of the state's target residency\n"
	"  shal%    of them too shallow: a deeper enabled state would have paid off\n"
	"  orcl%    of them the state the table-implied oracle picks for the rest of the period\n"
	"  tick0%   of them spent with the tick stopped\n"
	"  stop/s   tick stops per second of the trace\n"
	"  irqlat   mean exit latency paid at wakeups that were not timers, us (p99lat: 99th percentile)\n"
	"  energy   mJ in the default model (state power plus exit latency at the highest power);\n"
	"           etable: mJ in the model the target residencies imply; both count the tick stops\n"
	"  vsoff%   energy against our teo with utilization awareness off (teo-noutil)\n"
	"  ns       time per decision (0 with --no-cost); util%: mean utilization, % of capacity\n"
	"  residency% by state: share of idle time in each state, shallowest first\n"
	"Lower is better in deep%, shal%, irqlat, p99lat, energy, etable and ns, higher in\n"
	"orcl%.  The \"oracle\" and \"oracle-table\" rows are no governors: they are the least\n"
	"energy any governor could use in each model, knowing the whole trace.\n"
	"With --misses the table has linux-pm's idle-miss columns instead, counted as the\n"
	"cpuidle core counts a state's \"above\" and \"below\" in sysfs: idles (the wakeups),\n"
	"idle_misses (aboves + belows), idle_miss_ratio, belows (too shallow) and aboves\n"
	"(too deep), so that a device's or a guest's table and its replay stand side by side.\n";

/* Bad usage: one line on stderr, exit status 2. */
static void usage_err(const char *why)
{
	fprintf(stderr, "cpuidle-replay: %s (cpuidle-replay --help for usage)\n", why);
	exit(2);
}

/* The value of the option at argv[*@i], which moves *@i past it. */
static const char *opt_arg(int argc, char **argv, int *i)
{
	if (*i + 1 == argc) {
		snprintf(errbuf, sizeof(errbuf), "%s needs a value", argv[*i]);
		usage_err(errbuf);
	}
	return argv[++*i];
}

/* An argument that is none of the options. */
static void unknown(const char *a)
{
	snprintf(errbuf, sizeof(errbuf), "%s '%s'",
		 strncmp(a, "--", 2) ? "unexpected argument" : "unknown option", a);
	usage_err(errbuf);
}

/* A whole number from @s, or usage_err() about @what. */
static u64 number(const char *s, const char *what)
{
	char *end;
	u64 v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		usage_err(what);
	return v;
}

/* An option without a value that sets a setting: @var to @to. */
struct flag {
	const char *name;
	bool *var;
	bool to;
};

/* If @a is one of the @n @flags, set its setting; whether it was. */
static bool set_flag(const struct flag *flags, size_t n, const char *a)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(a, flags[i].name)) {
			*flags[i].var = flags[i].to;
			return true;
		}
	}
	return false;
}

/* --seed N: the first random case's seed, into *@seed; true. */
static bool set_seed(u64 *seed, const char *s)
{
	*seed = number(s, "--seed needs a whole number");
	return true;
}

/*
 * --fuzz SECONDS --seed N [--cases N], or --fuzz-case SEED: nothing else
 * goes with them.
 */
static int fuzz_args(int argc, char **argv)
{
	u64 seed = 0, cases = 0, limit;
	bool seeded = false;
	int i;

	if (argc < 2)
		usage_err("--fuzz needs a number of seconds, --fuzz-case a seed");
	if (!strcmp(argv[0], "--fuzz-case")) {
		if (argc != 2)
			usage_err("--fuzz-case takes a seed and nothing else");
		return fuzz_one(number(argv[1], "--fuzz-case needs a seed (a whole number)"));
	}
	limit = number(argv[1], "--fuzz needs a number of seconds");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--seed"))
			seeded = set_seed(&seed, opt_arg(argc, argv, &i));
		else if (!strcmp(argv[i], "--cases"))
			cases = number(opt_arg(argc, argv, &i), "--cases needs a whole number");
		else
			unknown(argv[i]);
	}
	if (!limit && !cases)
		usage_err("--fuzz needs seconds or --cases above 0");
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_set_death_callback(fuzz_died);
#endif
	if (!seeded)
		usage_err("--fuzz needs --seed N, its first case's seed (make fuzz takes one from the clock)");
	return fuzz_main(limit, seed, cases);
}

/*
 * The options of the replay's configuration at argv[*@i] into @cfg, moving
 * *@i past its value; false if argv[*@i] is none of them.
 */
static bool cfg_option(struct replay_cfg *cfg, int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (!strcmp(a, "--hz")) {
		long hz = strtol(opt_arg(argc, argv, i), NULL, 10);

		if (hz < 24 || hz > 10000)
			usage_err("--hz must be between 24 and 10000");
		cfg->tick_ns = NSEC_PER_SEC / hz;
	} else if (!strcmp(a, "--disable")) {
		char *end;

		cfg->disabled = strtoul(opt_arg(argc, argv, i), &end, 0);
		if (*end || cfg->disabled >= BIT(CPUIDLE_STATE_MAX))
			usage_err("--disable takes a bit mask of states, such as 0x4 for state 2");
	} else if (!strcmp(a, "--tick-cost")) {
		cfg->tick_cost_ns = number(opt_arg(argc, argv, i),
					   "--tick-cost needs a whole number of ns");
		if (cfg->tick_cost_ns > NSEC_PER_SEC)
			usage_err("--tick-cost is at most 1000000000 ns");
	} else if (!strcmp(a, "--latency-limit")) {
		u64 us = number(opt_arg(argc, argv, i),
				"--latency-limit needs a whole number of us");

		if (us > INT_MAX)
			usage_err("--latency-limit is at most 2147483647 us");
		cfg->has_qos = true;
		cfg->qos_ns = us * NSEC_PER_USEC;
	} else if (!strcmp(a, "--exit-share")) {
		cfg->exit_share_pct = strtol(opt_arg(argc, argv, i), NULL, 10);
		if (cfg->exit_share_pct < 0 || cfg->exit_share_pct > 100)
			usage_err("--exit-share must be between 0 and 100");
	} else {
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	const char *table = NULL, *trace = NULL, *gname = NULL, *shadow = NULL;
	const char *dfile = NULL, *efile = NULL;
	bool csv = false, cost = true, extreme = false, misses = false;
	const struct flag flags[] = {
		{ "--csv", &csv, true }, { "--no-cost", &cost, false },
		{ "--misses", &misses, true }, { "--extreme", &extreme, true },
	};
	u64 random_cases = 0, seed = 0;
	bool seeded = false;
	struct replay_cfg cfg = {
		.tick_ns = NSEC_PER_SEC / DEFAULT_HZ, .exit_share_pct = 50,
		.tick_cost_ns = TICK_COST_NS,
	};
	struct cpuidle_driver drv;
	struct trace t;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help")) {
			printf(usage_text, DEFAULT_HZ);
			fputs("\n", stdout);
			fputs(legend_text, stdout);
			return 0;
		}
		if (!strcmp(a, "--legend")) {
			fputs(legend_text, stdout);
			return 0;
		}
		if (!strcmp(a, "--self-test"))
			return self_test(0);
		if (set_flag(flags, ARRAY_SIZE(flags), a))
			continue;
		if (!strcmp(a, "--fuzz") || !strcmp(a, "--fuzz-case")) {
			if (i != 1)
				usage_err("--fuzz and --fuzz-case go first, with their own options only");
			break;
		}
		if (!strcmp(a, "--self-test-fuzz")) {
			long n = i + 1 < argc ? strtol(argv[i + 1], NULL, 10) : 0;

			if (n <= 0)
				usage_err("--self-test-fuzz needs a number of iterations");
			return self_test(n);
		}
		if (!strcmp(a, "--table"))
			table = opt_arg(argc, argv, &i);
		else if (!strcmp(a, "--trace"))
			trace = opt_arg(argc, argv, &i);
		else if (!strcmp(a, "--gov"))
			gname = opt_arg(argc, argv, &i);
		else if (!strcmp(a, "--agree"))
			shadow = opt_arg(argc, argv, &i);
		else if (!strcmp(a, "--random"))
			random_cases = number(opt_arg(argc, argv, &i),
					      "--random needs a whole number of cases");
		else if (!strcmp(a, "--seed"))
			seeded = set_seed(&seed, opt_arg(argc, argv, &i));
		else if (!strcmp(a, "--decisions"))
			dfile = opt_arg(argc, argv, &i);
		else if (!strcmp(a, "--events"))
			efile = opt_arg(argc, argv, &i);
		else if (!cfg_option(&cfg, argc, argv, &i))
			unknown(a);
	}
	if (i < argc)
		return fuzz_args(argc - i, argv + i);
	if (random_cases || extreme) {
		if (!seeded)
			usage_err("--random needs --seed N, its first case's seed");
		if (!shadow || !gname || !random_cases || table || trace)
			usage_err("--random CASES goes with --agree and --gov, without --table or --trace");
		return agree_random(gname, shadow, seed, random_cases, extreme);
	}
	if (!table || !trace)
		usage_err("--table and --trace are required");
	if (csv && misses)
		usage_err("--csv has every column, --misses linux-pm's idle-miss columns: one of them");

	if (parse_table(table, slurp(table), &drv) ||
	    parse_trace(trace, slurp(trace), &t)) {
		fprintf(stderr, "cpuidle-replay: %s\n", errbuf);
		return 2;
	}

	if (efile && !dfile)
		usage_err("--events goes with --decisions");
	if (efile) {
		shim_set_trace(fopen(efile, "w"));
		if (!shim_trace) {
			fprintf(stderr, "cpuidle-replay: cannot write %s: %s\n",
				efile, strerror(errno));
			return 2;
		}
	}
	if (dfile)
		return write_decisions(&drv, &t, &cfg, gname ? gname : "teo", dfile);
	if (shadow)
		return agree_pairs(&drv, &t, &cfg, gname ? gname : "teo", shadow);
	if (gname) {
		const char *g = gname;

		/* Every name in the list must be a governor of the harness. */
		while (g) {
			char name[64];

			g = list_next(g, name, sizeof(name));
			if (!find_gov(name)) {
				fprintf(stderr, "cpuidle-replay: unknown governor '%s'\n", name);
				return 2;
			}
		}
	}
	report(&drv, &t, &cfg, gname, csv, cost, misses);
	return 0;
}
