/* kvwatch.engines.lmcache._rows: take(), the loop of LmcacheLayer.take_run over a run's lines, replay's
 * fast path for LMCache's records in vLLM's docker json-file log. The parser (parser.py) is the one
 * definition of what the lines mean; this loop reads the commonest records from their bytes exactly
 * where the parser's fast patterns (_F_STORED, _F_RETRIEVED, _F_LOOKUP) match the decoded line, with
 * the same numbers, and hands every other line to `other` to be decoded and parsed. The shared harness
 * (tests/test_replay_plain.py) holds it to the plain path on every sample, mutated copies and cuts.
 *
 * The line it reads: `{"log":"`, a process tag (printable ASCII but `"`, `\`, `[`, `]`, with ANSI
 * colours written `\u001b[...m`), `[YYYY-MM-DD HH:MM:SS,mmm] LMCache INFO:`, an optional
 * `\u001b[0m`, then a store, a load or a lookup as the parser's fast patterns read them, ` (` or
 * ` \u001b[3m(`, the file (printable ASCII but `"` and `\`, at most one ESC), `\n","stream":"stdout`
 * or `stderr`, `","time":"`, a value with no quote, `"}`. Sizes and costs are `%.4f` with at most nine
 * whole digits (the parser reads them through a float). Any other line (an escape, a quote, a control
 * or non-ASCII byte anywhere in it) goes to `other`. Every choice is decided by the next bytes, so one
 * forward pass matches exactly; a run is untrusted bytes: every read is bounds-checked against the end
 * of its line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define GROUPS 20

typedef const unsigned char *ptr;

/* Byte classes: a JSON string's printable ASCII but `"` and `\` (CHAR), without the space (WORD), without `]` too (ID), a process tag's (TAG, without `[` and `]`). */
enum { CHAR = 1, WORD = 2, ID = 4, TAG = 8 };
static unsigned char classes[256];

static void init_classes(void) {
    for (int c = 0x20; c <= 0x7e; c++) {
        if (c == '"' || c == '\\') {
            continue;
        }
        unsigned char k = CHAR | TAG;
        if (c != ' ') {
            k |= WORD | ID;
        }
        if (c == ']') {
            k &= (unsigned char)~(ID | TAG);
        }
        if (c == '[') {
            k &= (unsigned char)~TAG;
        }
        classes[c] = k;
    }
}

typedef struct {
    ptr p, end;
    ptr start[GROUPS], stop[GROUPS];
} Cursor;

static inline int lit(Cursor *c, const char *text, size_t n) {
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, text, n) != 0) {
        return 0;
    }
    c->p += n;
    return 1;
}

#define LIT(c, s) lit((c), (s), sizeof(s) - 1)

static inline void span(Cursor *c, int group, ptr from) {
    c->start[group] = from;
    c->stop[group] = c->p;
}

