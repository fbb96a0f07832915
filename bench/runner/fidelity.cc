// Fidelity of atomwatch's timing against an independent harness: Google Benchmark times the
// very same asm (runner/steps_x86_64.h) for plain, lock_xadd and cas on the same CPU, the two
// harnesses alternating, 10 repetitions each (a Google Benchmark repetition is itself the median
// of 20 runs of >= 20 ms, as its documentation recommends on noisy machines). Prints each one's median ns/op and their ratio
// (for plain, our figure before the empty-loop subtraction, since Google Benchmark does not
// subtract its loop), the spread of the median over the repetitions, and the wall time each
// needs per measurement.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sched.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "fidelity_ours.h"
#include "steps_x86_64.h"

#define REP16(x) x x x x x x x x x x x x x x x x

namespace {

struct alignas(128) Slot {
	uint64_t v[16];
};

Slot slot;

void BM_plain(benchmark::State &st)
{
	uint64_t *p = slot.v;
	for (auto _ : st) {
		REP16(AW_X86_PLAIN(p);)
	}
	st.SetItemsProcessed(st.iterations() * 16);
}

void BM_lock_xadd(benchmark::State &st)
{
	uint64_t *p = slot.v;
	for (auto _ : st) {
		REP16(AW_X86_LOCK_XADD(p);)
	}
	st.SetItemsProcessed(st.iterations() * 16);
}

void BM_cas(benchmark::State &st)
{
	uint64_t *p = slot.v;
	for (auto _ : st) {
		REP16(AW_X86_CAS(p);)
	}
	st.SetItemsProcessed(st.iterations() * 16);
}

// Google Benchmark's own answer to noisy machines: many short repetitions, the median aggregate.
#define AW_GB_SETUP(bm)                                                                            \
	BENCHMARK(bm)                                                                              \
		->Unit(benchmark::kNanosecond)                                                     \
		->MinTime(0.02)                                                                    \
		->Repetitions(20)                                                                  \
		->ReportAggregatesOnly(true)
AW_GB_SETUP(BM_plain);
AW_GB_SETUP(BM_lock_xadd);
AW_GB_SETUP(BM_cas);

// Keeps the median aggregate's real time per iteration instead of printing it.
class Capture : public benchmark::BenchmarkReporter {
public:
	double ns_per_iter = 0;
	bool ReportContext(const Context &) override
	{
		return true;
	}
	void ReportRuns(const std::vector<Run> &runs) override
	{
		for (const Run &r : runs)
			if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median")
				ns_per_iter = r.GetAdjustedRealTime();
	}
};

struct Series {
	std::vector<double> value, mean, wall_ms;
};

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double spread_pct(const std::vector<double> &v)
{
	auto mm = std::minmax_element(v.begin(), v.end());
	return 100.0 * (*mm.second - *mm.first) / median(v);
}

double mean(const std::vector<double> &v)
{
	double s = 0;
	for (double x : v)
		s += x;
	return s / (double)v.size();
}

} // namespace

int main(int argc, char **argv)
{
	const char *ops[] = {"plain", "lock_xadd", "cas"};
	const int reps = 10;
	int cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	Series ours[3], gb[3];
	cpu_set_t set;

	benchmark::Initialize(&argc, argv);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("sched_setaffinity");
		return 1;
	}
	const char *timer = aw_fid_init();
	std::printf("fidelity: atomwatch engine vs Google Benchmark %s, CPU %d, timer %s, %d "
		    "alternating repetitions\n\n",
		    "1.7", cpu, timer, reps);
	for (int r = 0; r < reps; r++) {
		for (int i = 0; i < 3; i++) {
			aw_fid_result res;
			if (aw_fid_measure(ops[i], cpu, &res) != 0) {
				std::fprintf(stderr, "fidelity: cannot measure %s\n", ops[i]);
				return 1;
			}
			// plain: compare before subtraction (GB does not subtract its loop).
			ours[i].value.push_back(i == 0 ? res.gross_p50 : res.net_p50);
			ours[i].mean.push_back(i == 0 ? res.gross_mean : res.net_mean);
			ours[i].wall_ms.push_back(res.wall_ms);

			Capture cap;
			auto t0 = std::chrono::steady_clock::now();
			benchmark::RunSpecifiedBenchmarks(&cap, std::string("^BM_") + ops[i] + "(/|$)");
			auto t1 = std::chrono::steady_clock::now();
			gb[i].value.push_back(cap.ns_per_iter / 16.0);
			gb[i].wall_ms.push_back(
				std::chrono::duration<double, std::milli>(t1 - t0).count());
		}
	}
	std::printf("%-10s %11s %11s %7s %11s %7s %8s %8s %9s %9s\n", "op", "ours p50", "GB",
		    "ratio", "ours mean", "ratio", "spread%", "GB", "ours ms", "GB ms");
	for (int i = 0; i < 3; i++) {
		double o = median(ours[i].value), g = median(gb[i].value);
		double om = median(ours[i].mean);
		std::printf("%-10s %11.4f %11.4f %7.4f %11.4f %7.4f %8.2f %8.2f %9.1f %9.1f\n", ops[i],
			    o, g, o / g, om, om / g, spread_pct(ours[i].value),
			    spread_pct(gb[i].value), mean(ours[i].wall_ms), mean(gb[i].wall_ms));
	}
	std::printf("\nns per op, median over %d alternating repetitions. ratio = ours / GB (target "
		    "0.95..1.05), first for our p50 (the median of 20 us batches), then for our "
		    "mean over the same batches (comparable with GB, whose every run is a mean over "
		    ">= 20 ms). spread = (max - min) / median of the %d values (target: ours <= GB). "
		    "ms = wall time per measurement (target: ours <= GB). plain is compared before "
		    "the empty-loop subtraction.\n",
		    reps, reps);
	return 0;
}
