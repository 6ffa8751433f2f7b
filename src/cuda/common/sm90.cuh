// Hopper (sm_90a) building blocks: mbarriers, TMA tensor loads and
// warpgroup MMA (wgmma) on operands in 128-byte-swizzled shared memory.
// Only code compiled for sm_90a may call these (wgmma and setmaxnreg are
// arch-specific); the callers guard their bodies with TOPS_SM90A.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/common/mma.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TOPS_SM90A 1
#else
#define TOPS_SM90A 0
#endif

namespace tops::cuda::sm90 {

constexpr int kWarpgroupThreads = 128;
constexpr int kWarpsPerWarpgroup = kWarpgroupThreads / 32;

// --- mbarriers (shared::cta) ------------------------------------------------

// Steps a ring of `stages` mbarrier-guarded stages: the wait parity flips
// each time the ring wraps.
__device__ __forceinline__ void next_stage(int& stage, uint32_t& phase, int stages) {
    if (++stage == stages) {
        stage = 0;
        phase ^= 1u;
    }
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA).
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// One arrival that also expects `bytes` of TMA transactions in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

// --- thread-block clusters (distributed shared memory) ----------------------

// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// Every thread of every CTA of the cluster arrives and waits; memory
// operations before it are visible cluster-wide after it. Not .aligned: the
// threads of a warp may reach it on different paths.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// The shared::cluster address of this CTA's shared address `addr` in CTA `rank`.
__device__ __forceinline__ uint32_t cluster_map(uint32_t addr, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}

// An asynchronous store into another CTA's shared memory (`remote` and
// `remote_bar` from cluster_map) that completes its 16 bytes of transaction
// count on that CTA's mbarrier: the receiver's wait on that barrier makes the
// data visible, with no fence on this side.
__device__ __forceinline__ void cluster_store_async_v4(uint32_t remote, float4 v, uint32_t remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                     remote),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote_bar)
                 : "memory");
}

__device__ __forceinline__ float4 shared_load_v4(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

// Arrives on an mbarrier of another CTA of the cluster (`remote` from
// cluster_map), releasing this thread's earlier writes cluster-wide.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t remote) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// mbar_wait for a phase completed by other CTAs' arrivals: acquires their writes.
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

// --- TMA ----------------------------------------------------------------------

__device__ __forceinline__ void tma_prefetch_desc(const void* tmap) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(tmap)) : "memory");
}

// Box of a 3-D tensor map at coordinates (c0 innermost, c1, c2) -> shared
// `dst`; completion is counted on `bar` in bytes. Out-of-range elements are
// written as zeros.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* tmap, uint32_t bar, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

// Shared `src` -> the box of a 3-D tensor map at (c0, c1, c2); elements past
// the tensor's extent are not written. Committed with bulk_commit().
__device__ __forceinline__ void tma_store_3d(const void* tmap, uint32_t src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                     reinterpret_cast<uint64_t>(tmap)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
}

// The 4-D forms: (c0 innermost, c1, c2, c3).
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const void* tmap, uint32_t bar, int c0, int c1, int c2,
                                            int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
        "%5}], [%6];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
        : "memory");
}

__device__ __forceinline__ void tma_store_4d(const void* tmap, uint32_t src, int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                     reinterpret_cast<uint64_t>(tmap)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}

// The 5-D forms: c[0] innermost.
__device__ __forceinline__ void tma_load_5d(uint32_t dst, const void* tmap, uint32_t bar, const int (&c)[5]) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
        "%5, %6}], [%7];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(bar)
        : "memory");
}

__device__ __forceinline__ void tma_store_5d(const void* tmap, uint32_t src, const int (&c)[5]) {
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4, %5}], [%6];\n" ::"l"(
                     reinterpret_cast<uint64_t>(tmap)),
                 "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(src)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Waits until at most N committed bulk stores still read their shared source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// Waits until at most N committed bulk stores are incomplete.
template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy (TMA) reads of them.
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// --- warpgroup register budget -------------------------------------------------

template <int REGS>
__device__ __forceinline__ void warpgroup_reg_alloc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <int REGS>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// --- wgmma ----------------------------------------------------------------------

// Bytes of one swizzle atom row and the atom (8 rows): the K-major tile of a
// 128-byte-swizzled operand is rows of 64 16-bit values, 8-row atoms 1 KiB apart.
constexpr uint32_t kSwizzleRowBytes = 128;
constexpr uint32_t kSwizzleAtomBytes = 8 * kSwizzleRowBytes;

