/* kvwatch.sources._spans: framing.entry_lines() in C, the same answer for every read.
 *
 * The framer's walk over a json-file read's marker hits: each line holding a marker once, the whole
 * entries whose first marker is the raw one joined into runs, every other line as its offsets. A read is
 * untrusted bytes: every offset is checked against its length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef const unsigned char *ptr;

static const char middle[] = "\\n\",\"stream\":\"std";
static const char out_time[] = "out\",\"time\":\"";
static const char err_time[] = "err\",\"time\":\"";

/* framing.whole_entry(data, start, end) */
static int whole_entry(ptr data, Py_ssize_t start, Py_ssize_t end) {
    if (end - start < 8 || memcmp(data + start, "{\"log\":\"", 8) != 0) {
        return 0;
    }
    ptr close = memchr(data + start + 8, '"', (size_t)(end - start - 8));
    if (close == NULL) {
        return 0;
    }
    Py_ssize_t at = close - data;
    if (at < start + 10 || data[at - 3] == '\\') {
        return 0;
    }
    if (end - (at - 2) < (Py_ssize_t)(sizeof(middle) - 1)
        || memcmp(data + at - 2, middle, sizeof(middle) - 1) != 0) {
        return 0;
    }
    Py_ssize_t stream = at + 15;
    if (end - stream < (Py_ssize_t)(sizeof(out_time) - 1)
        || (memcmp(data + stream, out_time, sizeof(out_time) - 1) != 0
            && memcmp(data + stream, err_time, sizeof(err_time) - 1) != 0)) {
        return 0;
    }
    Py_ssize_t value = at + 28;
    if (end - value < 2) {
        return 0;
    }
    ptr quote = memchr(data + value, '"', (size_t)(end - value));
    return quote != NULL && quote - data == end - 2 && data[end - 1] == '}';
}

/* entry_lines(data, first, hits, markers, raw) */
static PyObject *entry_lines(PyObject *module, PyObject *args) {
    Py_buffer view;
    Py_ssize_t first, markers, raw;
    PyObject *hits;
    if (!PyArg_ParseTuple(args, "y*nO!nn", &view, &first, &PyList_Type, &hits, &markers, &raw)) {
        return NULL;
    }
    ptr data = view.buf;
    Py_ssize_t length = view.len;
    PyObject *out = PyList_New(0);
    /* the current run: its lines' (start, stop) offsets, stop past each line's `\n` */
    Py_ssize_t *spans = NULL, spans_n = 0, spans_cap = 0, run_bytes = 0;
    if (out == NULL) {
        goto fail;
    }
    Py_ssize_t after = first, count = PyList_GET_SIZE(hits);
    for (Py_ssize_t i = 0; i <= count; i++) {
        Py_ssize_t start = 0, end = 0, mark = 0, finish = 0;
        int take_raw = 0, line = 0;
        if (i < count) {
            PyObject *hit = PyList_GET_ITEM(hits, i);
            if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 3) {
                PyErr_SetString(PyExc_TypeError, "hits: (pattern, start, end) tuples");
                goto fail;
            }
            Py_ssize_t which = PyLong_AsSsize_t(PyTuple_GET_ITEM(hit, 0));
            Py_ssize_t begin = PyLong_AsSsize_t(PyTuple_GET_ITEM(hit, 1));
            Py_ssize_t stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(hit, 2));
            if (PyErr_Occurred()) {
                goto fail;
            }
            mark = begin + first;
            if (mark < after || which >= markers) {
                continue;
            }
            if (mark < first || mark >= length) {
                PyErr_SetString(PyExc_ValueError, "a hit outside the read");
                goto fail;
            }
            start = first;
            for (Py_ssize_t at = mark - 1; at >= first; at--) {
                if (data[at] == '\n') {
                    start = at + 1;
                    break;
                }
            }
            ptr newline = memchr(data + mark, '\n', (size_t)(length - mark));
            if (newline == NULL) {
                PyErr_SetString(PyExc_ValueError, "subsection not found");
                goto fail;
            }
            end = newline - data;
            after = end + 1;
            finish = stop + first;
            line = 1;
            take_raw = which == raw && whole_entry(data, start, end);
        }
        if (take_raw) {
            if (spans_n + 2 > spans_cap) {
                spans_cap = spans_cap ? spans_cap * 2 : 64;
                Py_ssize_t *grown = PyMem_Realloc(spans, (size_t)spans_cap * sizeof(Py_ssize_t));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                spans = grown;
            }
            spans[spans_n++] = start;
            spans[spans_n++] = after;
            run_bytes += after - start;
            continue;
        }
        if (spans_n > 0) { /* the run so far, as `\n` and its lines */
            PyObject *joined = PyBytes_FromStringAndSize(NULL, run_bytes + 1);
            if (joined == NULL) {
                goto fail;
            }
            char *to = PyBytes_AS_STRING(joined);
            *to++ = '\n';
            for (Py_ssize_t k = 0; k < spans_n; k += 2) {
                memcpy(to, data + spans[k], (size_t)(spans[k + 1] - spans[k]));
                to += spans[k + 1] - spans[k];
            }
            int failed = PyList_Append(out, joined);
            Py_DECREF(joined);
            if (failed) {
                goto fail;
            }
            spans_n = 0;
            run_bytes = 0;
        }
        if (line) {
            PyObject *item = Py_BuildValue("(nnnn)", start, end, mark, finish);
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
    }
    PyMem_Free(spans);
    PyBuffer_Release(&view);
    return out;
fail:
    PyMem_Free(spans);
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

static PyMethodDef methods[] = {
    {"entry_lines", entry_lines, METH_VARARGS, "framing.entry_lines(), in C: the same list for every read."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_spans", "kvwatch.sources.framing.entry_lines in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__spans(void) { return PyModule_Create(&module); }
