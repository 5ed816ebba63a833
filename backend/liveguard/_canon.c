/*
 * liveguard._canon: native accelerator for liveguard.fingerprint.
 *
 * dumps(obj, ignore_keys, volatile_keys, convert, maybe_json, max_depth) -> bytes
 *
 * Produces exactly Fingerprinter(ignore_keys).reference_bytes(obj) (the
 * pure-Python walker in fingerprint.py followed by compact, key-sorted
 * json.dumps with ensure_ascii=False), in one pass. The Python file is the
 * definition; for anything this module does not handle it raises (usually
 * _canon.Decline) and the caller falls back to the walker, which reports
 * the problem with a location.
 *
 * Handled natively: None, bool, exact int/float/str, str/int/float
 * subclasses (as the walker does), exact dict with exact-str keys, exact
 * list and tuple. Any other object goes through the `convert` callback
 * (fingerprint._convert) and the result is written at the same depth.
 * Declined: sets, dict/list/tuple subclasses and other Mappings, non-str
 * keys, lone surrogates, keys that collide after NFC, nesting at or beyond
 * max_depth (also catches cycles).
 *
 * Also Scanner: the step-text rule's pre-filter (rules/injection.py), below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* module globals (single-phase init)                                  */

static PyObject *Decline;        /* _canon.Decline, a ValueError */
static PyObject *nfc_func;       /* unicodedata.normalize */
static PyObject *nfc_form;       /* "NFC" */
static PyObject *mapping_abc;    /* collections.abc.Mapping */
static PyObject *enum_type;      /* enum.Enum */
static PyObject *walk_types;     /* (Mapping, list, tuple, set, frozenset) */

#define MAX_CONVERT_HOPS 64
#define HARD_MAX_DEPTH 10000

static int
decline(const char *why)
{
    PyErr_SetString(Decline, why);
    return -1;
}

/* ------------------------------------------------------------------ */
/* growable output buffer and key/value work stack                     */

typedef struct {
    char *p;
    Py_ssize_t len;
    Py_ssize_t cap;
    int heap;
} Buf;

typedef struct {
    PyObject *key;   /* owned; raw key, then its NFC form */
    PyObject *value; /* owned; possibly replaced by maybe_json(value) */
} Item;

typedef struct {
    Buf buf;
    Item *items;
    Py_ssize_t nitems;
    Py_ssize_t capitems;
    int items_heap;
    PyObject *ignore;
    PyObject *volatile_keys;
    PyObject *convert;
    PyObject *maybe_json;
    Py_ssize_t max_depth;
} Enc;

