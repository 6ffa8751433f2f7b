// OpenMP helpers: every parallel loop honors the context's thread count.
#pragma once

#include <cstdint>

#include <omp.h>

namespace tops::cpu {

// Outputs at least this large are written with non-temporal stores (softmax,
// transpose tiles, norm rows): they will not stay in a core's share of the
// caches for the next op anyway, and skipping the read-for-ownership of y
// cuts memory traffic from three streams (read x, read + write y) to two.
constexpr int64_t kStreamMinBytes = 8 << 20;

// Threads for a loop of `work` units when each unit is worth `grain` units of
// serial work: small problems stay on one thread.
inline int pick_threads(int requested, int64_t work, int64_t grain) {
    int t = requested > 0 ? requested : omp_get_max_threads();
    const int64_t useful = grain > 0 ? (work + grain - 1) / grain : work;
    if (useful < t) t = int(useful < 1 ? 1 : useful);
    return t;
}

// Thread t's contiguous share [begin, end) of n units split across nt threads.
struct Share {
    int64_t begin, end;
    Share(int64_t n, int64_t t, int64_t nt) : begin(n * t / nt), end(n * (t + 1) / nt) {}
    bool empty() const { return begin >= end; }
};

// Runs fn(begin, end) over [0, n) split into contiguous chunks across threads.
template <class Fn>
void parallel_for(int threads, int64_t n, Fn&& fn) {
    if (threads <= 1 || n <= 1) {
        fn(int64_t(0), n);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        const Share sh(n, omp_get_thread_num(), omp_get_num_threads());
        if (!sh.empty()) fn(sh.begin, sh.end);
    }
}

// Runs fn(t, nt) on each thread t of a team of nt <= threads (one call with
// (0, 1) when threads <= 1 or inside another parallel region). Phases of
// fn that depend on each other are separated by team_barrier(): one team,
// one fork / join, for work that would otherwise take several.
template <class Fn>
void parallel_team(int threads, Fn&& fn) {
    if (threads <= 1) {
        fn(0, 1);
        return;
    }
#pragma omp parallel num_threads(threads)
    fn(omp_get_thread_num(), omp_get_num_threads());
}

// Every thread of the calling team waits here (a no-op on one thread).
inline void team_barrier() {
#pragma omp barrier
}

}  // namespace tops::cpu