static inline int is_digit(Cursor *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

/* `(\d+)` into group (or none: -1). */
static inline int digits(Cursor *c, int group) {
    ptr from = c->p;
    while (is_digit(c)) {
        c->p++;
    }
    if (c->p == from) {
        return 0;
    }
    if (group >= 0) {
        span(c, group, from);
    }
    return 1;
}

/* `\d{n}` */
static inline int exactly(Cursor *c, int n) {
    for (int i = 0; i < n; i++) {
        if (!is_digit(c)) {
            return 0;
        }
        c->p++;
    }
    return 1;
}

/* `(\d{1,9})\.(\d{4})` into two groups. */
static inline int decimal(Cursor *c, int group) {
    ptr from = c->p;
    while (is_digit(c) && c->p - from < 9) {
        c->p++;
    }
    if (c->p == from || !LIT(c, ".")) {
        return 0;
    }
    c->start[group] = from;
    c->stop[group] = c->p - 1;
    from = c->p;
    if (!exactly(c, 4)) {
        return 0;
    }
    span(c, group + 1, from);
    return 1;
}

/* `X+` or `X*` of a class. */
static inline int run_of(Cursor *c, unsigned char kind, int at_least) {
    ptr from = c->p;
    while (c->p < c->end && (classes[*c->p] & kind)) {
        c->p++;
    }
    return c->p - from >= at_least;
}

/* `Stored (\d+) out of total (\d+) tokens\. size: D (?:gb|GB), cost D ms, throughput: W+ GB/s
 * (?:; offload_time: W+ ms, put_time: W+ ms|)` */
static int stored(Cursor *c) {
    if (!LIT(c, "Stored ") || !digits(c, 3) || !LIT(c, " out of total ") || !digits(c, 4)
        || !LIT(c, " tokens. size: ") || !decimal(c, 5) || !LIT(c, " ")) {
        return 0;
    }
    if (!LIT(c, "gb") && !LIT(c, "GB")) {
        return 0;
    }
    if (!LIT(c, ", cost ") || !decimal(c, 7) || !LIT(c, " ms, throughput: ") || !run_of(c, WORD, 1)
        || !LIT(c, " GB/s")) {
        return 0;
    }
    if (c->p < c->end && *c->p == ';') { /* (without it, the ` (` after would have to follow here) */
        return LIT(c, "; offload_time: ") && run_of(c, WORD, 1) && LIT(c, " ms, put_time: ")
               && run_of(c, WORD, 1) && LIT(c, " ms");
    }
    return 1;
}

/* `Retrieved (\d+) out of (\d+) required tokens \(from \d+ total tokens\)\. size: D gb, cost D ms,
 * throughput: W+ GB/s;` */
static int retrieved(Cursor *c) {
    return LIT(c, "Retrieved ") && digits(c, 9) && LIT(c, " out of ") && digits(c, 10)
           && LIT(c, " required tokens (from ") && digits(c, -1) && LIT(c, " total tokens). size: ")
           && decimal(c, 11) && LIT(c, " gb, cost ") && decimal(c, 13) && LIT(c, " ms, throughput: ")
           && run_of(c, WORD, 1) && LIT(c, " GB/s;");
}

/* `Reqid: (W+?), Total tokens (\d+), (?:Inference Engine computed tokens: (\d+), |)LMCache hit tokens:
 * (\d+), need to load: (-?\d+)`: W holds no space, so the id ends at the `,` before the run's end. */
static int lookup(Cursor *c) {
    if (!LIT(c, "Reqid: ")) {
        return 0;
    }
    ptr from = c->p;
    run_of(c, WORD, 0);
    if (c->p - from < 2 || c->p[-1] != ',') {
        return 0;
    }
    c->p--;
    span(c, 15, from);
    if (!LIT(c, ", Total tokens ") || !digits(c, 16) || !LIT(c, ", ")) {
        return 0;
    }
    if (c->p < c->end && *c->p == 'I') {
        if (!LIT(c, "Inference Engine computed tokens: ") || !digits(c, 17) || !LIT(c, ", ")) {
            return 0;
        }
    }
    if (!LIT(c, "LMCache hit tokens: ") || !digits(c, 18) || !LIT(c, ", need to load: ")) {
        return 0;
    }
    ptr need = c->p;
    if (c->p < c->end && *c->p == '-') {
        c->p++;
    }
    if (!digits(c, -1)) {
        return 0;
    }
    c->start[19] = need;
    c->stop[19] = c->p;
    return 1;
}

/* The line above (without its `\n`). */
static int match_line(Cursor *c) {
    ptr line = c->p;
    if (!LIT(c, "{\"log\":\"")) {
        return 0;
    }
    run_of(c, TAG, 0);
    while (LIT(c, "\\u001b[")) {
        while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == ';')) {
            c->p++;
        }
        if (!LIT(c, "m")) {
            return 0;
        }
        run_of(c, TAG, 0);
    }
    span(c, 0, line);
    if (!LIT(c, "[")) {
        return 0;
    }
    ptr second = c->p;
    if (!exactly(c, 4) || !LIT(c, "-") || !exactly(c, 2) || !LIT(c, "-") || !exactly(c, 2) || !LIT(c, " ")
        || !exactly(c, 2) || !LIT(c, ":") || !exactly(c, 2) || !LIT(c, ":") || !exactly(c, 2)) {
        return 0;
    }
    span(c, 1, second);
    if (!LIT(c, ",") || !exactly(c, 3) || !LIT(c, "] LMCache INFO:")) {
        return 0;
    }
    LIT(c, "\\u001b[0m");
    if (!LIT(c, " ")) {
        return 0;
    }
    if (c->p < c->end && *c->p == 'R' && c->end - c->p > 2 && c->p[2] == 'q') {
        if (!lookup(c)) {
            return 0;
        }
    } else {
        if (LIT(c, "[req_id=")) {
            ptr request = c->p;
            if (!run_of(c, ID, 1)) {
                return 0;
            }
            span(c, 2, request);
            if (!LIT(c, "] ")) {
                return 0;
            }
        }
        if (!(c->p < c->end && *c->p == 'S' ? stored(c) : retrieved(c))) {
            return 0;
        }
    }
    if (!LIT(c, " ")) {
        return 0;
    }
    LIT(c, "\\u001b[3m");
    if (!LIT(c, "(")) {
        return 0;
    }
    run_of(c, WORD, 0);
    if (LIT(c, "\\u001b")) {
        run_of(c, WORD, 0);
    }
    if (!LIT(c, "\\n\",\"stream\":\"std")) {
        return 0;
    }
    if (!LIT(c, "out") && !LIT(c, "err")) {
        return 0;
    }
    if (!LIT(c, "\",\"time\":\"")) {
        return 0;
    }
    run_of(c, CHAR, 0);
    return LIT(c, "\"}") && c->p == c->end;
}

