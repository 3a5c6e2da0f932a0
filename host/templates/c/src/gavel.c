/* Helpers for gavel grader packs in C: see gavel.h. */
#include "gavel.h"

#include <stdlib.h>
#include <string.h>

/* ---- Strings ---- */

/* Out of memory in a grader: trap, which gavel reports as an error grade. */
static void *checked(void *ptr) {
    if (ptr == NULL) abort();
    return ptr;
}

bool gv_eq(const gv_string *s, const char *text) {
    size_t len = strlen(text);
    return s->len == len && memcmp(s->ptr, text, len) == 0;
}

char *gv_cstr(const gv_string *s) {
    char *copy = checked(malloc(s->len + 1));
    memcpy(copy, s->ptr, s->len);
    copy[s->len] = '\0';
    return copy;
}

void gv_set_n(gv_string *out, const char *text, size_t len) {
    /* One byte more so that an empty text still gets a pointer of its own to free. */
    uint8_t *copy = checked(malloc(len + 1));
    memcpy(copy, text, len);
    out->ptr = copy;
    out->len = len;
}

void gv_set(gv_string *out, const char *text) { gv_set_n(out, text, strlen(text)); }

/* A growing text buffer for the formatter below. */
typedef struct {
    char *text;
    size_t len;
    size_t capacity;
} buffer;

static void append(buffer *b, const char *text, size_t len) {
    if (b->len + len + 1 > b->capacity) {
        while (b->len + len + 1 > b->capacity) b->capacity = b->capacity ? b->capacity * 2 : 64;
        b->text = checked(realloc(b->text, b->capacity));
    }
    memcpy(b->text + b->len, text, len);
    b->len += len;
    b->text[b->len] = '\0';
}

