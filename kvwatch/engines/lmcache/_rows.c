/* kvwatch.engines.lmcache._rows: entries.rows() in C, the same answer for every run.
 *
 * entries.LINE read by hand: every choice in it is decided by the next bytes (its classes stop at the
 * literal that follows them, its options and alternatives differ in their first byte), so one forward
 * pass matches exactly where `re` does, with the same groups. A run is untrusted bytes: every read is
 * bounds-checked against the end of its line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define GROUPS 20
#define ROW 16

typedef const unsigned char *ptr;

/* Byte classes of entries.py: _CHAR, _WORD, _ID, _TAG. */
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

/* entries.LINE on one line (without its `\n`). */
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

/* Row fields (entries.Row) from the 20 groups: (kind, group); kinds below. */
enum { BYTES, TEXT, INT, UNITS };
static const int fields[ROW][2] = {
    {BYTES, 0}, {BYTES, 1}, {TEXT, 2}, {INT, 3}, {INT, 4}, {UNITS, 5}, {UNITS, 7}, {INT, 9}, {INT, 10},
    {UNITS, 11}, {UNITS, 13}, {TEXT, 15}, {INT, 16}, {INT, 17}, {INT, 18}, {INT, 19},
};

static PyObject *row_of(Cursor *c) {
    PyObject *row = PyTuple_New(ROW);
    if (row == NULL) {
        return NULL;
    }
    for (int i = 0; i < ROW; i++) {
        int kind = fields[i][0], group = fields[i][1];
        ptr from = c->start[group], to = c->stop[group];
        PyObject *item;
        if (from == NULL) {
            Py_INCREF(Py_None);
            item = Py_None;
        } else if (kind == BYTES) {
            item = PyBytes_FromStringAndSize((const char *)from, to - from);
        } else if (kind == TEXT) {
            item = PyUnicode_DecodeASCII((const char *)from, to - from, NULL);
        } else if (kind == INT) {
            item = number(from, to);
        } else {
            item = units(c, group);
        }
        if (item == NULL) {
            Py_DECREF(row);
            return NULL;
        }
        PyTuple_SET_ITEM(row, i, item);
    }
    return row;
}

static PyObject *rows(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    ptr run = view.buf, end = run + view.len;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    ptr at = run;
    while (at < end) {
        ptr stop = at + 1 < end ? memchr(at + 1, '\n', (size_t)(end - at - 1)) : NULL;
        if (stop == NULL) {
            break;
        }
        Cursor c;
        memset(c.start, 0, sizeof(c.start));
        c.p = at + 1;
        c.end = stop;
        PyObject *item;
        if (*at == '\n' && match_line(&c)) {
            item = row_of(&c);
        } else {
            item = PyBytes_FromStringAndSize((const char *)at + 1, stop - at - 1);
        }
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            PyBuffer_Release(&view);
            return NULL;
        }
        Py_DECREF(item);
        at = stop;
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_O, "entries.rows(run), in C: the same list for every run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rows", "kvwatch.engines.lmcache.entries.rows in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__rows(void) {
    init_classes();
    return PyModule_Create(&module);
}
