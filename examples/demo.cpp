// The C++ wrapper (tops/tops.hpp) in a few lines: a row softmax on the CPU.
#include <cstdio>
#include <vector>

#include <tops/tops.hpp>

int main() {
    try {
        tops::Context ctx(TOPS_BACKEND_CPU);
        tops_softmax_desc_t d = tops_softmax_desc_default();
        d.x = tops::tensor(TOPS_DTYPE_F32, {2, 4});
        d.y = d.x;
        tops::Op op = tops::Op::softmax(ctx, d);
        std::vector<float> x = {1, 2, 3, 4, 0, 0, 0, 0}, y(8);
        op.execute(ctx, {{TOPS_ARG_X, x.data()}, {TOPS_ARG_Y, y.data()}});
        std::printf("kernel %s\n", op.kernel_name());
        for (int r = 0; r < 2; ++r) {
            for (int c = 0; c < 4; ++c) std::printf("%.4f ", y[r * 4 + c]);
            std::printf("\n");
        }
    } catch (const tops::Error& e) {
        std::fprintf(stderr, "tops error: %s\n", e.what());
        return 1;
    }
    return 0;
}
