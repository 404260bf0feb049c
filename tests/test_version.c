/* Version macros vs the runtime calls; sn_status_string for every code and unknown codes;
 * context create/destroy. */
#include "testutil.h"

int main(void) {
    char buf[64];
    CHECK(sn_version_number() == (unsigned)SN_VERSION_NUMBER);
    CHECK(sn_version_number() ==
          (unsigned)(SN_VERSION_MAJOR * 10000 + SN_VERSION_MINOR * 100 + SN_VERSION_PATCH));
    CHECK(sn_version_string() != NULL);
    CHECK(strcmp(sn_version_string(), SN_VERSION_STRING) == 0);
    snprintf(buf, sizeof buf, "%d.%d.%d", SN_VERSION_MAJOR, SN_VERSION_MINOR, SN_VERSION_PATCH);
    CHECK_MSG(strcmp(SN_VERSION_STRING, buf) == 0, "SN_VERSION_STRING %s vs macros %s",
              SN_VERSION_STRING, buf);
    CHECK(sn_version_string() == sn_version_string()); /* static storage */

    /* every status has its own non-empty English description */
    const char *s[SN_ERR_STREAMS + 1];
    for (int k = SN_OK; k <= SN_ERR_STREAMS; k++) {
        s[k] = sn_status_string((sn_status)k);
        CHECK_MSG(s[k] != NULL && s[k][0] != '\0', "status %d has no string", k);
        if (s[k])
            CHECK_MSG(strcmp(s[k], "unknown status") != 0, "status %d described as unknown", k);
        for (int j = 0; j < k; j++)
            if (s[k] && s[j])
                CHECK_MSG(strcmp(s[k], s[j]) != 0, "status %d and %d share the string \"%s\"", j, k,
                          s[k]);
    }
    static const int unknown[] = {SN_ERR_STREAMS + 1, 19, 99, -1, 1000000, -2147483647 - 1};
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        const char *u = sn_status_string((sn_status)unknown[k]);
        CHECK_MSG(u != NULL && strcmp(u, "unknown status") == 0, "status %d -> \"%s\"", unknown[k],
                  u ? u : "(null)");
    }

    /* contexts */
    sn_ctx *ctx = (sn_ctx *)&buf; /* must be overwritten */
    CHECK_OK(sn_ctx_create(&ctx));
    CHECK(ctx != NULL && ctx != (sn_ctx *)&buf);
    sn_ctx_destroy(ctx);
    sn_ctx_destroy(NULL);
    CHECK_STATUS(sn_ctx_create(NULL), SN_ERR_NULL);
    return tu_finish("test_version");
}