// Shared-memory matrix descriptor of a K-major, 128-byte-swizzled operand
// starting at `addr` (the atom base must be 1 KiB aligned; addr may step
// along K inside the atom row in 32-byte units, one k16 slice of 16-bit data).
__device__ __forceinline__ uint64_t smem_desc_k_sw128(uint32_t addr) {
    constexpr uint64_t kSwizzle128 = 1;  // layout type field (bits 62-63)
    uint64_t d = uint64_t((addr & 0x3FFFF) >> 4);
    d |= uint64_t(1) << 16;                               // leading byte offset: unused when swizzled K-major
    d |= uint64_t(kSwizzleAtomBytes >> 4) << 32;          // stride byte offset: next 8-row atom
    d |= kSwizzle128 << 62;
    return d;
}

// Descriptor of an N-major (transposed) 128-byte-swizzled B operand: rows
// of K, each 64 contiguous 16-bit N values (128 bytes), 8-row atoms 1 KiB
// apart along K; the next 64 N values sit `n_chunk_bytes` further on.
__device__ __forceinline__ uint64_t smem_desc_n_sw128(uint32_t addr, uint32_t n_chunk_bytes) {
    constexpr uint64_t kSwizzle128 = 1;
    uint64_t d = uint64_t((addr & 0x3FFFF) >> 4);
    d |= uint64_t(n_chunk_bytes >> 4) << 16;              // leading byte offset: next 64 N values
    d |= uint64_t(kSwizzleAtomBytes >> 4) << 32;          // stride byte offset: next 8 K rows
    d |= kSwizzle128 << 62;
    return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across an
// in-flight wgmma.
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The same for register A fragments (K slices of four 16-bit pairs): an
// in-flight wgmma still reads them, so they stay put until this point.
template <int K>
__device__ __forceinline__ void wgmma_fence_operands(uint32_t (&a)[K][4]) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[k][i])::"memory");
    }
}

// Accumulator operand lists of the wgmma wrappers, 32 registers per piece:
// %0..%31, then %32..%63, and so on; d[i] is bound to %i.
#define TOPS_WGMMA_ACC_0 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TOPS_WGMMA_ACC_1 \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TOPS_WGMMA_ACC_2 \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define TOPS_WGMMA_ACC_3 \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TOPS_WGMMA_OPS_0(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define TOPS_WGMMA_OPS_1(d) \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define TOPS_WGMMA_OPS_2(d) \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define TOPS_WGMMA_OPS_3(d) \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define TOPS_WGMMA_ACC_LIST_32 TOPS_WGMMA_ACC_0
#define TOPS_WGMMA_ACC_LIST_64 TOPS_WGMMA_ACC_0 ", " TOPS_WGMMA_ACC_1
#define TOPS_WGMMA_ACC_LIST_128 TOPS_WGMMA_ACC_LIST_64 ", " TOPS_WGMMA_ACC_2 ", " TOPS_WGMMA_ACC_3
#define TOPS_WGMMA_OPS_32(d) TOPS_WGMMA_OPS_0(d)
#define TOPS_WGMMA_OPS_64(d) TOPS_WGMMA_OPS_0(d), TOPS_WGMMA_OPS_1(d)
#define TOPS_WGMMA_OPS_128(d) TOPS_WGMMA_OPS_64(d), TOPS_WGMMA_OPS_2(d), TOPS_WGMMA_OPS_3(d)

// Fragment layout of every D below (and of the register A operand): warp w
// of the warpgroup holds rows 16w..16w+15; d[4c + 2h + e] is row
// 16w + lane/4 + 8h, column 8c + 2(lane%4) + e. A register A fragment of a
// k16 slice is four 16-bit pairs: (row, k) = (g, 2t), (g + 8, 2t),
// (g, 2t + 8), (g + 8, 2t + 8) with g = lane/4, t = lane%4 (mma.m16n8k16's A).

// D(64xN, f32) (+)= A(64x16) B(16xN) with A and B^T K-major in shared memory
// (two descriptors); accumulate == 0 overwrites D.
template <class T, int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, uint32_t accumulate);

// D(64xN, f32) += A(64x16) B(16xN): A from registers, B N-major in shared
// memory (N contiguous: a transposed operand, e.g. V of P V).
template <class T, int N>
__device__ __forceinline__ void wgmma_rs_nmajor(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                uint32_t accumulate);

// D(64xN, f32) (+)= A(64x16) B(16xN): A from registers, B^T K-major in
// shared memory (as wgmma_ss's B); accumulate == 0 overwrites D.
template <class T, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                         uint32_t accumulate);

// The operand indices after the NACC accumulators are spelled out per form.
#define TOPS_WGMMA_SS(T, PTX_TYPE, N, LIST, OPS, IA, IB, IP)                                                    \
    template <>                                                                                               \
    __device__ __forceinline__ void wgmma_ss<T, N>(float(&d)[N / 2], uint64_t desc_a, uint64_t desc_b,         \
                                                   uint32_t accumulate) {                                     \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IP ", 0;\n"                                        \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " {" LIST "}, %" #IA \
                     ", %" #IB ", p, 1, 1, 0, 0;\n}\n"                                                         \
                     : OPS(d)                                                                                 \
                     : "l"(desc_a), "l"(desc_b), "r"(accumulate));                                            \
    }

