/*
 * Helpers for gavel grader packs written in C, over the bindings wit-bindgen generates from
 * gavel:grader@0.1.0 (bindings/pack_v0.h). Nothing here is required: it spares every pack the
 * same string, config and grade plumbing.
 *
 * Memory: every string a pack returns to gavel (rationales, errors, extracted text, the pack's
 * description) is freed by the generated code with free() after the call, so it must come from
 * malloc: the gv_* setters below always copy. The arguments gavel passes in belong to the pack;
 * each call runs in a fresh instance that is discarded afterwards, so freeing them is optional.
 */
#ifndef GAVEL_H
#define GAVEL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack_v0.h"

/* Shorter names for the generated types a pack touches most. */
typedef pack_v0_string_t gv_string;
typedef exports_gavel_grader_pack_sample_t gv_sample;
typedef exports_gavel_grader_pack_trajectory_t gv_trajectory;
typedef exports_gavel_grader_pack_grade_result_t gv_grade;
typedef exports_gavel_grader_pack_pack_info_t gv_pack_info;
typedef gavel_grader_types_content_t gv_content;
typedef gavel_grader_types_event_t gv_event;

/* ---- Strings (UTF-8, not NUL-terminated: a pointer and a length) ---- */

/* Whether `s` holds exactly the NUL-terminated `text`. */
bool gv_eq(const gv_string *s, const char *text);
/* A NUL-terminated copy of `s` (malloc). */
char *gv_cstr(const gv_string *s);
/* Sets `out` to a malloc'd copy of `text`: what every returned string needs. */
void gv_set(gv_string *out, const char *text);
/* Sets `out` to a malloc'd copy of `len` bytes at `text`. */
void gv_set_n(gv_string *out, const char *text, size_t len);
/* A malloc'd, formatted text. The formats gv_* take know %s, %.*s, %d, %zu, %llu and %%:
   printf itself would link wasi-libc's stdio, whose WASI imports this build has no adapter
   for (README.md, "stdio"). Any other directive traps. */
char *gv_fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* Sets `out` to a malloc'd, formatted text (the formats of gv_fmt). */
void gv_setf(gv_string *out, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Narrows [*text, *text + *len) to leave out leading and trailing ASCII whitespace. */
void gv_trim(const char **text, size_t *len);
/* Whether `needle` occurs in `haystack`; `ignore_case` folds ASCII letters only. */
bool gv_contains(const char *haystack, size_t haystack_len, const char *needle, size_t needle_len,
                 bool ignore_case);
/* The longest prefix of `text` of at most `max` bytes that does not split a UTF-8 character. */
size_t gv_utf8_prefix(const char *text, size_t len, size_t max);

/* ---- Sample and trajectory ---- */

/* The ground truth when it is one text; NULL when the row has none or one per turn. */
const gv_string *gv_ground_truth(const gv_sample *sample);
/* A message's text (multi-part content joined by single spaces), malloc'd and NUL-terminated. */
char *gv_content_text(const gv_content *content);
/* Events across all turns, in order: for (size_t i = 0; i < gv_event_count(t); i++)
   { const gv_event *e = gv_event_at(t, i); ... }. */
size_t gv_event_count(const gv_trajectory *trajectory);
const gv_event *gv_event_at(const gv_trajectory *trajectory, size_t index);
/* The recorded final output, else the last assistant message; malloc'd, or NULL if neither. */
char *gv_final_output(const gv_trajectory *trajectory);
/* How many tool calls the run made; only those of the tool `name` unless it is NULL. */
size_t gv_tool_call_count(const gv_trajectory *trajectory, const char *name);

/* ---- Config: the suite's `config:` as a JSON object ---- */

typedef struct gv_config gv_config;

/* Reads a config (`null` reads as an empty one). NULL (with `err` set) when it is not a
   JSON object. */
gv_config *gv_config_parse(const gv_string *json, gv_string *err);
void gv_config_free(gv_config *config);
/* False (with `err` naming the key and the known ones) when the config has a key that is not
   in the NULL-terminated list `known`: a typo in a suite is caught before any sample runs. */
bool gv_config_only(const gv_config *config, const char *const *known, gv_string *err);
bool gv_config_has(const gv_config *config, const char *key);
/* Each reads `key` into `out` when present and leaves `out` as it was when absent; false (with
   `err` naming the key) when the value has another type. */
bool gv_config_bool(const gv_config *config, const char *key, bool *out, gv_string *err);
bool gv_config_uint(const gv_config *config, const char *key, uint64_t *out, gv_string *err);
/* `out` is malloc'd and NUL-terminated; free the old value yourself if it was malloc'd. */
bool gv_config_text(const gv_config *config, const char *key, char **out, gv_string *err);

/* ---- Grades and errors ---- */

/* Each of these sets the whole grade afresh: call one first, then the setters below.
   gv_pass: score 1; gv_fail: score 0; gv_score: any score in [0, 1], passing at 1. */
void gv_pass(gv_grade *grade, const char *format, ...) __attribute__((format(printf, 2, 3)));
void gv_fail(gv_grade *grade, const char *format, ...) __attribute__((format(printf, 2, 3)));
void gv_score(gv_grade *grade, double score, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
/* What was expected and what was found: a text (stored as a JSON string) or JSON text. */
void gv_expected_text(gv_grade *grade, const char *text, size_t len);
void gv_actual_text(gv_grade *grade, const char *text, size_t len);
void gv_expected_json(gv_grade *grade, const char *json);
void gv_actual_json(gv_grade *grade, const char *json);
/* Metadata: a JSON object's text, e.g. "{\"calls\": 4}". */
void gv_metadata_json(gv_grade *grade, const char *json_object);
/* `text` as a JSON string literal, quotes included (malloc'd, NUL-terminated). */
char *gv_json_quote(const char *text, size_t len);

/* Sets `err` and returns false, so a function can `return gv_error(err, "...")`: gavel turns
   it into an error grade with the reason "guest returned error: <message>". */
bool gv_error(gv_string *err, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* ---- Describing the pack ---- */

/* Fills `info` (call once from exports_gavel_grader_pack_describe); then add each function. */
void gv_describe(gv_pack_info *info, const char *name, const char *version);
void gv_describe_grader(gv_pack_info *info, const char *name, const char *description,
                        bool needs_ground_truth);
void gv_describe_extractor(gv_pack_info *info, const char *name, const char *description);

#endif
