/*
 * empty: the smallest pack, one grader that reads nothing and passes. It is built with the same
 * toolchain and runtime as c-graders, so the time gavel takes to call it is the cost of a call
 * itself: a fresh instance, the sample handed in, the grade handed back. `cargo bench -p gavel
 * --bench pack_calls` measures the other graders against it.
 */
#include "gavel.h"

void exports_gavel_grader_pack_describe(exports_gavel_grader_pack_pack_info_t *ret) {
    gv_describe(ret, "empty", "0.1.0");
    gv_describe_grader(ret, "pass", "Passes every sample without reading it", false);
}

bool exports_gavel_grader_pack_check_config(pack_v0_string_t *name, exports_gavel_grader_pack_json_t *json,
                                            pack_v0_string_t *err) {
    (void)json;
    return gv_eq(name, "pass") || gv_error(err, "empty has one function: pass");
}

bool exports_gavel_grader_pack_grade(pack_v0_string_t *name, exports_gavel_grader_pack_sample_t *sample,
                                     exports_gavel_grader_pack_trajectory_t *trajectory, pack_v0_string_t *submission,
                                     exports_gavel_grader_pack_json_t *json, exports_gavel_grader_pack_grade_result_t *ret,
                                     pack_v0_string_t *err) {
    (void)name, (void)sample, (void)trajectory, (void)submission, (void)json, (void)err;
    gv_pass(ret, "passed");
    return true;
}

bool exports_gavel_grader_pack_extract(pack_v0_string_t *name, exports_gavel_grader_pack_sample_t *sample,
                                       exports_gavel_grader_pack_trajectory_t *trajectory,
                                       exports_gavel_grader_pack_json_t *json, pack_v0_option_string_t *ret,
                                       pack_v0_string_t *err) {
    (void)name, (void)sample, (void)trajectory, (void)json, (void)ret;
    return gv_error(err, "empty has no extractor");
}