static int
buf_grow(Buf *b, Py_ssize_t need)
{
    Py_ssize_t cap = b->cap;
    char *np;
    if (need > PY_SSIZE_T_MAX / 2 - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    while (cap - b->len < need) {
        cap *= 2;
    }
    if (b->heap) {
        np = PyMem_Realloc(b->p, (size_t)cap);
    }
    else {
        np = PyMem_Malloc((size_t)cap);
        if (np != NULL) {
            memcpy(np, b->p, (size_t)b->len);
        }
    }
    if (np == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = np;
    b->cap = cap;
    b->heap = 1;
    return 0;
}

static inline int
buf_reserve(Buf *b, Py_ssize_t need)
{
    if (b->cap - b->len < need) {
        return buf_grow(b, need);
    }
    return 0;
}

static inline int
buf_write(Buf *b, const char *s, Py_ssize_t n)
{
    if (buf_reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->p + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

static inline int
buf_putc(Buf *b, char c)
{
    if (buf_reserve(b, 1) < 0) {
        return -1;
    }
    b->p[b->len++] = c;
    return 0;
}

#define BUF_LIT(b, s) buf_write((b), (s), (Py_ssize_t)(sizeof(s) - 1))

static int
items_reserve(Enc *e, Py_ssize_t need)
{
    Py_ssize_t cap;
    Item *np;
    if (e->capitems - e->nitems >= need) {
        return 0;
    }
    if (need > PY_SSIZE_T_MAX / (Py_ssize_t)(4 * sizeof(Item)) - e->nitems) {
        PyErr_NoMemory();
        return -1;
    }
    cap = e->capitems;
    while (cap - e->nitems < need) {
        cap *= 2;
    }
    if (e->items_heap) {
        np = PyMem_Realloc(e->items, (size_t)cap * sizeof(Item));
    }
    else {
        np = PyMem_Malloc((size_t)cap * sizeof(Item));
        if (np != NULL) {
            memcpy(np, e->items, (size_t)e->nitems * sizeof(Item));
        }
    }
    if (np == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    e->items = np;
    e->capitems = cap;
    e->items_heap = 1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* strings                                                             */

/* json.dumps(ensure_ascii=False) escapes: 0 = raw byte, 'u' = \u00XX. */
static char ESC[128];
static const char HEX[] = "0123456789abcdef";

static void
init_esc(void)
{
    int c;
    for (c = 0; c < 0x20; c++) {
        ESC[c] = 'u';
    }
    ESC['\b'] = 'b';
    ESC['\f'] = 'f';
    ESC['\n'] = 'n';
    ESC['\r'] = 'r';
    ESC['\t'] = 't';
    ESC['"'] = '"';
    ESC['\\'] = '\\';
}

/* Write the escape for ASCII char c (ESC[c] != 0); space must be reserved (6). */
static inline Py_ssize_t
put_escape(char *out, unsigned char c)
{
    char k = ESC[c];
    out[0] = '\\';
    if (k != 'u') {
        out[1] = k;
        return 2;
    }
    out[1] = 'u';
    out[2] = '0';
    out[3] = '0';
    out[4] = HEX[(c >> 4) & 0xf];
    out[5] = HEX[c & 0xf];
    return 6;
}

static int
str_ready(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) {
        return -1;
    }
#else
    (void)s;
#endif
    return 0;
}

/* New reference to the NFC form of exact str s (s itself when already NFC). */
static PyObject *
nfc(PyObject *s)
{
    int kind;
    PyObject *args[2];
    PyObject *res;
    if (str_ready(s) < 0) {
        return NULL;
    }
    kind = PyUnicode_KIND(s);
    /* Every string made only of code points below U+0300 is NFC (all have
       NFC_Quick_Check=Yes and combining class 0); this covers Latin-1. */
    if (kind == PyUnicode_1BYTE_KIND) {
        return Py_NewRef(s);
    }
    if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *d = PyUnicode_2BYTE_DATA(s);
        Py_ssize_t i, n = PyUnicode_GET_LENGTH(s);
        for (i = 0; i < n; i++) {
            if (d[i] >= 0x300) {
                break;
            }
        }
        if (i == n) {
            return Py_NewRef(s);
        }
    }
    args[0] = nfc_form;
    args[1] = s;
    res = PyObject_Vectorcall(nfc_func, args, 2, NULL);
    if (res == NULL) {
        return NULL;
    }
    if (!PyUnicode_CheckExact(res) || str_ready(res) < 0) {
        Py_DECREF(res);
        if (!PyErr_Occurred()) {
            decline("unicodedata.normalize returned a non-str");
        }
        return NULL;
    }
    return res;
}

/* Write exact str s (already NFC) as a JSON string literal, UTF-8. */
static int
write_str(Enc *e, PyObject *s)
{
    Buf *b = &e->buf;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t i;

    if (PyUnicode_IS_ASCII(s)) {
        const unsigned char *p = (const unsigned char *)data;
        Py_ssize_t start = 0;
        if (buf_reserve(b, n + 2) < 0) {
            return -1;
        }
        b->p[b->len++] = '"';
        for (i = 0; i < n; i++) {
            unsigned char c = p[i];
            if (ESC[c]) {
                Py_ssize_t run = i - start;
                /* run bytes + 6 for the escape + rest of string + closing quote */
                if (buf_reserve(b, run + 6 + (n - i) + 1) < 0) {
                    return -1;
                }
                memcpy(b->p + b->len, p + start, (size_t)run);
                b->len += run;
                b->len += put_escape(b->p + b->len, c);
                start = i + 1;
            }
        }
        if (buf_reserve(b, (n - start) + 1) < 0) {
            return -1;
        }
        memcpy(b->p + b->len, p + start, (size_t)(n - start));
        b->len += n - start;
        b->p[b->len++] = '"';
        return 0;
    }

    /* Non-ASCII: at most maxb UTF-8 bytes per code point; ASCII escapes take up
       to 6, so room is re-checked (rarely) when one is written. */
    {
        Py_ssize_t maxb = kind == PyUnicode_1BYTE_KIND ? 2 : (kind == PyUnicode_2BYTE_KIND ? 3 : 4);
        char *out;
        if (n > (PY_SSIZE_T_MAX - 16) / 4) {
            PyErr_NoMemory();
            return -1;
        }
        if (buf_reserve(b, maxb * n + 2) < 0) {
            return -1;
        }
        out = b->p + b->len;
        *out++ = '"';
        for (i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c < 0x80) {
                if (ESC[c]) {
                    Py_ssize_t used = out - b->p;
                    b->len = used; /* keep what is written if the buffer moves */
                    if (buf_reserve(b, 6 + maxb * (n - i - 1) + 1) < 0) {
                        return -1;
                    }
                    out = b->p + used;
                    out += put_escape(out, (unsigned char)c);
                }
                else {
                    *out++ = (char)c;
                }
            }
            else if (c < 0x800) {
                *out++ = (char)(0xc0 | (c >> 6));
                *out++ = (char)(0x80 | (c & 0x3f));
            }
            else if (c < 0x10000) {
                if (c >= 0xd800 && c <= 0xdfff) {
                    return decline("lone surrogate in string");
                }
                *out++ = (char)(0xe0 | (c >> 12));
                *out++ = (char)(0x80 | ((c >> 6) & 0x3f));
                *out++ = (char)(0x80 | (c & 0x3f));
            }
            else {
                *out++ = (char)(0xf0 | (c >> 18));
                *out++ = (char)(0x80 | ((c >> 12) & 0x3f));
                *out++ = (char)(0x80 | ((c >> 6) & 0x3f));
                *out++ = (char)(0x80 | (c & 0x3f));
            }
        }
        *out++ = '"';
        b->len = out - b->p;
    }
    return 0;
}

/* Exact str value: NFC, then write. */
static int
write_str_value(Enc *e, PyObject *s)
{
    PyObject *n;
    int r;
    if (str_ready(s) < 0) {
        return -1;
    }
    if (PyUnicode_IS_ASCII(s)) {
        return write_str(e, s);
    }
    n = nfc(s);
    if (n == NULL) {
        return -1;
    }
    r = write_str(e, n);
    Py_DECREF(n);
    return r;
}

/* ------------------------------------------------------------------ */
/* numbers                                                             */

static int
write_ull(Buf *b, unsigned long long u, int neg)
{
    char tmp[24];
    char *end = tmp + sizeof(tmp);
    char *p = end;
    do {
        *--p = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u != 0);
    if (neg) {
        *--p = '-';
    }
    return buf_write(b, p, end - p);
}

static int
write_ll(Buf *b, long long v)
{
    if (v < 0) {
        return write_ull(b, 0ULL - (unsigned long long)v, 1);
    }
    return write_ull(b, (unsigned long long)v, 0);
}

/* {"\u0000int":"<hex(o)>"} for an int outside [-2**63, 2**64-1]. */
static int
write_int_tag(Enc *e, PyObject *o)
{
    PyObject *h = PyNumber_ToBase(o, 16);
    Py_ssize_t n;
    const char *s;
    int r = -1;
    if (h == NULL) {
        return -1;
    }
    s = PyUnicode_AsUTF8AndSize(h, &n);
    if (s != NULL && BUF_LIT(&e->buf, "{\"\\u0000int\":\"") == 0 &&
        buf_write(&e->buf, s, n) == 0 && BUF_LIT(&e->buf, "\"}") == 0) {
        r = 0;
    }
    Py_DECREF(h);
    return r;
}

/* Exact int. */
static int
write_int(Enc *e, PyObject *o)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow == 0) {
        return write_ll(&e->buf, v);
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
            return write_ull(&e->buf, u, 0);
        }
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        PyErr_Clear();
    }
    return write_int_tag(e, o);
}

