// tops-bench runner. For one case it creates the tops op, fills a pool of
// buffer sets with random data (never zeros; outputs poisoned with NaN), then
// per thread count: times tops (warm-up, then repeats until both the rep and
// time minimums are met; median and IQR), checks sampled outputs against an
// fp64 recomputation, and does the same for the oneDNN baseline on the same
// buffers. In cold mode each call uses the next buffer set, and there are
// enough sets that one pass over them exceeds twice the last-level cache, so
// no call finds its input or output left in cache by an earlier one.
#include <cmath>
#include <cstring>
#include <omp.h>
#include <sstream>
#include <stdexcept>

#include "runner.hpp"

namespace bench {

namespace {

constexpr int kColdFactor = 2;    // pool >= kColdFactor x LLC counts as cold
constexpr uint8_t kPoison = 0xff; // NaN for f32/f16/bf16

// xorshift64*: fast enough to fill hundreds of MiB of inputs.
struct Rng {
    uint64_t s;
    uint64_t next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 2685821657736338717ull;
    }
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
};

uint16_t float_to_half_bits(float f) {  // truncating; inputs are in [-4, 4)
    uint32_t b;
    std::memcpy(&b, &f, 4);
    const uint32_t sign = (b >> 16) & 0x8000u;
    const int exp = int((b >> 23) & 0xff) - 127 + 15;
    if (exp <= 0) return uint16_t(sign);  // below the f16 normal range: +-0
    return uint16_t(sign | uint32_t(exp) << 10 | ((b >> 13) & 0x3ffu));
}

void fill_host(const TensorSpec& t, std::vector<unsigned char>* out, uint64_t seed) {
    const int64_t n = element_count(t.dims);
    out->assign(tensor_bytes(t), kPoison);
    Rng rng{seed * 0x9e3779b97f4a7c15ull + 1};
    unsigned char* p = out->data();
    switch (t.fill) {
    case Fill::none: break;
    case Fill::mask:
        for (int64_t i = 0; i < n; ++i) p[i] = rng.uniform() < kMaskKeep ? 1 : 0;
        break;
    case Fill::lengths:
        for (int64_t i = 0; i < n; ++i) {
            const int32_t v = int32_t(1 + int64_t(rng.uniform() * double(t.fill_max)));
            std::memcpy(p + 4 * i, &v, 4);
        }
        break;
    case Fill::ramp_lengths:
    case Fill::ramp_cu_seqlens: {
        const bool cu = t.fill == Fill::ramp_cu_seqlens;
        const int64_t batch = cu ? n - 1 : n;
        int32_t sum = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int32_t v = cu ? sum : int32_t(ramp_length(i, batch, t.fill_max));
            if (cu && i < batch) sum += int32_t(ramp_length(i, batch, t.fill_max));
            std::memcpy(p + 4 * i, &v, 4);
        }
        break;
    }
    case Fill::uniform:
        for (int64_t i = 0; i < n; ++i) {
            const float v = float((2.0 * rng.uniform() - 1.0) * kFillRange);
            if (t.dtype == TOPS_DTYPE_F32) {
                std::memcpy(p + 4 * i, &v, 4);
            } else if (t.dtype == TOPS_DTYPE_F16) {
                const uint16_t h = float_to_half_bits(v);
                std::memcpy(p + 2 * i, &h, 2);
            } else if (t.dtype == TOPS_DTYPE_BF16) {
                uint32_t b;
                std::memcpy(&b, &v, 4);
                const uint16_t h = uint16_t(b >> 16);
                std::memcpy(p + 2 * i, &h, 2);
            } else {
                throw std::runtime_error("no uniform fill for dtype " + std::string(tops_dtype_name(t.dtype)));
            }
        }
        break;
    }
}

std::string mib(double bytes) {
    std::ostringstream s;
    s.precision(bytes < (10 << 20) ? 2 : 0);
    s << std::fixed << bytes / double(1 << 20) << " MiB";
    return s.str();
}