/* A group's digits (`-?\d+`) as an int: in a machine word up to 18 digits, else by CPython. */
static PyObject *number(ptr from, ptr to) {
    int negative = from < to && *from == '-';
    ptr digit = from + negative;
    if (to - digit > 18) {
        char text[64];
        PyObject *text_object = NULL, *value;
        if (to - from < (Py_ssize_t)sizeof(text)) {
            memcpy(text, from, (size_t)(to - from));
            text[to - from] = 0;
            return PyLong_FromString(text, NULL, 10);
        }
        text_object = PyUnicode_FromStringAndSize((const char *)from, to - from);
        if (text_object == NULL) {
            return NULL;
        }
        value = PyLong_FromUnicodeObject(text_object, 10);
        Py_DECREF(text_object);
        return value;
    }
    long long value = 0;
    for (; digit < to; digit++) {
        value = value * 10 + (*digit - '0');
    }
    return PyLong_FromLongLong(negative ? -value : value);
}

/* A `%.4f`'s two groups as one int: its digits without the point. */
static PyObject *units(Cursor *c, int group) {
    long long value = 0;
    for (ptr digit = c->start[group]; digit < c->stop[group]; digit++) {
        value = value * 10 + (*digit - '0');
    }
    for (ptr digit = c->start[group + 1]; digit < c->stop[group + 1]; digit++) {
        value = value * 10 + (*digit - '0');
    }
    return PyLong_FromLongLong(value);
}

/* How take() reads a group: as an int, or a `%.4f`'s two groups as one int (units). */
enum { INT, UNITS };

/* ---- take(): LmcacheLayer.take_run's loop. Each step below is what parse() does per line, in its order; the
 * layer's methods (_epoch, _cell, the sums' drain, `other`) are called where it calls them.
 *
 * Two things it does its own way, for the same result: a UTC stamp's second is read here (what the
 * layer's _when gives for it, exactly), and a store's or load's numbers, where each fits a machine
 * word, are added up in the run's cache of its workers' cells (`Slot`) and into their Python lists
 * only before anything can read those (the sums' drain, `other`) and at the end: integer sums, in any
 * order the same. */

static PyObject *s_seen, *s_seconds, *s_sums, *s_epoch, *s_cell, *s_seen_any, *s_held, *s_start, *s_last,
    *s_local, *s_lookups, *s_drain;

/* Cells cached per direction for a run (more workers than this: the rest go the dict's way). */
#define SLOTS 16
/* A cell's list places of lines, tokens, asked, size and seconds (sums.Sums.transfers). */
static const Py_ssize_t cell_at[5] = {0, 1, 2, 4, 6};

typedef struct {
    PyObject *head, *cell; /* the head's bytes, its worker's cell (a list of 8 ints) */
    long long sums[5];     /* added since the cell was last brought up to date */
} Slot;

typedef struct {
    PyObject *layer, *seen, *seconds, *sums, *lookups, *events, *stores, *loads, *epoch, *cell;
    Py_ssize_t max_ids;
    double stretch;
    int utc;
    Slot slots[2][SLOTS]; /* [store, load] */
    int used[2];
} Take;

/* list[i] += value */
static int add_at(PyObject *list, Py_ssize_t i, PyObject *value) {
    PyObject *old = PyList_GET_ITEM(list, i);
    PyObject *sum = PyNumber_Add(old, value);
    if (sum == NULL) {
        return -1;
    }
    PyList_SET_ITEM(list, i, sum);
    Py_DECREF(old);
    return 0;
}

static int check_list(PyObject *list, Py_ssize_t length) {
    if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) < length) {
        PyErr_SetString(PyExc_TypeError, "take: sums are not a list of their length");
        return -1;
    }
    return 0;
}