static const double POW10[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
    1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
};

/* Fast path for float.__repr__ of a finite, non-integral v with 1e-4 <= |v| < 1e14
   whose shortest round-trip form has at most 15 significant digits (prices,
   scores, 1234.5, 0.25). Returns 1 when written, 0 when v needs the general
   algorithm, -1 on error.

   Why this equals repr(): for the smallest k such that some integer m with
   |m| < 1e15 gives m / 10**k == v (IEEE division of exact operands is correctly
   rounded, i.e. the double nearest the decimal m/10**k), that decimal has the
   fewest significant digits among all decimals reading back as v; decimals of
   at most 15 significant digits map to distinct doubles (DBL_DIG), so it is the
   only candidate of that length, which is what repr() (shortest round-trip)
   prints; repr() uses fixed notation for 1e-4 <= |v| < 1e16. The candidate
   m = round(v * 10**k) is exact: the product's error is below 0.25 for
   |m| < 1e15 < 2**50. */
static int
write_short_float(Buf *b, double v)
{
    double a = fabs(v);
    int k;
    if (!(a >= 1e-4 && a < 1e14)) {
        return 0;
    }
    for (k = 1; k < (int)(sizeof(POW10) / sizeof(POW10[0])); k++) {
        double scaled = a * POW10[k];
        double m;
        if (scaled >= 1e15) {
            return 0;
        }
        m = floor(scaled + 0.5);
        if (m / POW10[k] == a) {
            char tmp[40];
            char *end = tmp + sizeof(tmp);
            char *p = end;
            unsigned long long u = (unsigned long long)m;
            int i;
            for (i = 0; i < k; i++) {
                *--p = (char)('0' + (int)(u % 10));
                u /= 10;
            }
            *--p = '.';
            do {
                *--p = (char)('0' + (int)(u % 10));
                u /= 10;
            } while (u != 0);
            if (v < 0) {
                *--p = '-';
            }
            return buf_write(b, p, end - p) < 0 ? -1 : 1;
        }
    }
    return 0;
}

static int
write_float(Enc *e, double v)
{
    if (isnan(v)) {
        return BUF_LIT(&e->buf, "{\"\\u0000float\":\"nan\"}");
    }
    if (isinf(v)) {
        if (v > 0) {
            return BUF_LIT(&e->buf, "{\"\\u0000float\":\"inf\"}");
        }
        return BUF_LIT(&e->buf, "{\"\\u0000float\":\"-inf\"}");
    }
    if (v == floor(v)) {
        /* integral: the int rule applied to int(v); -0.0 -> 0 */
        if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
            return write_ll(&e->buf, (long long)v);
        }
        if (v > 0 && v < 18446744073709551616.0) {
            return write_ull(&e->buf, (unsigned long long)v, 0);
        }
        {
            PyObject *i = PyLong_FromDouble(v);
            int r;
            if (i == NULL) {
                return -1;
            }
            r = write_int_tag(e, i);
            Py_DECREF(i);
            return r;
        }
    }
    {
        int r = write_short_float(&e->buf, v);
        if (r != 0) {
            return r < 0 ? -1 : 0;
        }
    }
    {
        char *s = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        int r;
        if (s == NULL) {
            return -1;
        }
        r = buf_write(&e->buf, s, (Py_ssize_t)strlen(s));
        PyMem_Free(s);
        return r;
    }
}

/* ------------------------------------------------------------------ */
/* containers                                                          */

static int write_value(Enc *e, PyObject *o, Py_ssize_t depth);

/* isinstance(v, str), honouring __class__ as the walker's isinstance() does. */
static int
isinstance_str(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    if (PyUnicode_Check(v)) {
        return 1;
    }
    if (v == Py_None || t == &PyDict_Type || t == &PyList_Type || t == &PyTuple_Type ||
        t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type) {
        return 0;
    }
    return PyObject_IsInstance(v, (PyObject *)&PyUnicode_Type);
}