// The op's buffers: sets[s][i] is tensor i of set s, on the device.
class Pool {
public:
    Pool(Device& dev, const OpInstance& inst, const RunOptions& opt) : dev_(dev), inst_(inst) {
        for (const TensorSpec& t : inst.tensors) set_bytes_ += tensor_bytes(t);
        const size_t llc = dev.llc_bytes();
        size_t n = 1;
        if (opt.cache == CacheMode::cold && set_bytes_ > 0) {
            n = (kColdFactor * llc + set_bytes_ - 1) / set_bytes_;
            const size_t cap = std::max<size_t>(1, opt.max_pool_bytes / set_bytes_);
            n = std::max<size_t>(1, std::min(n, cap));
        }
        host_.resize(inst.tensors.size());
        for (size_t i = 0; i < inst.tensors.size(); ++i) fill_host(inst.tensors[i], &host_[i], i + 1);
        sets_.resize(n);
        for (auto& set : sets_) {
            for (size_t i = 0; i < inst.tensors.size(); ++i) {
                set.push_back(dev.alloc(host_[i].size()));
                dev.upload(set.back(), host_[i].data(), host_[i].size());
            }
        }
        const double pool = double(n) * double(set_bytes_);
        std::ostringstream s;
        if (pool >= double(kColdFactor) * double(llc)) {
            s << "cold: " << n << " buffer set" << (n > 1 ? "s" : "") << " of " << mib(double(set_bytes_))
              << " rotated (" << mib(pool) << " >= " << kColdFactor << "x LLC " << mib(double(llc)) << ")";
        } else {
            s << "cache-resident: " << n << " buffer set" << (n > 1 ? "s" : "") << ", " << mib(pool) << " < "
              << kColdFactor << "x LLC " << mib(double(llc))
              << (opt.cache == CacheMode::warm ? " (--cache warm)" : " (capped by --max-pool-mib)");
        }
        state_ = s.str();
    }
    ~Pool() {
        for (auto& set : sets_) {
            for (void* p : set) dev_.release(p);
        }
    }
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    size_t size() const { return sets_.size(); }
    const std::vector<void*>& set(int rep) const { return sets_[size_t(rep) % sets_.size()]; }
    double bytes() const { return double(sets_.size()) * double(set_bytes_); }
    const std::string& state() const { return state_; }

    // Re-poisons set 0's outputs, so a check after a run sees only what it wrote.
    void poison_outputs() {
        for (size_t i = 0; i < inst_.tensors.size(); ++i) {
            if (inst_.tensors[i].output) dev_.upload(sets_[0][i], host_[i].data(), host_[i].size());
        }
    }
    // Host copy of set 0 (inputs as generated, outputs as downloaded).
    HostTensors download_set0() {
        HostTensors h = host_;
        for (size_t i = 0; i < inst_.tensors.size(); ++i) {
            if (inst_.tensors[i].output) dev_.download(h[i].data(), sets_[0][i], h[i].size());
        }
        return h;
    }

private:
    Device& dev_;
    const OpInstance& inst_;
    size_t set_bytes_ = 0;
    HostTensors host_;
    std::vector<std::vector<void*>> sets_;
    std::string state_;
};

void finish(Measurement* m, const Timing& timing, double bytes, double flops) {
    m->stats = summarize(timing.seconds);
    m->cpu_share = timing.cpu_share;
    m->gbs = m->stats.median_s > 0 ? bytes / m->stats.median_s / 1e9 : 0;
    m->tflops = m->stats.median_s > 0 ? flops / m->stats.median_s / 1e12 : 0;
    m->ok = true;
}

}  // namespace