static void append_unsigned(buffer *b, unsigned long long value, bool negative) {
    char digits[24];
    size_t at = sizeof digits;
    do {
        digits[--at] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    if (negative) digits[--at] = '-';
    append(b, digits + at, sizeof digits - at);
}

/* printf's own formatting would link wasi-libc's stdio, which imports WASI file descriptors
   that this pack's component does not have; this covers what graders need. */
static char *vformat(const char *format, va_list args) {
    buffer b = {NULL, 0, 0};
    append(&b, "", 0);
    for (const char *at = format; *at != '\0'; at++) {
        if (*at != '%') {
            append(&b, at, 1);
            continue;
        }
        at++;
        if (*at == '%') {
            append(&b, "%", 1);
        } else if (*at == 's') {
            const char *text = va_arg(args, const char *);
            append(&b, text, strlen(text));
        } else if (at[0] == '.' && at[1] == '*' && at[2] == 's') {
            int len = va_arg(args, int);
            const char *text = va_arg(args, const char *);
            append(&b, text, len > 0 ? (size_t)len : 0);
            at += 2;
        } else if (*at == 'd') {
            int value = va_arg(args, int);
            append_unsigned(&b, value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value, value < 0);
        } else if (at[0] == 'z' && at[1] == 'u') {
            append_unsigned(&b, va_arg(args, size_t), false);
            at += 1;
        } else if (at[0] == 'l' && at[1] == 'l' && at[2] == 'u') {
            append_unsigned(&b, va_arg(args, unsigned long long), false);
            at += 2;
        } else {
            /* An unsupported directive is a bug in the pack: trap rather than print garbage. */
            abort();
        }
    }
    return b.text;
}

char *gv_fmt(const char *format, ...) {
    va_list args;
    va_start(args, format);
    char *text = vformat(format, args);
    va_end(args);
    return text;
}

static void take(gv_string *out, char *text) {
    out->ptr = (uint8_t *)text;
    out->len = strlen(text);
}

void gv_setf(gv_string *out, const char *format, ...) {
    va_list args;
    va_start(args, format);
    take(out, vformat(format, args));
    va_end(args);
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

void gv_trim(const char **text, size_t *len) {
    while (*len > 0 && is_space((*text)[0])) {
        (*text)++;
        (*len)--;
    }
    while (*len > 0 && is_space((*text)[*len - 1])) (*len)--;
}

static char fold(char c, bool ignore_case) {
    return (ignore_case && c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

bool gv_contains(const char *haystack, size_t haystack_len, const char *needle, size_t needle_len,
                 bool ignore_case) {
    if (needle_len == 0) return true;
    for (size_t start = 0; start + needle_len <= haystack_len; start++) {
        size_t i = 0;
        while (i < needle_len && fold(haystack[start + i], ignore_case) == fold(needle[i], ignore_case)) i++;
        if (i == needle_len) return true;
    }
    return false;
}

size_t gv_utf8_prefix(const char *text, size_t len, size_t max) {
    if (len <= max) return len;
    size_t end = max;
    /* Step back over continuation bytes (10xxxxxx) to the start of the cut character. */
    while (end > 0 && (((unsigned char)text[end]) & 0xC0) == 0x80) end--;
    return end;
}

/* ---- Sample and trajectory ---- */

const gv_string *gv_ground_truth(const gv_sample *sample) {
    if (!sample->ground_truth.is_some || sample->ground_truth.val.tag != GAVEL_GRADER_TYPES_TEXTS_ONE) {
        return NULL;
    }
    return &sample->ground_truth.val.val.one;
}

char *gv_content_text(const gv_content *content) {
    if (content->tag == GAVEL_GRADER_TYPES_CONTENT_TEXT) return gv_cstr(&content->val.text);
    const pack_v0_list_string_t *parts = &content->val.parts;
    size_t len = 0;
    for (size_t i = 0; i < parts->len; i++) len += parts->ptr[i].len + 1;
    char *text = checked(malloc(len + 1));
    size_t at = 0;
    for (size_t i = 0; i < parts->len; i++) {
        if (i > 0) text[at++] = ' ';
        memcpy(text + at, parts->ptr[i].ptr, parts->ptr[i].len);
        at += parts->ptr[i].len;
    }
    text[at] = '\0';
    return text;
}

size_t gv_event_count(const gv_trajectory *trajectory) {
    size_t count = 0;
    for (size_t turn = 0; turn < trajectory->turns.len; turn++) count += trajectory->turns.ptr[turn].len;
    return count;
}

const gv_event *gv_event_at(const gv_trajectory *trajectory, size_t index) {
    for (size_t turn = 0; turn < trajectory->turns.len; turn++) {
        const gavel_grader_types_list_event_t *events = &trajectory->turns.ptr[turn];
        if (index < events->len) return &events->ptr[index];
        index -= events->len;
    }
    return NULL;
}

char *gv_final_output(const gv_trajectory *trajectory) {
    if (trajectory->output.is_some) return gv_cstr(&trajectory->output.val);
    for (size_t i = gv_event_count(trajectory); i-- > 0;) {
        const gv_event *event = gv_event_at(trajectory, i);
        if (event->tag == GAVEL_GRADER_TYPES_EVENT_ASSISTANT) return gv_content_text(&event->val.assistant);
    }
    return NULL;
}

size_t gv_tool_call_count(const gv_trajectory *trajectory, const char *name) {
    size_t count = 0;
    for (size_t turn = 0; turn < trajectory->turns.len; turn++) {
        const gavel_grader_types_list_event_t *events = &trajectory->turns.ptr[turn];
        for (size_t i = 0; i < events->len; i++) {
            const gv_event *event = &events->ptr[i];
            if (event->tag != GAVEL_GRADER_TYPES_EVENT_TOOL_CALL) continue;
            if (name == NULL || gv_eq(&event->val.tool_call.name, name)) count++;
        }
    }
    return count;
}

/* ---- Config ---- */

typedef enum { KIND_STRING, KIND_NUMBER, KIND_BOOL, KIND_NULL, KIND_OBJECT, KIND_ARRAY } kind;

typedef struct {
    char *key;
    kind kind;
    char *text;       /* KIND_STRING: the decoded string; others: the value's JSON text */
    bool boolean;
} entry;

struct gv_config {
    entry *entries;
    size_t len;
};

typedef struct {
    const char *at;
    const char *end;
} cursor;

static void skip_space(cursor *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r')) c->at++;
}

static bool literal(cursor *c, const char *word) {
    size_t len = strlen(word);
    if ((size_t)(c->end - c->at) < len || memcmp(c->at, word, len) != 0) return false;
    c->at += len;
    return true;
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool hex4(cursor *c, uint32_t *out) {
    if (c->end - c->at < 4) return false;
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(c->at[i]);
        if (digit < 0) return false;
        value = value * 16 + (uint32_t)digit;
    }
    c->at += 4;
    *out = value;
    return true;
}

static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string at the cursor (opening quote included), decoded into a malloc'd text; NULL if
   malformed. An escape never decodes to more bytes than it takes, so the input length bounds
   the output. */
static char *string_value(cursor *c) {
    if (c->at >= c->end || *c->at != '"') return NULL;
    c->at++;
    char *out = checked(malloc((size_t)(c->end - c->at) + 1));
    size_t len = 0;
    while (c->at < c->end) {
        char ch = *c->at++;
        if (ch == '"') {
            out[len] = '\0';
            return out;
        }
        if ((unsigned char)ch < 0x20) break;
        if (ch != '\\') {
            out[len++] = ch;
            continue;
        }
        if (c->at >= c->end) break;
        char escape = *c->at++;
        const char *simple = strchr("\"\\/bfnrt", escape);
        if (simple != NULL && escape != '\0') {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            out[len++] = decoded[simple - "\"\\/bfnrt"];
            continue;
        }
        uint32_t cp;
        if (escape != 'u' || !hex4(c, &cp)) break;
        if (cp >= 0xD800 && cp < 0xDC00) {
            uint32_t low;
            if (!literal(c, "\\u") || !hex4(c, &low) || low < 0xDC00 || low >= 0xE000) break;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            break;
        }
        len += put_utf8(out + len, cp);
    }
    free(out);
    return NULL;
}

static bool skip_value(cursor *c, int depth);

static bool skip_number(cursor *c) {
    const char *start = c->at;
    if (c->at < c->end && *c->at == '-') c->at++;
    const char *digits = c->at;
    while (c->at < c->end && *c->at >= '0' && *c->at <= '9') c->at++;
    if (c->at == digits) return false;
    if (c->at < c->end && *c->at == '.') {
        c->at++;
        const char *fraction = c->at;
        while (c->at < c->end && *c->at >= '0' && *c->at <= '9') c->at++;
        if (c->at == fraction) return false;
    }
    if (c->at < c->end && (*c->at == 'e' || *c->at == 'E')) {
        c->at++;
        if (c->at < c->end && (*c->at == '+' || *c->at == '-')) c->at++;
        const char *exponent = c->at;
        while (c->at < c->end && *c->at >= '0' && *c->at <= '9') c->at++;
        if (c->at == exponent) return false;
    }
    return c->at > start;
}

/* Skips an array or object, checking its syntax; `depth` bounds the nesting. */
static bool skip_container(cursor *c, int depth) {
    if (depth > 64) return false;
    char close = *c->at == '{' ? '}' : ']';
    bool object = close == '}';
    c->at++;
    skip_space(c);
    if (c->at < c->end && *c->at == close) {
        c->at++;
        return true;
    }
    for (;;) {
        skip_space(c);
        if (object) {
            char *key = string_value(c);
            if (key == NULL) return false;
            free(key);
            skip_space(c);
            if (c->at >= c->end || *c->at++ != ':') return false;
        }
        if (!skip_value(c, depth + 1)) return false;
        skip_space(c);
        if (c->at >= c->end) return false;
        char next = *c->at++;
        if (next == close) return true;
        if (next != ',') return false;
    }
}

static bool skip_value(cursor *c, int depth) {
    skip_space(c);
    if (c->at >= c->end) return false;
    switch (*c->at) {
        case '"': {
            char *text = string_value(c);
            free(text);
            return text != NULL;
        }
        case '{':
        case '[':
            return skip_container(c, depth);
        case 't':
            return literal(c, "true");
        case 'f':
            return literal(c, "false");
        case 'n':
            return literal(c, "null");
        default:
            return skip_number(c);
    }
}

static bool read_entry(cursor *c, entry *e) {
    skip_space(c);
    e->key = string_value(c);
    if (e->key == NULL) return false;
    skip_space(c);
    if (c->at >= c->end || *c->at++ != ':') return false;
    skip_space(c);
    if (c->at >= c->end) return false;
    const char *start = c->at;
    switch (*c->at) {
        case '"':
            e->kind = KIND_STRING;
            e->text = string_value(c);
            return e->text != NULL;
        case 't':
        case 'f':
            e->kind = KIND_BOOL;
            e->boolean = *c->at == 't';
            if (!literal(c, e->boolean ? "true" : "false")) return false;
            break;
        case 'n':
            e->kind = KIND_NULL;
            if (!literal(c, "null")) return false;
            break;
        case '{':
        case '[':
            e->kind = *c->at == '{' ? KIND_OBJECT : KIND_ARRAY;
            if (!skip_container(c, 1)) return false;
            break;
        default:
            e->kind = KIND_NUMBER;
            if (!skip_number(c)) return false;
    }
    size_t len = (size_t)(c->at - start);
    e->text = checked(malloc(len + 1));
    memcpy(e->text, start, len);
    e->text[len] = '\0';
    return true;
}

gv_config *gv_config_parse(const gv_string *json, gv_string *err) {
    cursor c = {(const char *)json->ptr, (const char *)json->ptr + json->len};
    gv_config *config = checked(calloc(1, sizeof *config));
    size_t capacity = 0;
    skip_space(&c);
    /* No config at all reads as an empty one. */
    if (literal(&c, "null")) {
        skip_space(&c);
        if (c.at == c.end) return config;
        goto malformed;
    }
    if (c.at >= c.end || *c.at++ != '{') goto malformed;
    skip_space(&c);
    if (c.at < c.end && *c.at == '}') {
        c.at++;
    } else {
        for (;;) {
            if (config->len == capacity) {
                capacity = capacity ? capacity * 2 : 4;
                config->entries = checked(realloc(config->entries, capacity * sizeof(entry)));
            }
            entry *e = &config->entries[config->len];
            memset(e, 0, sizeof *e);
            config->len++;
            if (!read_entry(&c, e)) goto malformed;
            skip_space(&c);
            if (c.at >= c.end) goto malformed;
            char next = *c.at++;
            if (next == '}') break;
            if (next != ',') goto malformed;
        }
    }
    skip_space(&c);
    if (c.at != c.end) goto malformed;
    return config;
malformed:
    gv_config_free(config);
    gv_error(err, "config: not a JSON object");
    return NULL;
}

void gv_config_free(gv_config *config) {
    if (config == NULL) return;
    for (size_t i = 0; i < config->len; i++) {
        free(config->entries[i].key);
        free(config->entries[i].text);
    }
    free(config->entries);
    free(config);
}

/* The last entry with the key, as a JSON parser that keeps the last duplicate would. */
static const entry *find(const gv_config *config, const char *key) {
    for (size_t i = config->len; i-- > 0;) {
        if (strcmp(config->entries[i].key, key) == 0) return &config->entries[i];
    }
    return NULL;
}

bool gv_config_has(const gv_config *config, const char *key) { return find(config, key) != NULL; }

bool gv_config_only(const gv_config *config, const char *const *known, gv_string *err) {
    for (size_t i = 0; i < config->len; i++) {
        bool listed = false;
        for (const char *const *k = known; *k != NULL; k++) listed = listed || strcmp(*k, config->entries[i].key) == 0;
        if (listed) continue;
        size_t len = 1;
        for (const char *const *k = known; *k != NULL; k++) len += strlen(*k) + 2;
        char *names = checked(malloc(len));
        names[0] = '\0';
        for (const char *const *k = known; *k != NULL; k++) {
            if (k != known) strcat(names, ", ");
            strcat(names, *k);
        }
        gv_error(err, "config: unknown key `%s`; known keys: %s", config->entries[i].key,
                 known[0] != NULL ? names : "none");
        free(names);
        return false;
    }
    return true;
}

static const char *kind_name(kind k) {
    switch (k) {
        case KIND_STRING: return "a string";
        case KIND_NUMBER: return "a number";
        case KIND_BOOL: return "a boolean";
        case KIND_NULL: return "null";
        case KIND_OBJECT: return "an object";
        default: return "an array";
    }
}

static bool wrong_type(const entry *e, const char *wanted, gv_string *err) {
    if (e->kind == KIND_STRING) {
        char *quoted = gv_json_quote(e->text, strlen(e->text));
        gv_error(err, "config.%s: expected %s, found the string %s", e->key, wanted, quoted);
        free(quoted);
    } else if (e->kind == KIND_OBJECT || e->kind == KIND_ARRAY) {
        gv_error(err, "config.%s: expected %s, found %s", e->key, wanted, kind_name(e->kind));
    } else {
        gv_error(err, "config.%s: expected %s, found %s", e->key, wanted, e->text);
    }
    return false;
}

bool gv_config_bool(const gv_config *config, const char *key, bool *out, gv_string *err) {
    const entry *e = find(config, key);
    if (e == NULL) return true;
    if (e->kind != KIND_BOOL) return wrong_type(e, "true or false", err);
    *out = e->boolean;
    return true;
}

bool gv_config_uint(const gv_config *config, const char *key, uint64_t *out, gv_string *err) {
    const entry *e = find(config, key);
    if (e == NULL) return true;
    const char *wanted = "a whole number >= 0";
    if (e->kind != KIND_NUMBER || e->text[0] == '-') return wrong_type(e, wanted, err);
    uint64_t value = 0;
    for (const char *d = e->text; *d != '\0'; d++) {
        if (*d < '0' || *d > '9') return wrong_type(e, wanted, err);
        uint64_t digit = (uint64_t)(*d - '0');
        if (value > (UINT64_MAX - digit) / 10) return wrong_type(e, wanted, err);
        value = value * 10 + digit;
    }
    *out = value;
    return true;
}

bool gv_config_text(const gv_config *config, const char *key, char **out, gv_string *err) {
    const entry *e = find(config, key);
    if (e == NULL) return true;
    if (e->kind != KIND_STRING) return wrong_type(e, "a string", err);
    *out = checked(strdup(e->text));
    return true;
}

/* ---- Grades and errors ---- */

static void grade_with(gv_grade *grade, double score, char *rationale) {
    memset(grade, 0, sizeof *grade);
    grade->score = score;
    take(&grade->rationale, rationale);
}

void gv_pass(gv_grade *grade, const char *format, ...) {
    va_list args;
    va_start(args, format);
    grade_with(grade, 1.0, vformat(format, args));
    va_end(args);
}

void gv_fail(gv_grade *grade, const char *format, ...) {
    va_list args;
    va_start(args, format);
    grade_with(grade, 0.0, vformat(format, args));
    va_end(args);
}

void gv_score(gv_grade *grade, double score, const char *format, ...) {
    va_list args;
    va_start(args, format);
    grade_with(grade, score, vformat(format, args));
    va_end(args);
}

char *gv_json_quote(const char *text, size_t len) {
    /* The worst case is \u00XX (6 bytes) for every byte, plus the quotes. */
    char *out = checked(malloc(len * 6 + 3));
    size_t at = 0;
    out[at++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        switch (ch) {
            case '"': memcpy(out + at, "\\\"", 2); at += 2; break;
            case '\\': memcpy(out + at, "\\\\", 2); at += 2; break;
            case '\n': memcpy(out + at, "\\n", 2); at += 2; break;
            case '\r': memcpy(out + at, "\\r", 2); at += 2; break;
            case '\t': memcpy(out + at, "\\t", 2); at += 2; break;
            default:
                if (ch < 0x20) {
                    static const char hex[] = "0123456789abcdef";
                    memcpy(out + at, "\\u00", 4);
                    out[at + 4] = hex[ch >> 4];
                    out[at + 5] = hex[ch & 0xF];
                    at += 6;
                } else {
                    out[at++] = (char)ch;
                }
        }
    }
    out[at++] = '"';
    out[at] = '\0';
    return out;
}

static void set_json(gavel_grader_types_option_json_t *field, char *json) {
    if (field->is_some) free(field->val.ptr);
    field->is_some = true;
    take(&field->val, json);
}

void gv_expected_text(gv_grade *grade, const char *text, size_t len) {
    set_json(&grade->expected, gv_json_quote(text, len));
}

void gv_actual_text(gv_grade *grade, const char *text, size_t len) {
    set_json(&grade->actual, gv_json_quote(text, len));
}

void gv_expected_json(gv_grade *grade, const char *json) { set_json(&grade->expected, checked(strdup(json))); }

void gv_actual_json(gv_grade *grade, const char *json) { set_json(&grade->actual, checked(strdup(json))); }

void gv_metadata_json(gv_grade *grade, const char *json_object) {
    set_json(&grade->metadata, checked(strdup(json_object)));
}

bool gv_error(gv_string *err, const char *format, ...) {
    va_list args;
    va_start(args, format);
    take(err, vformat(format, args));
    va_end(args);
    return false;
}

/* ---- Describing the pack ---- */

void gv_describe(gv_pack_info *info, const char *name, const char *version) {
    memset(info, 0, sizeof *info);
    gv_set(&info->name, name);
    gv_set(&info->version, version);
}

static void describe_function(gv_pack_info *info, const char *name, const char *description,
                              gavel_grader_types_function_kind_t kind, bool needs_ground_truth) {
    size_t size = (info->functions.len + 1) * sizeof *info->functions.ptr;
    info->functions.ptr = checked(realloc(info->functions.ptr, size));
    gavel_grader_types_function_info_t *f = &info->functions.ptr[info->functions.len++];
    gv_set(&f->name, name);
    gv_set(&f->description, description);
    f->kind = kind;
    f->needs_ground_truth = needs_ground_truth;
}

void gv_describe_grader(gv_pack_info *info, const char *name, const char *description,
                        bool needs_ground_truth) {
    describe_function(info, name, description, GAVEL_GRADER_TYPES_FUNCTION_KIND_GRADER, needs_ground_truth);
}

void gv_describe_extractor(gv_pack_info *info, const char *name, const char *description) {
    describe_function(info, name, description, GAVEL_GRADER_TYPES_FUNCTION_KIND_EXTRACTOR, false);
}

/* The generated bindings link against the object file `wit-bindgen c` can write beside them,
   which only carries the component type. build.sh embeds that type from wit/ with
   `wasm-tools component embed` instead, so that everything checked in is text; this stands in
   for the one symbol the object file would have defined. */
void __component_type_object_force_link_pack_v0(void) {}