/* Key classes for _is_message_shaped (raw keys, exact ASCII match). */
enum {
    K_ROLE = 1 << 0,
    K_TOOL_CALL_ID = 1 << 1,
    K_NAME = 1 << 2,
    K_ARGS = 1 << 3,
    K_ARGUMENTS = 1 << 4,
    K_FUNCTION = 1 << 5,
    K_TYPE = 1 << 6,
    K_CONTENT = 1 << 7,
    K_TEXT = 1 << 8,
};

static unsigned
classify(PyObject *k)
{
    const char *s;
    if (!PyUnicode_IS_ASCII(k)) {
        return 0;
    }
    s = (const char *)PyUnicode_1BYTE_DATA(k);
    switch (PyUnicode_GET_LENGTH(k)) {
    case 4:
        switch (s[0]) {
        case 'r':
            return memcmp(s, "role", 4) == 0 ? K_ROLE : 0;
        case 'n':
            return memcmp(s, "name", 4) == 0 ? K_NAME : 0;
        case 'a':
            return memcmp(s, "args", 4) == 0 ? K_ARGS : 0;
        case 't':
            if (memcmp(s, "type", 4) == 0) {
                return K_TYPE;
            }
            return memcmp(s, "text", 4) == 0 ? K_TEXT : 0;
        default:
            return 0;
        }
    case 7:
        return memcmp(s, "content", 7) == 0 ? K_CONTENT : 0;
    case 8:
        return memcmp(s, "function", 8) == 0 ? K_FUNCTION : 0;
    case 9:
        return memcmp(s, "arguments", 9) == 0 ? K_ARGUMENTS : 0;
    case 12:
        return memcmp(s, "tool_call_id", 12) == 0 ? K_TOOL_CALL_ID : 0;
    default:
        return 0;
    }
}

/* Code-point order of two exact, ready str (== UTF-8 byte order). */
static int
key_cmp(PyObject *a, PyObject *b)
{
    if (PyUnicode_KIND(a) == PyUnicode_1BYTE_KIND && PyUnicode_KIND(b) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t la = PyUnicode_GET_LENGTH(a), lb = PyUnicode_GET_LENGTH(b);
        Py_ssize_t i, n = la < lb ? la : lb;
        const Py_UCS1 *pa = PyUnicode_1BYTE_DATA(a), *pb = PyUnicode_1BYTE_DATA(b);
        /* keys are short and usually differ early: skip the memcmp call */
        for (i = 0; i < n && i < 8; i++) {
            if (pa[i] != pb[i]) {
                return (int)pa[i] - (int)pb[i];
            }
        }
        if (i < n) {
            int c = memcmp(pa + i, pb + i, (size_t)(n - i));
            if (c != 0) {
                return c;
            }
        }
        return (la > lb) - (la < lb);
    }
    return PyUnicode_Compare(a, b); /* cannot fail for two str */
}

static int
item_qsort_cmp(const void *x, const void *y)
{
    return key_cmp(((const Item *)x)->key, ((const Item *)y)->key);
}

static void
sort_items(Item *it, Py_ssize_t n)
{
    Py_ssize_t i, j;
    if (n > 16) {
        qsort(it, (size_t)n, sizeof(Item), item_qsort_cmp);
        return;
    }
    for (i = 1; i < n; i++) {
        Item cur = it[i];
        for (j = i; j > 0 && key_cmp(it[j - 1].key, cur.key) > 0; j--) {
            it[j] = it[j - 1];
        }
        it[j] = cur;
    }
}

static void
items_pop(Enc *e, Py_ssize_t base)
{
    Py_ssize_t i;
    for (i = base; i < e->nitems; i++) {
        Py_XDECREF(e->items[i].key);
        Py_XDECREF(e->items[i].value);
    }
    e->nitems = base;
}