static int add_long(PyObject *list, Py_ssize_t i, long long value) {
    if (value == 0) {
        return 0;
    }
    PyObject *number = PyLong_FromLongLong(value);
    if (number == NULL) {
        return -1;
    }
    int failed = add_at(list, i, number);
    Py_DECREF(number);
    return failed;
}

/* A slot's sums into its cell's list. */
static int bring_up(Slot *slot) {
    for (int i = 0; i < 5; i++) {
        if (add_long(slot->cell, cell_at[i], slot->sums[i]) < 0) {
            return -1;
        }
        slot->sums[i] = 0;
    }
    return 0;
}

/* Every slot's sums into the lists, and the slots forgotten (as the run's dicts are cleared). */
static int forget_slots(Take *t) {
    int failed = 0;
    for (int load = 0; load < 2; load++) {
        for (int i = 0; i < t->used[load]; i++) {
            Slot *slot = &t->slots[load][i];
            if (!failed && bring_up(slot) < 0) {
                failed = -1;
            }
            Py_CLEAR(slot->head);
            Py_CLEAR(slot->cell);
        }
        t->used[load] = 0;
    }
    PyDict_Clear(t->stores);
    PyDict_Clear(t->loads);
    return failed;
}

static int extend(PyObject *events, PyObject *more) {
    Py_ssize_t size = PyList_GET_SIZE(events);
    return PyList_SetSlice(events, size, size, more);
}

static double float_of(PyObject *object, PyObject *name, int *error) {
    PyObject *value = PyObject_GetAttr(object, name);
    if (value == NULL) {
        *error = 1;
        return 0.0;
    }
    double out = PyFloat_AsDouble(value);
    Py_DECREF(value);
    if (out == -1.0 && PyErr_Occurred()) {
        *error = 1;
    }
    return out;
}

/* The stretch logic (Sums.transfer's, written out): start, end (drain) or move the sums' stretch to
 * `now` (`when`: its object, or NULL to make one). */
static int move_stretch(Take *t, double now, PyObject *when) {
    int error = 0, held = 0, result = -1;
    PyObject *flag = PyObject_GetAttr(t->sums, s_held);
    if (flag == NULL || (held = PyObject_IsTrue(flag)) < 0) {
        Py_XDECREF(flag);
        return -1;
    }
    Py_DECREF(flag);
    if (when == NULL) {
        if ((when = PyFloat_FromDouble(now)) == NULL) {
            return -1;
        }
    } else {
        Py_INCREF(when);
    }
    if (held) {
        double start = float_of(t->sums, s_start, &error);
        if (error) {
            goto done;
        }
        if (now - start < t->stretch) {
            double last = float_of(t->sums, s_last, &error);
            if (!error) {
                result = now > last ? PyObject_SetAttr(t->sums, s_last, when) : 0;
            }
            goto done;
        }
        if (forget_slots(t) < 0) {
            goto done;
        }
        PyObject *drained = PyObject_CallMethodNoArgs(t->sums, s_drain);
        if (drained == NULL) {
            goto done;
        }
        int failed = extend(t->events, drained);
        Py_DECREF(drained);
        if (failed < 0) {
            goto done;
        }
    }
    if (PyObject_SetAttr(t->sums, s_held, Py_True) == 0 && PyObject_SetAttr(t->sums, s_start, when) == 0) {
        result = PyObject_SetAttr(t->sums, s_last, when);
    }
done:
    Py_DECREF(when);
    return result;
}

/* A lookup's request id counted once (0: seen since it last ran). */
static int first_lookup(Take *t, PyObject *rid) {
    int found = PyDict_Contains(t->seen, rid);
    if (found != 0) {
        return found < 0 ? -1 : 0;
    }
    if (PyDict_GET_SIZE(t->seen) >= t->max_ids) {
        Py_ssize_t pos = 0;
        PyObject *oldest, *value;
        if (PyDict_Next(t->seen, &pos, &oldest, &value)) {
            Py_INCREF(oldest);
            int failed = PyDict_DelItem(t->seen, oldest);
            Py_DECREF(oldest);
            if (failed < 0) {
                return -1;
            }
        }
    }
    return PyDict_SetItem(t->seen, rid, Py_None) < 0 ? -1 : 1;
}

