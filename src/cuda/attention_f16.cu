// f16 instantiations of the attention kernels (attention_configs.cuh lists them).
#include "cuda/attention_configs.cuh"
#include "cuda/attention_kernel.cuh"

namespace tops::cuda::attn {

#define TOPS_ATTN_ENTRY(D, M, N, W, QR, DEC, ROWS) \
    make_config<FwdTraits<__half, D, M, N, W, QR>>(DEC, ROWS, "attention_f16_flash2_d" #D "_" #M "x" #N "_w" #W),

const KernelConfig* kernels_f16(int* count) {
    static const KernelConfig table[] = {TOPS_ATTN_CONFIGS(TOPS_ATTN_ENTRY)};
    *count = int(sizeof(table) / sizeof(table[0]));
    return table;
}

#undef TOPS_ATTN_ENTRY

}  // namespace tops::cuda::attn