static int
write_dict(Enc *e, PyObject *d, Py_ssize_t depth)
{
    Py_ssize_t size0 = PyDict_GET_SIZE(d);
    Py_ssize_t base = e->nitems;
    Py_ssize_t pos = 0, i, n = 0, m;
    PyObject *k, *v;
    unsigned flags = 0;
    Py_ssize_t type_idx = -1;
    int message, renamed = 0;

    if (size0 == 0) {
        return BUF_LIT(&e->buf, "{}");
    }
    if (items_reserve(e, size0) < 0) {
        return -1;
    }
    /* pass 1: snapshot items (no Python code runs here), classify raw keys */
    while (PyDict_Next(d, &pos, &k, &v)) {
        unsigned c;
        if (!PyUnicode_CheckExact(k)) {
            items_pop(e, base);
            return decline("dict key is not an exact str");
        }
        if (n >= size0 || str_ready(k) < 0) { /* cannot happen */
            items_pop(e, base);
            return n >= size0 ? decline("dict changed size") : -1;
        }
        c = classify(k);
        if (c == K_TYPE) {
            type_idx = base + n;
        }
        flags |= c;
        e->items[base + n].key = Py_NewRef(k);
        e->items[base + n].value = Py_NewRef(v);
        n++;
        e->nitems = base + n;
    }
    message = (flags & (K_ROLE | K_TOOL_CALL_ID)) ||
              ((flags & K_NAME) && (flags & (K_ARGS | K_ARGUMENTS))) ||
              ((flags & K_FUNCTION) && (flags & K_TYPE));
    if (!message && type_idx >= 0 && (flags & (K_CONTENT | K_TEXT))) {
        /* isinstance(d.get("type"), str) and ("content" in d or "text" in d) */
        message = isinstance_str(e->items[type_idx].value);
        if (message < 0) {
            goto fail;
        }
    }

    /* pass 2: drop ignored/volatile keys (raw names), NFC the rest, parse args */
    for (i = base; i < base + n; i++) {
        PyObject *key = e->items[i].key;
        int r = PySet_Contains(e->ignore, key);
        if (r == 0 && message) {
            r = PySet_Contains(e->volatile_keys, key);
        }
        if (r < 0) {
            goto fail;
        }
        if (r > 0) {
            Py_CLEAR(e->items[i].key);
            Py_CLEAR(e->items[i].value);
            continue;
        }
        if (!PyUnicode_IS_ASCII(key)) {
            PyObject *nk = nfc(key);
            if (nk == NULL) {
                goto fail;
            }
            if (nk != key) {
                renamed = 1;
            }
            Py_SETREF(e->items[i].key, nk);
            key = nk;
        }
        if (PyUnicode_IS_ASCII(key) && (classify(key) & (K_ARGS | K_ARGUMENTS))) {
            /* if name in _ARG_KEYS and isinstance(value, str): value = maybe_json(value) */
            int is_str = isinstance_str(e->items[i].value);
            if (is_str < 0) {
                goto fail;
            }
            if (is_str) {
                PyObject *parsed = PyObject_CallOneArg(e->maybe_json, e->items[i].value);
                if (parsed == NULL) {
                    goto fail;
                }
                Py_SETREF(e->items[i].value, parsed);
            }
        }
    }
    /* compact */
    m = 0;
    for (i = base; i < base + n; i++) {
        if (e->items[i].key != NULL) {
            e->items[base + m++] = e->items[i];
        }
    }
    e->nitems = base + m;
    sort_items(e->items + base, m);
    if (renamed) {
        for (i = base + 1; i < base + m; i++) {
            if (key_cmp(e->items[i - 1].key, e->items[i].key) == 0) {
                decline("dict keys collide after NFC");
                goto fail;
            }
        }
    }

    if (buf_putc(&e->buf, '{') < 0) {
        goto fail;
    }
    for (i = 0; i < m; i++) {
        if (i > 0 && buf_putc(&e->buf, ',') < 0) {
            goto fail;
        }
        /* e->items may move while children run: index, never keep pointers */
        if (write_str(e, e->items[base + i].key) < 0 || buf_putc(&e->buf, ':') < 0 ||
            write_value(e, e->items[base + i].value, depth + 1) < 0) {
            goto fail;
        }
    }
    if (buf_putc(&e->buf, '}') < 0) {
        goto fail;
    }
    items_pop(e, base);
    if (PyDict_GET_SIZE(d) != size0) {
        return decline("dict changed size during fingerprinting");
    }
    return 0;
fail:
    items_pop(e, base);
    return -1;
}

static int
write_list(Enc *e, PyObject *seq, Py_ssize_t depth)
{
    int is_list = PyList_CheckExact(seq);
    Py_ssize_t i;
    if (buf_putc(&e->buf, '[') < 0) {
        return -1;
    }
    /* re-read the size every step: callbacks may mutate a list */
    for (i = 0; i < (is_list ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq)); i++) {
        PyObject *item = is_list ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
        int r;
        if (i > 0 && buf_putc(&e->buf, ',') < 0) {
            return -1;
        }
        Py_INCREF(item);
        r = write_value(e, item, depth + 1);
        Py_DECREF(item);
        if (r < 0) {
            return -1;
        }
    }
    return buf_putc(&e->buf, ']');
}

/* ------------------------------------------------------------------ */
/* dispatch                                                            */

static int
write_container(Enc *e, PyObject *o, Py_ssize_t depth, int is_dict)
{
    int r;
    if (depth >= e->max_depth) {
        return decline("nesting too deep (or cyclic)");
    }
    if (Py_EnterRecursiveCall(" in liveguard._canon.dumps")) {
        return -1;
    }
    r = is_dict ? write_dict(e, o, depth) : write_list(e, o, depth);
    Py_LeaveRecursiveCall();
    return r;
}

/* The walker's isinstance() cascade for a value that is not an exact JSON type:
   Mapping/list/tuple/set/frozenset (declined here), then str, int (not Enum) and
   float subclasses, written as str.__str__(x), int(x), float(x). Returns 1 when
   o was written, 0 when o must go through convert(), -1 on error or decline. */