/* The request of a store or load ran: a later lookup of it counts again (_ran). */
static int ran(Take *t, Cursor *c) {
    if (c->start[2] == NULL || PyDict_GET_SIZE(t->seen) == 0) {
        return 0;
    }
    PyObject *text = PyUnicode_DecodeASCII((const char *)c->start[2], c->stop[2] - c->start[2], NULL);
    if (text == NULL) {
        return -1;
    }
    int found = PyDict_Contains(t->seen, text);
    int failed = found < 0 || (found && PyDict_DelItem(t->seen, text) < 0);
    Py_DECREF(text);
    return failed ? -1 : 0;
}

/* ---- the epoch second of a UTC stamp: what _when gives (datetime's checks, then exact arithmetic) */

static int two(ptr p) { return (p[0] - '0') * 10 + (p[1] - '0'); }

/* Days from 1970-01-01 to a civil date (proleptic Gregorian; H. Hinnant's days_from_civil). */
static long long days_from_civil(long long y, int m, int d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* `YYYY-MM-DD HH:MM:SS` (digits where LINE reads them) as epoch seconds; 0: no date. */
static int utc_second(ptr s, double *out) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int year = two(s) * 100 + two(s + 2), month = two(s + 5), day = two(s + 8);
    int hh = two(s + 11), mm = two(s + 14), ss = two(s + 17);
    if (year < 1 || month < 1 || month > 12 || day < 1 || hh > 23 || mm > 59 || ss > 59) {
        return 0;
    }
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (day > days[month - 1] + (month == 2 && leap)) {
        return 0;
    }
    *out = (double)(days_from_civil(year, month, day) * 86400 + hh * 3600 + mm * 60 + ss);
    return 1;
}

/* ---- a row's numbers */

/* The numbers of a record as ints (NULL where not printed). */
enum { STORED, OFFERED, SIZE, COST, GOT, REQUIRED, GOT_SIZE, GOT_COST, TOTAL, LOCAL, HIT, NEED, NUMBERS };
static const int number_groups[NUMBERS][2] = {
    {INT, 3}, {INT, 4}, {UNITS, 5}, {UNITS, 7}, {INT, 9}, {INT, 10}, {UNITS, 11}, {UNITS, 13},
    {INT, 16}, {INT, 17}, {INT, 18}, {INT, 19},
};

