/*
 * The {{name}} pack: a grader and an extractor in C, built as a component of gavel:grader@0.1.0.
 *
 * gavel calls four exported functions (declared in bindings/pack_v0.h): describe, check-config,
 * grade and extract. The last three receive the function's name and dispatch on it here.
 * gavel.h has the helpers; README.md walks through adding a function.
 */
#include <stdlib.h>
#include <string.h>

#include "gavel.h"

/* ---- contains_answer: the ground truth appears in the submission ---- */

static const char *const CONTAINS_ANSWER_KEYS[] = {"case_sensitive", NULL};

static bool contains_answer(const gv_sample *sample, const gv_string *submission, const gv_config *config,
                            gv_grade *ret, gv_string *err) {
    bool case_sensitive = false;
    if (!gv_config_bool(config, "case_sensitive", &case_sensitive, err)) return false;
    const gv_string *truth = gv_ground_truth(sample);
    if (truth == NULL) return gv_error(err, "the sample has no ground_truth");

    const char *answer = (const char *)truth->ptr;
    size_t answer_len = truth->len;
    gv_trim(&answer, &answer_len);
    const char *text = (const char *)submission->ptr;
    size_t text_len = submission->len;
    gv_trim(&text, &text_len);

    if (gv_contains(text, text_len, answer, answer_len, !case_sensitive)) {
        gv_pass(ret, "found '%.*s'", (int)answer_len, answer);
    } else {
        gv_fail(ret, "'%.*s' is not in the answer", (int)answer_len, answer);
        gv_expected_text(ret, answer, answer_len);
        gv_actual_text(ret, text, text_len);
    }
    return true;
}

/* ---- final_answer: the text after the last marker ---- */

static const char *const FINAL_ANSWER_KEYS[] = {"marker", NULL};

static bool final_answer(const gv_trajectory *trajectory, const gv_config *config, pack_v0_option_string_t *ret,
                         gv_string *err) {
    char *marker = NULL;
    if (!gv_config_text(config, "marker", &marker, err)) return false;
    const char *wanted = marker != NULL ? marker : "FINAL ANSWER:";
    size_t wanted_len = strlen(wanted);
    ret->is_some = false;
    /* Messages from the last to the first; in a message, the last marker. */
    for (size_t i = gv_event_count(trajectory); i-- > 0 && !ret->is_some;) {
        const gv_event *event = gv_event_at(trajectory, i);
        if (event->tag != GAVEL_GRADER_TYPES_EVENT_ASSISTANT) continue;
        char *text = gv_content_text(&event->val.assistant);
        const char *found = NULL;
        for (const char *at = strstr(text, wanted); at != NULL; at = strstr(at + 1, wanted)) found = at;
        if (found != NULL && wanted_len > 0) {
            const char *answer = found + wanted_len;
            size_t len = strcspn(answer, "\n");
            gv_trim(&answer, &len);
            ret->is_some = true;
            gv_set_n(&ret->val, answer, len);
        }
        free(text);
    }
    free(marker);
    return true;
}

/* ---- The exports ---- */

void exports_gavel_grader_pack_describe(exports_gavel_grader_pack_pack_info_t *ret) {
    gv_describe(ret, "{{name}}", "0.1.0");
    gv_describe_grader(ret, "contains_answer", "The submission contains the ground truth (case-insensitive unless configured)", true);
    gv_describe_extractor(ret, "final_answer", "The text after the last 'FINAL ANSWER:' in the agent's messages");
}

/* The config keys a function accepts; NULL for a name the pack does not provide. */
static const char *const *known_keys(const gv_string *name) {
    if (gv_eq(name, "contains_answer")) return CONTAINS_ANSWER_KEYS;
    if (gv_eq(name, "final_answer")) return FINAL_ANSWER_KEYS;
    return NULL;
}

/* Parses the config and checks its keys: the part every call shares. */
static gv_config *open_config(const gv_string *name, const gv_string *json, gv_string *err) {
    const char *const *keys = known_keys(name);
    if (keys == NULL) {
        gv_error(err, "{{name}} has no function `%.*s`; it provides contains_answer (grader) and final_answer (extractor)",
                 (int)name->len, (const char *)name->ptr);
        return NULL;
    }
    gv_config *config = gv_config_parse(json, err);
    if (config != NULL && !gv_config_only(config, keys, err)) {
        gv_config_free(config);
        return NULL;
    }
    return config;
}

bool exports_gavel_grader_pack_check_config(pack_v0_string_t *name, exports_gavel_grader_pack_json_t *json,
                                            pack_v0_string_t *err) {
    gv_config *config = open_config(name, json, err);
    if (config == NULL) return false;
    bool ok = true;
    if (gv_eq(name, "contains_answer")) {
        bool ignored;
        ok = gv_config_bool(config, "case_sensitive", &ignored, err);
    } else if (gv_eq(name, "final_answer")) {
        char *marker = NULL;
        ok = gv_config_text(config, "marker", &marker, err);
        if (ok && marker != NULL && marker[0] == '\0') ok = gv_error(err, "config.marker: must not be empty");
        free(marker);
    }
    gv_config_free(config);
    return ok;
}

bool exports_gavel_grader_pack_grade(pack_v0_string_t *name, exports_gavel_grader_pack_sample_t *sample,
                                     exports_gavel_grader_pack_trajectory_t *trajectory, pack_v0_string_t *submission,
                                     exports_gavel_grader_pack_json_t *json, exports_gavel_grader_pack_grade_result_t *ret,
                                     pack_v0_string_t *err) {
    (void)trajectory;
    gv_config *config = open_config(name, json, err);
    if (config == NULL) return false;
    bool ok;
    if (gv_eq(name, "contains_answer")) {
        ok = contains_answer(sample, submission, config, ret, err);
    } else {
        ok = gv_error(err, "`%.*s` is an extractor, not a grader", (int)name->len, (const char *)name->ptr);
    }
    gv_config_free(config);
    return ok;
}

bool exports_gavel_grader_pack_extract(pack_v0_string_t *name, exports_gavel_grader_pack_sample_t *sample,
                                       exports_gavel_grader_pack_trajectory_t *trajectory,
                                       exports_gavel_grader_pack_json_t *json, pack_v0_option_string_t *ret,
                                       pack_v0_string_t *err) {
    (void)sample;
    gv_config *config = open_config(name, json, err);
    if (config == NULL) return false;
    bool ok;
    if (gv_eq(name, "final_answer")) {
        ok = final_answer(trajectory, config, ret, err);
    } else {
        ok = gv_error(err, "`%.*s` is a grader, not an extractor", (int)name->len, (const char *)name->ptr);
    }
    gv_config_free(config);
    return ok;
}