static int
write_other(Enc *e, PyObject *o)
{
    int r;
    if (PyDict_Check(o) || PyList_Check(o) || PyTuple_Check(o) || PyAnySet_Check(o) ||
        PyType_HasFeature(Py_TYPE(o), Py_TPFLAGS_MAPPING)) {
        return decline("container subclass or set");
    }
    r = PyObject_IsInstance(o, walk_types);
    if (r != 0) {
        return r < 0 ? -1 : decline("Mapping or container look-alike");
    }
    r = PyObject_IsInstance(o, (PyObject *)&PyUnicode_Type);
    if (r < 0) {
        return -1;
    }
    if (r > 0) {
        PyObject *s;
        if (!PyUnicode_Check(o)) {
            return decline("object claims to be a str");
        }
        s = PyUnicode_FromObject(o); /* exact copy, as str.__str__(x) */
        if (s == NULL) {
            return -1;
        }
        r = write_str_value(e, s);
        Py_DECREF(s);
        return r < 0 ? -1 : 1;
    }
    r = PyObject_IsInstance(o, (PyObject *)&PyLong_Type);
    if (r > 0) {
        r = PyObject_IsInstance(o, enum_type);
        if (r == 0) {
            PyObject *i;
            if (!PyLong_Check(o)) {
                return decline("object claims to be an int");
            }
            i = PyNumber_Long(o); /* int(x) */
            if (i == NULL) {
                return -1;
            }
            r = PyLong_CheckExact(i) ? write_int(e, i) : decline("int() returned a subclass");
            Py_DECREF(i);
            return r < 0 ? -1 : 1;
        }
        /* IntEnum/IntFlag: fall through, they are converted like any Enum */
    }
    if (r < 0) {
        return -1;
    }
    r = PyObject_IsInstance(o, (PyObject *)&PyFloat_Type);
    if (r > 0) {
        PyObject *f;
        if (!PyFloat_Check(o)) {
            return decline("object claims to be a float");
        }
        f = PyNumber_Float(o); /* float(x) */
        if (f == NULL) {
            return -1;
        }
        r = PyFloat_CheckExact(f) ? write_float(e, PyFloat_AS_DOUBLE(f))
                                  : decline("float() returned a subclass");
        Py_DECREF(f);
        return r < 0 ? -1 : 1;
    }
    return r < 0 ? -1 : 0;
}

static int
write_value(Enc *e, PyObject *o, Py_ssize_t depth)
{
    PyObject *owned = NULL; /* current converted object, if any */
    int r, hops;

    for (hops = 0;; hops++) {
        PyTypeObject *t = Py_TYPE(o);
        if (t == &PyUnicode_Type) {
            r = write_str_value(e, o);
            break;
        }
        if (o == Py_None) {
            r = BUF_LIT(&e->buf, "null");
            break;
        }
        if (o == Py_True) {
            r = BUF_LIT(&e->buf, "true");
            break;
        }
        if (o == Py_False) {
            r = BUF_LIT(&e->buf, "false");
            break;
        }
        if (t == &PyLong_Type) {
            r = write_int(e, o);
            break;
        }
        if (t == &PyFloat_Type) {
            r = write_float(e, PyFloat_AS_DOUBLE(o));
            break;
        }
        if (t == &PyDict_Type) {
            r = write_container(e, o, depth, 1);
            break;
        }
        if (t == &PyList_Type || t == &PyTuple_Type) {
            r = write_container(e, o, depth, 0);
            break;
        }
        if (hops >= MAX_CONVERT_HOPS) {
            r = decline("too many conversions");
            break;
        }
        r = write_other(e, o);
        if (r != 0) {
            r = r < 0 ? -1 : 0;
            break;
        }
        {
            PyObject *conv = PyObject_CallOneArg(e->convert, o);
            if (conv == NULL) {
                r = -1;
                break;
            }
            Py_XSETREF(owned, conv);
            o = conv; /* conversion adds no depth */
        }
    }
    Py_XDECREF(owned);
    return r;
}

/* ------------------------------------------------------------------ */
/* entry point                                                         */

PyDoc_STRVAR(dumps_doc,
"dumps(obj, ignore_keys, volatile_keys, convert, maybe_json, max_depth, /) -> bytes\n"
"\n"
"Canonical JSON bytes of obj, identical to Fingerprinter(ignore_keys).reference_bytes(obj).\n"
"Raises (usually Decline) for inputs it does not handle; the caller then uses the\n"
"pure-Python walker.");

static PyObject *
canon_dumps(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    char small_buf[2048];
    Item small_items[64];
    Enc e;
    PyObject *res = NULL;
    Py_ssize_t max_depth;

    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "dumps() takes exactly 6 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyAnySet_Check(args[1]) || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "ignore_keys and volatile_keys must be sets");
        return NULL;
    }
    if (!PyCallable_Check(args[3]) || !PyCallable_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "convert and maybe_json must be callable");
        return NULL;
    }
    if (!PyLong_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "max_depth must be an int");
        return NULL;
    }
    max_depth = PyLong_AsSsize_t(args[5]);
    if (max_depth == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (max_depth < 0 || max_depth > HARD_MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "max_depth out of range");
        return NULL;
    }

    e.buf.p = small_buf;
    e.buf.len = 0;
    e.buf.cap = (Py_ssize_t)sizeof(small_buf);
    e.buf.heap = 0;
    e.items = small_items;
    e.nitems = 0;
    e.capitems = (Py_ssize_t)(sizeof(small_items) / sizeof(small_items[0]));
    e.items_heap = 0;
    e.ignore = args[1];
    e.volatile_keys = args[2];
    e.convert = args[3];
    e.maybe_json = args[4];
    e.max_depth = max_depth;

    if (write_value(&e, args[0], 0) == 0) {
        res = PyBytes_FromStringAndSize(e.buf.p, e.buf.len);
    }
    items_pop(&e, 0); /* no-op unless something went wrong */
    if (e.buf.heap) {
        PyMem_Free(e.buf.p);
    }
    if (e.items_heap) {
        PyMem_Free(e.items);
    }
    return res;
}

/* ------------------------------------------------------------------ */
/* Scanner: the step-text rule's pre-filter (rules/injection.py)       */
/*
 * Scanner(cmap, table, nclasses, start) runs a DFA that Python builds
 * (injection._scan_tables) from the trigger words and the `end ... of`
 * tokens of _END_OF_JSON; may_match(raw) is _json_may_match(raw) in one
 * pass over the bytes: ASCII bytes go through the DFA (cmap lower-cases
 * them), other bytes are skipped (dropped: the letters either side join),
 * and one of the four fold letters (UTF-8 of U+0130, U+0131, U+017F,
 * U+212A) anywhere makes it decline (None): Python then decides.
 *
 * table: uint16 entries, row-major [state][class], each the next state's
 * row offset (state * nclasses); state 0 is the match state (absorbing).
 */