std::vector<Result> run_case(Device& dev, tops_context_t ctx, const Case& c, const std::vector<int>& threads,
                             const RunOptions& opt, const std::map<int, std::vector<CopyCeiling>>& ceilings) {
    std::vector<Result> results;
    const OpEntry* entry = find_op(c.op);
    OpInstance inst;
    std::string err;
    tops_status_t s = entry ? entry->create(c, ctx, &inst, &err) : TOPS_ERROR_INVALID_ARGUMENT;
    if (!entry) err = "unknown op '" + c.op + "'";
    const bool have_op = s == TOPS_SUCCESS;
    const std::string create_error = have_op ? "" : std::string(tops_status_string(s)) + ": " + err;
    if (inst.tensors.empty()) {  // the case itself is malformed: nothing to run
        for (int t : threads) {
            Result r;
            r.c = c;
            r.threads = t;
            r.tops.error = create_error;
            r.onednn.error = "skipped";
            results.push_back(r);
        }
        return results;
    }
    size_t ws_bytes = 0;
    void* ws = nullptr;
    if (have_op) {
        inst.kernel = tops_op_kernel_name(inst.op);
        tops_op_workspace_size(inst.op, &ws_bytes);
        ws = ws_bytes ? dev.alloc(ws_bytes) : nullptr;
    }

    double bytes = inst.bytes;
    if (bytes <= 0) {
        for (const TensorSpec& t : inst.tensors) bytes += double(tensor_bytes(t));
    }
    Pool pool(dev, inst, opt);
    std::vector<std::vector<tops_arg_t>> args(pool.size());
    for (size_t k = 0; k < pool.size(); ++k) {
        for (size_t i = 0; i < inst.tensors.size(); ++i) args[k].push_back({inst.tensors[i].arg, pool.set(int(k))[i]});
    }
    const bool is_cpu = dev.backend() == TOPS_BACKEND_CPU;

    for (int t : threads) {
        Result r;
        r.c = c;
        r.args = inst.args;
        r.threads = is_cpu ? t : 0;
        r.bytes = bytes;
        r.flops = inst.flops;
        r.pool_sets = int(pool.size());
        r.pool_bytes = pool.bytes();
        r.cache_state = pool.state();
        r.tops.impl = inst.kernel;
        if (is_cpu) {
            omp_set_num_threads(t);
            tops_context_set_num_threads(ctx, t);
        }
        auto call = [&](int rep) {
            const std::vector<tops_arg_t>& a = args[size_t(rep) % args.size()];
            const tops_status_t st = tops_op_execute(ctx, inst.op, a.data(), a.size(), ws, ws_bytes);
            if (st != TOPS_SUCCESS) {
                throw std::runtime_error(std::string(tops_status_string(st)) + ": " + tops_last_error());
            }
        };
        if (!have_op) {
            r.tops.error = create_error;
        } else {
            try {
                finish(&r.tops, dev.time_calls(call, opt.timing, t), bytes, inst.flops);
                pool.poison_outputs();
                call(0);
                const std::string msg = entry->check(c, inst, pool.download_set0());
                r.tops.check = msg.empty() ? "ok" : msg;
            } catch (const std::exception& e) {
                r.tops.ok = false;
                r.tops.error = e.what();
            }
        }

        auto it = ceilings.find(r.threads);
        if (r.tops.ok && r.flops == 0 && it != ceilings.end() && !it->second.empty()) {
            r.pct_copy = 100.0 * r.tops.gbs / it->second[0].gbs();
            if (it->second.size() > 1) r.pct_copy_nt = 100.0 * r.tops.gbs / it->second[1].gbs();
        }

        if (!is_cpu) {
            r.onednn.error = "CPU only";
        } else if (!opt.onednn) {
            r.onednn.error = "disabled (--no-onednn)";
        } else {
            // Created after omp_set_num_threads: oneDNN kernels size their work
            // split from the thread count at creation.
            std::string why;
            std::unique_ptr<Baseline> base = onednn_prepare(c, inst, &why);
            if (!base) {
                r.onednn.error = why;
            } else {
                r.onednn.impl = base->impl();
                try {
                    auto bcall = [&](int rep) { base->run(pool.set(rep)); };
                    finish(&r.onednn, dev.time_calls(bcall, opt.timing, t), bytes, inst.flops);
                    pool.poison_outputs();
                    bcall(0);
                    const std::string msg = entry->check(c, inst, pool.download_set0());
                    r.onednn.check = msg.empty() ? "ok" : msg;
                } catch (const std::exception& e) {
                    r.onednn.ok = false;
                    r.onednn.error = e.what();
                }
            }
        }
        if (r.tops.ok && r.onednn.ok && r.onednn.gbs > 0) r.ratio = r.tops.gbs / r.onednn.gbs;
        results.push_back(r);
    }
    if (ws) dev.release(ws);
    if (inst.op) tops_op_destroy(inst.op);
    return results;
}

}  // namespace bench