static int numbers_of(Cursor *c, PyObject **out) {
    for (int i = 0; i < NUMBERS; i++) {
        int kind = number_groups[i][0], group = number_groups[i][1];
        out[i] = NULL;
        if (c->start[group] == NULL) {
            continue;
        }
        out[i] = kind == INT ? number(c->start[group], c->stop[group]) : units(c, group);
        if (out[i] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* A group of digits as a machine word, if it has at most 18 of them (0: more). */
static int word(Cursor *c, int group, long long *out) {
    ptr from = c->start[group], to = c->stop[group];
    if (to - from > 18) {
        return 0;
    }
    long long value = 0;
    for (; from < to; from++) {
        value = value * 10 + (*from - '0');
    }
    *out = value;
    return 1;
}

/* A `%.4f`'s two groups as one word (at most 9 + 4 digits: always one). */
static long long units_word(Cursor *c, int group) {
    long long value = 0;
    for (ptr digit = c->start[group]; digit < c->stop[group]; digit++) {
        value = value * 10 + (*digit - '0');
    }
    for (ptr digit = c->start[group + 1]; digit < c->stop[group + 1]; digit++) {
        value = value * 10 + (*digit - '0');
    }
    return value;
}

/* A store's or load's tokens, asked, size and cost as words (0: a number wider than 18 digits). */
static int transfer_words(Cursor *c, int load, long long *out) {
    out[2] = units_word(c, load ? 11 : 5);
    out[3] = units_word(c, load ? 13 : 7);
    return word(c, load ? 9 : 3, &out[0]) && word(c, load ? 10 : 4, &out[1]);
}

/* ---- a row's sums */

/* The row's lookup sums (its stretch moved): Sums.lookup written out. */
static int add_lookup(Take *t, PyObject **n) {
    PyObject *one = PyLong_FromLong(1), *zero = PyLong_FromLong(0);
    int result = -1, positive;
    if (one == NULL || zero == NULL || check_list(t->lookups, 5) < 0) {
        goto done;
    }
    if (add_at(t->lookups, 0, one) < 0 || add_at(t->lookups, 1, n[TOTAL]) < 0
        || add_at(t->lookups, 2, n[HIT]) < 0) {
        goto done;
    }
    positive = PyObject_RichCompareBool(n[NEED], zero, Py_GT);
    if (positive < 0 || (positive && add_at(t->lookups, 3, n[NEED]) < 0)) {
        goto done;
    }
    positive = PyObject_RichCompareBool(n[HIT], zero, Py_GT);
    if (positive < 0 || (positive && add_at(t->lookups, 4, one) < 0)) {
        goto done;
    }
    if (n[LOCAL] != NULL) {
        PyObject *local = PyObject_GetAttr(t->sums, s_local), *sum;
        if (local == NULL) {
            goto done;
        }
        sum = local == Py_None ? Py_NewRef(n[LOCAL]) : PyNumber_Add(local, n[LOCAL]);
        Py_DECREF(local);
        if (sum == NULL) {
            goto done;
        }
        int failed = PyObject_SetAttr(t->sums, s_local, sum);
        Py_DECREF(sum);
        if (failed < 0) {
            goto done;
        }
    }
    result = 0;
done:
    Py_XDECREF(one);
    Py_XDECREF(zero);
    return result;
}

/* The worker's cell of the row's head in one direction: the run's slot for it, or (a head not met since
 * the slots were last forgotten) the dict's, or the layer's _cell, then a slot if one is free. Returns
 * a new reference to the cell; `*slot` the slot (NULL: none free). */
static PyObject *cell_of(Take *t, Cursor *c, int load, Slot **slot) {
    ptr head = c->start[0];
    Py_ssize_t length = c->stop[0] - head;
    Slot *slots = t->slots[load];
    for (int i = 0; i < t->used[load]; i++) {
        if (PyBytes_GET_SIZE(slots[i].head) == length
            && memcmp(PyBytes_AS_STRING(slots[i].head), head, (size_t)length) == 0) {
            *slot = &slots[i];
            return Py_NewRef(slots[i].cell);
        }
    }
    *slot = NULL;
    PyObject *cells = load ? t->loads : t->stores;
    PyObject *key = PyBytes_FromStringAndSize((const char *)head, length);
    if (key == NULL) {
        return NULL;
    }
    PyObject *cell = PyDict_GetItemWithError(cells, key);
    if (cell != NULL) {
        Py_INCREF(cell);
    } else if (!PyErr_Occurred()) {
        cell = PyObject_CallFunctionObjArgs(t->cell, cells, key, load ? Py_True : Py_False, NULL);
    }
    if (cell == NULL || check_list(cell, 8) < 0) {
        Py_DECREF(key);
        Py_XDECREF(cell);
        return NULL;
    }
    if (t->used[load] < SLOTS) {
        Slot *free = &slots[t->used[load]++];
        free->head = key;
        free->cell = Py_NewRef(cell);
        memset(free->sums, 0, sizeof(free->sums));
        *slot = free;
    } else {
        Py_DECREF(key);
    }
    return cell;
}

/* A store's or load's numbers (words) into its slot's sums; past what a word holds, into the list. */
static int add_words(Take *t, Slot *slot, PyObject *cell, const long long *v) {
    long long row[5] = {1, v[0], v[1], v[2], v[3]};
    for (int i = 0; i < 5; i++) {
        long long sum;
        if (slot != NULL && !__builtin_add_overflow(slot->sums[i], row[i], &sum)) {
            slot->sums[i] = sum;
            continue;
        }
        if (add_long(cell, cell_at[i], row[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A store's or load's numbers (ints) into the list. */
static int add_numbers(PyObject *cell, PyObject **n, int load) {
    PyObject *one = PyLong_FromLong(1);
    if (one == NULL) {
        return -1;
    }
    PyObject *values[5] = {one, n[load ? GOT : STORED], n[load ? REQUIRED : OFFERED], n[load ? GOT_SIZE : SIZE],
                           n[load ? GOT_COST : COST]};
    int result = 0;
    for (int i = 0; i < 5 && result == 0; i++) {
        result = add_at(cell, cell_at[i], values[i]);
    }
    Py_DECREF(one);
    return result;
}

/* ---- a row */

/* The row's second as epoch seconds (`*when`: its object where the layer made one): 1, or 0 for no date
 * (the row goes to `other`), -1 an error. */
static int second_of(Take *t, ptr second, double *now, PyObject **when) {
    if (t->utc) {
        return utc_second(second, now);
    }
    PyObject *key = PyBytes_FromStringAndSize((const char *)second, 19);
    if (key == NULL) {
        return -1;
    }
    PyObject *found = PyDict_GetItemWithError(t->seconds, key);
    if (found != NULL) {
        Py_INCREF(found);
    } else if (!PyErr_Occurred()) {
        found = PyObject_CallOneArg(t->epoch, key);
    }
    Py_DECREF(key);
    if (found == NULL) {
        return -1;
    }
    if (found == Py_None) {
        Py_DECREF(found);
        return 0;
    }
    *now = PyFloat_AsDouble(found);
    if (*now == -1.0 && PyErr_Occurred()) {
        Py_DECREF(found);
        return -1;
    }
    *when = found;
    return 1;
}

/* A store or load whose numbers are words: 1 taken, 0 for `other` (a short load), -1 an error. */
static int take_transfer(Take *t, Cursor *c, const long long *v, int load, double now, PyObject *when,
                         int same, ptr *moved) {
    if (load && v[0] < v[1]) {
        return 0;
    }
    if (ran(t, c) < 0 || (!same && move_stretch(t, now, when) < 0)) {
        return -1;
    }
    if (!same) {
        *moved = c->start[1];
    }
    Slot *slot;
    PyObject *cell = cell_of(t, c, load, &slot);
    if (cell == NULL) {
        return -1;
    }
    int failed = add_words(t, slot, cell, v);
    Py_DECREF(cell);
    return failed < 0 ? -1 : 1;
}

/* One row (ready): 1 taken, 0 for `other` (no date, a short load), -1 an error. `moved` is the second
 * of the last row that moved the stretch (NULL: none since the run began or `other` was called). */
static int take_row(Take *t, Cursor *c, ptr *moved) {
    ptr second = c->start[1];
    int same = *moved != NULL && memcmp(second, *moved, 19) == 0;
    double now = 0.0;
    PyObject *when = NULL, *numbers[NUMBERS], *text = NULL;
    memset(numbers, 0, sizeof(numbers));
    if (!same) {
        int dated = second_of(t, second, &now, &when);
        if (dated <= 0) {
            return dated;
        }
    }
    int result = -1, lookup = c->start[15] != NULL, load = c->start[3] == NULL;
    long long words[4];
    if (!lookup && transfer_words(c, load, words)) {
        result = take_transfer(t, c, words, load, now, when, same, moved);
        goto done;
    }
    if (numbers_of(c, numbers) < 0) {
        goto done;
    }
    if (!lookup && load) {
        int enough = PyObject_RichCompareBool(numbers[GOT], numbers[REQUIRED], Py_GE);
        if (enough <= 0) {
            result = enough;
            goto done;
        }
    }
    if (lookup) {
        text = PyUnicode_DecodeASCII((const char *)c->start[15], c->stop[15] - c->start[15], NULL);
        int first = text == NULL ? -1 : first_lookup(t, text);
        if (first <= 0) {
            result = first < 0 ? -1 : 1;
            goto done;
        }
    } else if (ran(t, c) < 0) {
        goto done;
    }
    if (!same) {
        if (move_stretch(t, now, when) < 0) {
            goto done;
        }
        *moved = second;
    }
    if (lookup) {
        result = add_lookup(t, numbers) < 0 ? -1 : 1;
    } else {
        Slot *slot;
        PyObject *cell = cell_of(t, c, load, &slot);
        result = cell == NULL || add_numbers(cell, numbers, load) < 0 ? -1 : 1;
        Py_XDECREF(cell);
    }
done:
    Py_XDECREF(when);
    Py_XDECREF(text);
    for (int i = 0; i < NUMBERS; i++) {
        Py_XDECREF(numbers[i]);
    }
    return result;
}

static int ready_of(PyObject *layer) {
    PyObject *flag = PyObject_GetAttr(layer, s_seen_any);
    if (flag == NULL) {
        return -1;
    }
    int ready = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    return ready;
}

/* A line for `other`: its outcome added to the events and counts; the run's cells forgotten. */
static int pass_on(Take *t, PyObject *other, ptr from, ptr to, Py_ssize_t *recognized, Py_ssize_t *errors) {
    if (forget_slots(t) < 0) {
        return -1;
    }
    PyObject *line = PyBytes_FromStringAndSize((const char *)from, to - from);
    PyObject *outcome = line == NULL ? NULL : PyObject_CallOneArg(other, line);
    Py_XDECREF(line);
    if (outcome == NULL) {
        return -1;
    }
    int failed = 0;
    if (PyList_Check(outcome)) {
        ++*recognized;
        failed = extend(t->events, outcome);
    } else if (outcome != Py_None) {
        ++*errors;
    }
    Py_DECREF(outcome);
    if (failed < 0) {
        return -1;
    }
    PyDict_Clear(t->stores);
    PyDict_Clear(t->loads);
    return 0;
}

static PyObject *take(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "take(layer, run, other, max_ids, stretch, utc)");
        return NULL;
    }
    Take t;
    memset(&t, 0, sizeof(t));
    t.layer = args[0];
    PyObject *other = args[2];
    t.max_ids = PyLong_AsSsize_t(args[3]);
    t.stretch = PyFloat_AsDouble(args[4]);
    t.utc = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    int ready = ready_of(t.layer);
    t.seen = PyObject_GetAttr(t.layer, s_seen);
    t.seconds = PyObject_GetAttr(t.layer, s_seconds);
    t.sums = PyObject_GetAttr(t.layer, s_sums);
    t.epoch = PyObject_GetAttr(t.layer, s_epoch);
    t.cell = PyObject_GetAttr(t.layer, s_cell);
    t.lookups = t.sums == NULL ? NULL : PyObject_GetAttr(t.sums, s_lookups);
    t.events = PyList_New(0);
    t.stores = PyDict_New();
    t.loads = PyDict_New();
    if (ready < 0 || !t.seen || !t.seconds || !t.sums || !t.epoch || !t.cell || !t.lookups || !t.events
        || !t.stores || !t.loads) {
        goto fail;
    }
    if (!PyDict_CheckExact(t.seen) || !PyDict_CheckExact(t.seconds)) {
        PyErr_SetString(PyExc_TypeError, "take: the layer's ids and seconds are not dicts");
        goto fail;
    }
    Py_ssize_t lines = 0, passed = 0, recognized = 0, errors = 0;
    ptr moved = NULL, run = view.buf, end = run + view.len, at = run;
    while (at < end) {
        ptr stop = at + 1 < end ? memchr(at + 1, '\n', (size_t)(end - at - 1)) : NULL;
        if (stop == NULL) {
            break;
        }
        lines++;
        Cursor c;
        memset(c.start, 0, sizeof(c.start));
        c.p = at + 1;
        c.end = stop;
        if (ready && *at == '\n' && match_line(&c)) {
            int taken = take_row(&t, &c, &moved);
            if (taken < 0) {
                goto fail;
            }
            if (taken) {
                at = stop;
                continue;
            }
        }
        passed++;
        if (pass_on(&t, other, at + 1, stop, &recognized, &errors) < 0) {
            goto fail;
        }
        moved = NULL;
        if ((ready = ready_of(t.layer)) < 0) {
            goto fail;
        }
        at = stop;
    }
    if (forget_slots(&t) == 0) {
        result = Py_BuildValue("(Onn)", t.events, lines - passed + recognized, errors);
    }
fail:
    if (t.stores != NULL && t.loads != NULL) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (forget_slots(&t) < 0) { /* (the sums so far: the same, whatever failed) */
            PyErr_Clear();
        }
        PyErr_Restore(type, value, traceback);
    }
    Py_XDECREF(t.seen);
    Py_XDECREF(t.seconds);
    Py_XDECREF(t.sums);
    Py_XDECREF(t.epoch);
    Py_XDECREF(t.cell);
    Py_XDECREF(t.lookups);
    Py_XDECREF(t.events);
    Py_XDECREF(t.stores);
    Py_XDECREF(t.loads);
    PyBuffer_Release(&view);
    return result;
}

static int intern_names(void) {
    struct {
        PyObject **name;
        const char *text;
    } names[] = {
        {&s_seen, "_seen"}, {&s_seconds, "_seconds"}, {&s_sums, "_sums"}, {&s_epoch, "_epoch"},
        {&s_cell, "_cell"}, {&s_seen_any, "_seen_any"}, {&s_held, "held"}, {&s_start, "start"},
        {&s_last, "last"}, {&s_local, "local"}, {&s_lookups, "lookups"}, {&s_drain, "drain"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL) {
            return -1;
        }
    }
    return 0;
}

static PyMethodDef methods[] = {
    {"take", (PyCFunction)(void (*)(void))take, METH_FASTCALL,
     "LmcacheLayer.take_run(run, other)'s loop: (events, lines taken, errors)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rows", "LmcacheLayer's run loop in C.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__rows(void) {
    init_classes();
    if (intern_names() < 0) {
        return NULL;
    }
    return PyModule_Create(&module);
}