typedef struct {
    PyObject_HEAD
    uint16_t *table;
    Py_ssize_t nentries;
    uint16_t start;
    uint8_t cmap[128];
} Scanner;

static void
scanner_dealloc(Scanner *self)
{
    PyMem_Free(self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_buffer cmap, table;
    Py_ssize_t nclasses, start, nentries, i;
    Scanner *self = NULL;
    const uint16_t *src;

    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Scanner() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*y*nn:Scanner", &cmap, &table, &nclasses, &start)) {
        return NULL;
    }
    nentries = table.len / (Py_ssize_t)sizeof(uint16_t);
    if (cmap.len != 128 || nclasses < 1 || nclasses > 256 ||
        table.len % (Py_ssize_t)(sizeof(uint16_t) * (size_t)nclasses) != 0 ||
        nentries < 2 * nclasses || nentries > 65536 ||
        start <= 0 || start >= nentries || start % nclasses != 0) {
        PyErr_SetString(PyExc_ValueError, "Scanner: inconsistent tables");
        goto done;
    }
    for (i = 0; i < 128; i++) {
        if (((const uint8_t *)cmap.buf)[i] >= nclasses) {
            PyErr_SetString(PyExc_ValueError, "Scanner: class out of range");
            goto done;
        }
    }
    src = (const uint16_t *)table.buf;
    for (i = 0; i < nentries; i++) {
        if (src[i] >= nentries || src[i] % nclasses != 0 || (i < nclasses && src[i] != 0)) {
            PyErr_SetString(PyExc_ValueError, "Scanner: state out of range");
            goto done;
        }
    }
    self = (Scanner *)type->tp_alloc(type, 0);
    if (self == NULL) {
        goto done;
    }
    self->table = PyMem_Malloc((size_t)table.len);
    if (self->table == NULL) {
        Py_CLEAR(self);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(self->table, table.buf, (size_t)table.len);
    memcpy(self->cmap, cmap.buf, 128);
    self->nentries = nentries;
    self->start = (uint16_t)start;
done:
    PyBuffer_Release(&cmap);
    PyBuffer_Release(&table);
    return (PyObject *)self;
}

/* 1 when one of the four fold letters' UTF-8 starts at p (p[0] >= 0x80). */
static inline int
fold_at(const uint8_t *p, const uint8_t *end)
{
    if (p[0] == 0xC4) {
        return p + 1 < end && (p[1] == 0xB0 || p[1] == 0xB1);
    }
    if (p[0] == 0xC5) {
        return p + 1 < end && p[1] == 0xBF;
    }
    if (p[0] == 0xE2) {
        return p + 2 < end && p[1] == 0x84 && p[2] == 0xAA;
    }
    return 0;
}

enum { SCAN_NONE, SCAN_FOUND, SCAN_FOLD };

/* The DFA from state *s over [p, stop) (stop <= end: fold letters are looked for up to end).
 * Returns SCAN_FOUND at a match, SCAN_FOLD at a fold letter, else SCAN_NONE with *s the state
 * at stop; with until_start, also returns (SCAN_NONE) as soon as *s is the start state. */
static inline int
scan_run(const Scanner *self, unsigned *s, const uint8_t *p, const uint8_t *stop,
         const uint8_t *end, int until_start)
{
    const uint16_t *table = self->table;
    const uint8_t *cmap = self->cmap;
    unsigned st = *s;
    for (; p < stop; p++) {
        uint8_t b = *p;
        if (until_start && st == self->start) {
            break;
        }
        if (b & 0x80) {
            if (fold_at(p, end)) {
                return SCAN_FOLD;
            }
            continue;
        }
        st = table[st + cmap[b]];
        if (st == 0) {
            return SCAN_FOUND;
        }
    }
    *s = st;
    return SCAN_NONE;
}

/* One lane's step over byte b at p (see scanner_may_match). */
#define LANE_STEP(st, b, p)                   \
    do {                                      \
        if ((b) & 0x80) {                     \
            if (fold_at((p), end)) {          \
                Py_RETURN_NONE;               \
            }                                 \
        }                                     \
        else {                                \
            (st) = table[(st) + cmap[(b)]];   \
        }                                     \
    } while (0)

#define SCAN_LANES 4
#define SCAN_LANED_MIN 256 /* shorter texts: one lane */

PyDoc_STRVAR(may_match_doc,
"may_match(raw, /) -> bool | None\n"
"\n"
"injection._json_may_match(raw) in one pass: True or False, or None when raw holds one\n"
"of the four letters re.IGNORECASE folds to ASCII (the caller then decides in Python).");

/*
 * One pass, in SCAN_LANES interleaved lanes (independent table look-ups overlap; one lane is
 * bound by the latency of its look-up chain). Lane k starts in the start state at its
 * segment's first byte and so finds every match whose first byte is in its segment or later;
 * past its segment it goes on until it is back in the start state (then every thread it
 * carried is dead, and the next lane's state is the same as its own from there on) or at the
 * end. So the lanes together find a match exactly when one lane over the whole text does.
 * Every byte is looked at for a fold letter by the lane of its segment.
 */
static PyObject *
scanner_may_match(Scanner *self, PyObject *raw)
{
    const uint8_t *buf, *end, *p;
    const uint16_t *table = self->table;
    const uint8_t *cmap = self->cmap;
    unsigned lanes[SCAN_LANES];
    Py_ssize_t n, seg, i;
    int k, r;

    if (!PyBytes_Check(raw)) {
        PyErr_Format(PyExc_TypeError, "may_match() needs bytes, not %.100s", Py_TYPE(raw)->tp_name);
        return NULL;
    }
    buf = (const uint8_t *)PyBytes_AS_STRING(raw);
    n = PyBytes_GET_SIZE(raw);
    end = buf + n;
    for (k = 0; k < SCAN_LANES; k++) {
        lanes[k] = self->start;
    }
    if (n < SCAN_LANED_MIN) {
        r = scan_run(self, &lanes[0], buf, end, end, 0);
        goto done;
    }
    seg = n / SCAN_LANES;
    {
        unsigned s0 = self->start, s1 = s0, s2 = s0, s3 = s0;
        const uint8_t *q0 = buf, *q1 = buf + seg, *q2 = buf + 2 * seg, *q3 = buf + 3 * seg;
        for (i = 0; i < seg; i++) {
            uint8_t b0 = q0[i], b1 = q1[i], b2 = q2[i], b3 = q3[i];
            if (((b0 | b1 | b2 | b3) & 0x80) == 0) {
                s0 = table[s0 + cmap[b0]];
                s1 = table[s1 + cmap[b1]];
                s2 = table[s2 + cmap[b2]];
                s3 = table[s3 + cmap[b3]];
            }
            else {
                LANE_STEP(s0, b0, q0 + i);
                LANE_STEP(s1, b1, q1 + i);
                LANE_STEP(s2, b2, q2 + i);
                LANE_STEP(s3, b3, q3 + i);
            }
            if (s0 == 0 || s1 == 0 || s2 == 0 || s3 == 0) {
                r = SCAN_FOUND;
                goto done;
            }
        }
        lanes[0] = s0;
        lanes[1] = s1;
        lanes[2] = s2;
        lanes[3] = s3;
    }
    /* the last lane to the end; then the others on past their segments */
    r = scan_run(self, &lanes[SCAN_LANES - 1], buf + SCAN_LANES * seg, end, end, 0);
    for (k = 0; k < SCAN_LANES - 1 && r == SCAN_NONE; k++) {
        r = scan_run(self, &lanes[k], buf + (k + 1) * seg, end, end, 1);
    }
done:
    if (r == SCAN_FOLD) {
        Py_RETURN_NONE;
    }
    if (r == SCAN_NONE) {
        Py_RETURN_FALSE;
    }
    for (p = buf; p < end; p++) { /* a match: still decline if a fold letter is anywhere */
        if ((*p & 0x80) && fold_at(p, end)) {
            Py_RETURN_NONE;
        }
    }
    Py_RETURN_TRUE;
}

#undef LANE_STEP

static PyMethodDef scanner_methods[] = {
    {"may_match", (PyCFunction)scanner_may_match, METH_O, may_match_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(scanner_doc,
"Scanner(cmap, table, nclasses, start, /)\n"
"\n"
"The step-text pre-filter's DFA, built by liveguard.rules.injection (see may_match).");

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "liveguard._canon.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = scanner_doc,
    .tp_methods = scanner_methods,
    .tp_new = scanner_new,
};

static PyMethodDef canon_methods[] = {
    {"dumps", (PyCFunction)(void (*)(void))canon_dumps, METH_FASTCALL, dumps_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef canon_module = {
    PyModuleDef_HEAD_INIT,
    "liveguard._canon",
    "Native canonical-JSON writer for liveguard.fingerprint (see fingerprint.py).",
    -1,
    canon_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

static PyObject *
import_attr(const char *module, const char *name)
{
    PyObject *mod = PyImport_ImportModule(module);
    PyObject *attr;
    if (mod == NULL) {
        return NULL;
    }
    attr = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return attr;
}

PyMODINIT_FUNC
PyInit__canon(void)
{
    PyObject *m;

    init_esc();
    if (nfc_func == NULL) {
        nfc_func = import_attr("unicodedata", "normalize");
        nfc_form = PyUnicode_InternFromString("NFC");
        mapping_abc = import_attr("collections.abc", "Mapping");
        enum_type = import_attr("enum", "Enum");
        Decline = PyErr_NewExceptionWithDoc(
            "liveguard._canon.Decline",
            "The native writer does not handle this input; use the pure-Python walker.",
            PyExc_ValueError, NULL);
        if (mapping_abc != NULL) {
            walk_types = PyTuple_Pack(5, mapping_abc, (PyObject *)&PyList_Type,
                                      (PyObject *)&PyTuple_Type, (PyObject *)&PySet_Type,
                                      (PyObject *)&PyFrozenSet_Type);
        }
        if (nfc_func == NULL || nfc_form == NULL || mapping_abc == NULL || enum_type == NULL ||
            walk_types == NULL || Decline == NULL) {
            Py_CLEAR(nfc_func);
            Py_CLEAR(nfc_form);
            Py_CLEAR(mapping_abc);
            Py_CLEAR(enum_type);
            Py_CLEAR(walk_types);
            Py_CLEAR(Decline);
            return NULL;
        }
    }
    m = PyModule_Create(&canon_module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Decline", Decline) < 0 || PyType_Ready(&ScannerType) < 0 ||
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
