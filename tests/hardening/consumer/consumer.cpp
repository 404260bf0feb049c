// The C++ outside program (tools/check-install.sh, pkg-config and CMake): the placement layer
// from C++ — a 2-sub-layer SiameseNorm network forward on a toy block, checking that the
// output is finite and normalised (the merge's final LayerNorm: each row has mean 0 and
// variance ~1 with default parameters).
#include <siamesenorm.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
    const int S = 2;
    const std::int64_t R = 3, D = 16;
    sn_net net;
    if (sn_net_init(&net, SN_PLACEMENT_SIAMESE, S, D, SN_NORM_LAYERNORM, 1e-5f) != SN_OK) return 1;
    std::int64_t np = 0, apr = 0, wpr = 0;
    if (sn_net_sizes(&net, &np, &apr, &wpr) != SN_OK) return 1;
    std::vector<float> params(np), acts(R * apr), e(R * D), h(R * D), z(R * D), out(R * D);
    sn_net_init_params(&net, params.data());
    for (std::int64_t k = 0; k < R * D; k++) e[k] = std::sin(0.3f * static_cast<float>(k));
    sn_net_pass pass{};
    pass.rows = R, pass.params = params.data(), pass.acts = acts.data();
    sn_status st = sn_net_split(nullptr, &net, &pass, e.data(), D);
    for (int i = 0; i < S && st == SN_OK; i++) {
        st = sn_net_enter(nullptr, &net, &pass, i, h.data(), D);
        for (std::int64_t k = 0; k < R * D; k++) z[k] = 0.5f * std::tanh(h[k]);
        if (st == SN_OK) st = sn_net_exit(nullptr, &net, &pass, i, z.data(), D);
    }
    if (st == SN_OK) st = sn_net_merge(nullptr, &net, &pass, out.data(), D);
    if (st != SN_OK) {
        std::printf("C++ consumer: %s\n", sn_status_string(st));
        return 1;
    }
    for (std::int64_t r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (std::int64_t j = 0; j < D; j++) m += out[r * D + j];
        m /= D;
        for (std::int64_t j = 0; j < D; j++) v += (out[r * D + j] - m) * (out[r * D + j] - m);
        v /= D;
        if (!(std::fabs(m) < 1e-5 && std::fabs(v - 1.0) < 1e-3)) {
            std::printf("C++ consumer: row %lld mean %g variance %g\n", static_cast<long long>(r),
                        m, v);
            return 1;
        }
    }
    std::printf("C++ consumer: siamese network ok, libsiamesenorm %s\n", sn_version_string());
    return 0;
}
