// The one list of compiled attention forward configurations (each dtype file
// instantiates every row for its dtype). Columns: head dim, BLOCK_M, BLOCK_N,
// warps, Q fragments kept in registers, decode (small-Sq) tiles.
//
// Why these tiles (H100, see docs/performance.md):
// - Warps own 32 query rows (two m16 tiles) for head dims <= 128, so each K/V
//   fragment read from shared memory feeds two mma: with 16 rows per warp
//   the ldmatrix traffic alone (~160 B/clk/SM at full mma.sync rate) would
//   exceed the 128 B/clk shared-memory port.
// - d <= 64 keeps Q fragments in registers (32 regs); from d 96 on, the O
//   accumulator (96-128 f32 regs) leaves no room, so Q is re-read per tile.
// - d 64: 128x128 tiles (Q re-read) for unbounded rows, 128x64 (Q in
//   registers) when a right bound (causal) or a varlen sequence end cuts the
//   last tile of each row block. Measured on an H200, f16, TFLOP/s 128x64 /
//   128x128: full n512 251 / 266, n2048 311 / 314; causal n512 150 / 142,
//   n8192 302 / 296. H100, the BERT encoder's varlen attention (32 sequences
//   of 256-512 tokens, 12 heads, 12 layers): 1.077-1.083 / 1.155-1.174 ms.
// - d 128: 128x64 (FA2's tile). Measured (f16, full n2048 / n8192, causal
//   n8192): 128x64 313 / 321 / 292, 128x32 311 / 318 / 293, 64x64 with Q in
//   registers and 16 rows per warp 272 / 273 / 269 (shared-memory bound).
// - d 256: 16 rows per warp (O alone is 128 f32 regs) and 8 warps, 64-key
//   tiles; two K/V stages take 198 KiB of shared memory: one block per SM.
// - Decode (Sq <= kDecodeMaxSq): one warp and 16 query rows per block, so a
//   single query does not pay for 128-row tiles; split-KV fills the GPU.
#pragma once

#define TOPS_ATTN_CONFIGS(X)                  \
    X(32, 128, 128, 4, true, false, kAnyRows) \
    X(64, 128, 128, 4, false, false, kFull)   \
    X(64, 128, 64, 4, true, false, kBanded)   \
    X(96, 128, 64, 4, false, false, kAnyRows) \
    X(128, 128, 64, 4, false, false, kAnyRows) \
    X(256, 128, 64, 8, false, false, kAnyRows) \
    X(64, 16, 64, 1, true, true, kAnyRows)    \
    X(128, 16, 64, 1, true, true, kAnyRows)

namespace tops::cuda::attn {
constexpr int kDecodeMaxSq = 16;
}  // namespace tops::cuda::attn