// FN: wgmma_rs_nmajor (TRANS_B 1) or wgmma_rs (TRANS_B 0).
#define TOPS_WGMMA_RS_FORM(FN, TRANS_B, T, PTX_TYPE, N, LIST, OPS, IA0, IA1, IA2, IA3, IB, IP)                   \
    template <>                                                                                               \
    __device__ __forceinline__ void FN<T, N>(float(&d)[N / 2], const uint32_t(&a)[4], uint64_t desc_b,         \
                                             uint32_t accumulate) {                                           \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IP ", 0;\n"                                        \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " {" LIST "}, {%" #IA0 \
                     ", %" #IA1 ", %" #IA2 ", %" #IA3 "}, %" #IB ", p, 1, 1, " #TRANS_B ";\n}\n"                 \
                     : OPS(d)                                                                                 \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));             \
    }
#define TOPS_WGMMA_RS_NMAJOR(...) TOPS_WGMMA_RS_FORM(wgmma_rs_nmajor, 1, __VA_ARGS__)
#define TOPS_WGMMA_RS(...) TOPS_WGMMA_RS_FORM(wgmma_rs, 0, __VA_ARGS__)

TOPS_WGMMA_SS(__half, "f16", 256, TOPS_WGMMA_ACC_LIST_128, TOPS_WGMMA_OPS_128, 128, 129, 130)
TOPS_WGMMA_SS(__nv_bfloat16, "bf16", 256, TOPS_WGMMA_ACC_LIST_128, TOPS_WGMMA_OPS_128, 128, 129, 130)
TOPS_WGMMA_SS(__half, "f16", 64, TOPS_WGMMA_ACC_LIST_32, TOPS_WGMMA_OPS_32, 32, 33, 34)
TOPS_WGMMA_SS(__nv_bfloat16, "bf16", 64, TOPS_WGMMA_ACC_LIST_32, TOPS_WGMMA_OPS_32, 32, 33, 34)
TOPS_WGMMA_SS(__half, "f16", 128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66)
TOPS_WGMMA_SS(__nv_bfloat16, "bf16", 128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66)
TOPS_WGMMA_RS_NMAJOR(__half, "f16", 128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66, 67, 68, 69)
TOPS_WGMMA_RS_NMAJOR(__nv_bfloat16, "bf16", 128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66, 67, 68, 69)
TOPS_WGMMA_RS_NMAJOR(__half, "f16", 64, TOPS_WGMMA_ACC_LIST_32, TOPS_WGMMA_OPS_32, 32, 33, 34, 35, 36, 37)
TOPS_WGMMA_RS_NMAJOR(__nv_bfloat16, "bf16", 64, TOPS_WGMMA_ACC_LIST_32, TOPS_WGMMA_OPS_32, 32, 33, 34, 35, 36, 37)
TOPS_WGMMA_RS(__half, "f16", 128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66, 67, 68, 69)
TOPS_WGMMA_RS(__nv_bfloat16, "bf16", 128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66, 67, 68, 69)

// D(64xN, f32) (+)= A(64x8) B(8xN), TF32 operands (f32 bits, low 13 mantissa
// bits ignored), A and B^T K-major in shared memory: a k8 slice is 32 bytes
// of a 128-byte swizzle row, as a k16 slice of 16-bit data.
template <int N>
__device__ __forceinline__ void wgmma_ss_tf32(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                              uint32_t accumulate);

#define TOPS_WGMMA_SS_TF32(N, LIST, OPS, IA, IB, IP)                                                           \
    template <>                                                                                               \
    __device__ __forceinline__ void wgmma_ss_tf32<N>(float(&d)[N / 2], uint64_t desc_a, uint64_t desc_b,       \
                                                     uint32_t accumulate) {                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IP ", 0;\n"                                        \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" LIST "}, %" #IA ", %" #IB       \
                     ", p, 1, 1;\n}\n"                                                                        \
                     : OPS(d)                                                                                 \
                     : "l"(desc_a), "l"(desc_b), "r"(accumulate));                                            \
    }

TOPS_WGMMA_SS_TF32(128, TOPS_WGMMA_ACC_LIST_64, TOPS_WGMMA_OPS_64, 64, 65, 66)
TOPS_WGMMA_SS_TF32(64, TOPS_WGMMA_ACC_LIST_32, TOPS_WGMMA_OPS_32, 32, 33, 34)

#undef TOPS_WGMMA_SS
#undef TOPS_WGMMA_SS_TF32
#undef TOPS_WGMMA_RS_NMAJOR
#undef TOPS_WGMMA_RS
#undef TOPS_WGMMA_RS_FORM

}  // namespace tops::cuda::sm90
