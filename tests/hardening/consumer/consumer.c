/* An outside program using the installed library (built by tools/check-install.sh with
 * pkg-config and with CMake): normalises the row 1, 2, 3, 4 and checks the exact result
 * (mean 2.5, variance 1.25: out = (x - 2.5) / sqrt(1.25 + eps)) and the runtime version. */
#include <siamesenorm.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_NONE, 0, 1e-5f};
    const float x[4] = {1, 2, 3, 4};
    float out[4];
    sn_status st = sn_norm_forward(NULL, &n, 1, 4, x, 4, NULL, out, 4, NULL);
    if (st != SN_OK) {
        printf("sn_norm_forward: %s\n", sn_status_string(st));
        return 1;
    }
    for (int j = 0; j < 4; j++) {
        double want = ((double)x[j] - 2.5) / sqrt(1.25 + 1e-5);
        if (fabs((double)out[j] - want) > 1e-6) {
            printf("out[%d] = %.9g, want %.9g\n", j, (double)out[j], want);
            return 1;
        }
    }
    if (strcmp(sn_version_string(), SN_VERSION_STRING) != 0) {
        printf("library %s, header %s\n", sn_version_string(), SN_VERSION_STRING);
        return 1;
    }
    printf("C consumer: layernorm ok, libsiamesenorm %s\n", sn_version_string());
    return 0;
}
