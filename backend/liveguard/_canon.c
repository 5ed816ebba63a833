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
 * Also Scanner: the step-text rule's pre-filter (rules/injection.py; may_match_normalised:
 * on Latin-1 text normalised), and mask: the built-in volatile-text patterns
 * (fingerprint.VolatileMask), and Words: the step-text rule's per-alternative gates (fields:
 * of a step's text fields at once, from their Python objects), below.
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

#if defined(__SSE2__)
#include <emmintrin.h>
/* bit i: ASCII byte p[i] needs an escape (ESC: a control character, '"' or '\\'), for 16 bytes */
static inline unsigned
esc_bits16(const unsigned char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i hit = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                               _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                            _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    return (unsigned)_mm_movemask_epi8(hit);
}
#endif

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
        i = 0;
        while (i < n) {
            unsigned char c;
            Py_ssize_t run;
#if defined(__SSE2__)
            if (i + 16 <= n) { /* 16 bytes at a time to the next byte to escape */
                unsigned bits = esc_bits16(p + i);
                if (bits == 0) {
                    i += 16;
                    continue;
                }
                i += __builtin_ctz(bits);
            }
            else
#endif
            if (!ESC[p[i]]) {
                i++;
                continue;
            }
            c = p[i];
            run = i - start;
            /* run bytes + 6 for the escape + rest of string + closing quote */
            if (buf_reserve(b, run + 6 + (n - i) + 1) < 0) {
                return -1;
            }
            memcpy(b->p + b->len, p + start, (size_t)run);
            b->len += run;
            b->len += put_escape(b->p + b->len, c);
            start = ++i;
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
static PyObject *scanner_scan(Scanner *self, const uint8_t *buf, Py_ssize_t n);

static PyObject *
scanner_may_match(Scanner *self, PyObject *raw)
{
    if (!PyBytes_Check(raw)) {
        PyErr_Format(PyExc_TypeError, "may_match() needs bytes, not %.100s", Py_TYPE(raw)->tp_name);
        return NULL;
    }
    return scanner_scan(self, (const uint8_t *)PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
}

/* UTF-8 lead bytes: of a Latin-1 character (U+0080-U+00FF) */
#define LEAD_LATIN1(b) ((b) == 0xC2 || (b) == 0xC3)
/* of a character beyond Latin-1 that injection.normalise may turn into ASCII (the bytes
   injection._OTHER_BYTES_WIDE leaves) */
#define LEAD_WIDE(b) (((b) >= 0xC4 && (b) <= 0xD4) || ((b) >= 0xE1 && (b) <= 0xE3) || (b) == 0xEA || \
                      ((b) >= 0xEF && (b) <= 0xF4))

PyDoc_STRVAR(may_match_normalised_doc,
"may_match_normalised(raw, latin1_table, /) -> bool | None\n"
"\n"
"injection._may_normalise(raw) and injection._json_may_match_core(injection._normalise_json(raw))\n"
"in one pass, for raw whose non-ASCII characters are Latin-1 ones (mapped by latin1_table,\n"
"injection._LATIN1_TABLE: what is not ASCII then is dropped) or ones normalising cannot turn\n"
"into ASCII (dropped); None when raw holds another (Python then decides).");

static PyObject *
scanner_may_match_normalised(Scanner *self, PyObject *const *args, Py_ssize_t nargs)
{
    const uint8_t *src, *map;
    uint8_t *out;
    Py_ssize_t n, i, o = 0;
    int normalisable = 0;
    PyObject *res;

    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1]) || PyBytes_GET_SIZE(args[1]) != 256) {
        PyErr_SetString(PyExc_TypeError, "may_match_normalised() takes bytes and a 256-byte table");
        return NULL;
    }
    src = (const uint8_t *)PyBytes_AS_STRING(args[0]);
    n = PyBytes_GET_SIZE(args[0]);
    map = (const uint8_t *)PyBytes_AS_STRING(args[1]);
    for (i = 0; i < n; i++) {
        if (src[i] & 0x80) {
            if (LEAD_WIDE(src[i])) {
                Py_RETURN_NONE;
            }
            normalisable |= LEAD_LATIN1(src[i]);
        }
    }
    if (!normalisable) { /* _may_normalise(raw) is False */
        Py_RETURN_FALSE;
    }
    out = PyMem_Malloc((size_t)n);
    if (out == NULL) {
        return PyErr_NoMemory();
    }
    for (i = 0; i < n; i++) {
        uint8_t b = src[i];
        if (!(b & 0x80)) {
            out[o++] = b;
        }
        else if (LEAD_LATIN1(b) && i + 1 < n && (src[i + 1] & 0xC0) == 0x80) {
            uint8_t m = map[(b & 0x1F) << 6 | (src[i + 1] & 0x3F)];
            if (!(m & 0x80)) {
                out[o++] = m;
            }
            i++;
        }
        /* any other byte: a character normalising cannot make ASCII (or a broken sequence,
           which decoding replaces by U+FFFD): dropped, as encode("latin-1", "ignore") drops it */
    }
    res = scanner_scan(self, out, o);
    PyMem_Free(out);
    return res;
}

static PyObject *
scanner_scan(Scanner *self, const uint8_t *buf, Py_ssize_t n)
{
    const uint8_t *end, *p;
    const uint16_t *table = self->table;
    const uint8_t *cmap = self->cmap;
    unsigned lanes[SCAN_LANES];
    Py_ssize_t seg, i;
    int k, r;

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
    {"may_match_normalised", (PyCFunction)(void (*)(void))scanner_may_match_normalised, METH_FASTCALL,
     may_match_normalised_doc},
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

/* ------------------------------------------------------------------ */
/* mask: the built-in volatile-text patterns (fingerprint.VOLATILE_PATTERNS) */
/*
 * mask(data, kinds) -> bytes is, for kinds a bytes of pattern numbers (0 iso_datetime,
 * 1 clock_time, 2 relative_time, 3 elapsed, 4 uuid, 5 keyed_id, 6 hex_id), the same as
 * re.sub(VOLATILE_PATTERNS[name].encode(), b"\x00~", data) for each name in turn (the
 * pure-Python VolatileMask.bytes is the definition). Bytes patterns: \d, \w, \s and
 * (?i:) are ASCII-only, so each matcher below is a small hand-written backtracking
 * search that tries the regex's choices in its order (greedy first) and returns the end
 * of the first successful one, or -1. Every match is at least 2 bytes long, so the
 * output is never longer than the input.
 */

#define M_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define M_ALPHA(c) ((((c) | 0x20) >= 'a') && (((c) | 0x20) <= 'z'))
#define M_WORD(c) (M_DIGIT(c) || M_ALPHA(c) || (c) == '_')
#define M_HEX(c) (M_DIGIT(c) || ((((c) | 0x20) >= 'a') && (((c) | 0x20) <= 'f')))
#define M_SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r'))

typedef struct {
    const uint8_t *d;
    Py_ssize_t n;
} MText;

static inline int
m_at(const MText *t, Py_ssize_t i, int (*pred)(uint8_t))
{
    return i < t->n && pred(t->d[i]);
}

static inline int m_digit(uint8_t c) { return M_DIGIT(c); }
static inline int m_word(uint8_t c) { return M_WORD(c); }
static inline int m_hex(uint8_t c) { return M_HEX(c); }
static inline int m_space(uint8_t c) { return M_SPACE(c); }

/* \b at i */
static inline int
m_boundary(const MText *t, Py_ssize_t i)
{
    int before = i > 0 && M_WORD(t->d[i - 1]);
    int after = i < t->n && M_WORD(t->d[i]);
    return before != after;
}

/* the byte at i is c (case-sensitive) */
static inline int
m_is(const MText *t, Py_ssize_t i, uint8_t c)
{
    return i < t->n && t->d[i] == c;
}

/* lit (lower-case ASCII) at i, ASCII case-insensitively (ci) or exactly */
static inline int
m_lit(const MText *t, Py_ssize_t i, const char *lit, Py_ssize_t len, int ci)
{
    Py_ssize_t k;
    if (i + len > t->n) {
        return 0;
    }
    for (k = 0; k < len; k++) {
        uint8_t c = t->d[i + k];
        if (ci && c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }
        if (c != (uint8_t)lit[k]) {
            return 0;
        }
    }
    return 1;
}

/* end of the run of pred bytes from i */
static inline Py_ssize_t
m_run(const MText *t, Py_ssize_t i, int (*pred)(uint8_t))
{
    while (i < t->n && pred(t->d[i])) {
        i++;
    }
    return i;
}

static inline int
m_digits(const MText *t, Py_ssize_t i, Py_ssize_t k)
{
    Py_ssize_t j;
    if (i + k > t->n) {
        return 0;
    }
    for (j = 0; j < k; j++) {
        if (!M_DIGIT(t->d[i + j])) {
            return 0;
        }
    }
    return 1;
}

/* _UNIT_S, in the regex's order ("s?" greedy: the longer first) */
static const char *const UNITS[] = {
    "ms", "msec", "milliseconds", "millisecond", "s", "secs", "sec", "seconds", "second",
    "m", "mins", "min", "minutes", "minute", "h", "hrs", "hr", "hours", "hour", "days", "day",
};
#define N_UNITS ((int)(sizeof(UNITS) / sizeof(UNITS[0])))
static const char *const UNITS_S[] = {"s", "secs", "sec", "seconds", "second"};

/* iso_datetime: \b\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})? */
static Py_ssize_t
m_iso(const MText *t, Py_ssize_t s)
{
    Py_ssize_t p, q;
    const uint8_t *d = t->d;
    if (!m_boundary(t, s) || s + 16 > t->n || !m_digits(t, s, 4) || (d[s + 4] != '-' && d[s + 4] != '/') ||
        !m_digits(t, s + 5, 2) || (d[s + 7] != '-' && d[s + 7] != '/') || !m_digits(t, s + 8, 2) ||
        (d[s + 10] != 'T' && d[s + 10] != ' ') || !m_digits(t, s + 11, 2) || d[s + 13] != ':' ||
        !m_digits(t, s + 14, 2)) {
        return -1;
    }
    p = s + 16;
    if (m_is(t, p, ':') && m_digits(t, p + 1, 2)) {
        p += 3;
        if ((m_is(t, p, '.') || m_is(t, p, ',')) && m_at(t, p + 1, m_digit)) {
            p = m_run(t, p + 1, m_digit);
        }
    }
    if (m_is(t, p, 'Z')) {
        return p + 1;
    }
    if ((m_is(t, p, '+') || m_is(t, p, '-')) && m_digits(t, p + 1, 2)) {
        q = p + 3;
        if (m_is(t, q, ':')) {
            if (m_digits(t, q + 1, 2)) {
                return q + 3;
            }
        }
        else if (m_digits(t, q, 2)) {
            return q + 2;
        }
    }
    return p;
}

/* clock_time's end from q: (?:\s?[AaPp]\.?[Mm]\b\.?)?(?![\d:]) */
static Py_ssize_t
m_clock_tail(const MText *t, Py_ssize_t q)
{
    Py_ssize_t spaces[2], dots[2], dots2[2];
    int ns = 0, nd, nd2, a, b, c;
    if (m_at(t, q, m_space)) {
        spaces[ns++] = q + 1;
    }
    spaces[ns++] = q;
    for (a = 0; a < ns; a++) {
        Py_ssize_t r = spaces[a];
        uint8_t ch;
        if (r >= t->n) {
            continue;
        }
        ch = t->d[r];
        if (ch != 'A' && ch != 'a' && ch != 'P' && ch != 'p') {
            continue;
        }
        nd = 0;
        if (m_is(t, r + 1, '.')) {
            dots[nd++] = r + 2;
        }
        dots[nd++] = r + 1;
        for (b = 0; b < nd; b++) {
            Py_ssize_t u = dots[b];
            if (!(m_is(t, u, 'M') || m_is(t, u, 'm')) || !m_boundary(t, u + 1)) {
                continue;
            }
            nd2 = 0;
            if (m_is(t, u + 1, '.')) {
                dots2[nd2++] = u + 2;
            }
            dots2[nd2++] = u + 1;
            for (c = 0; c < nd2; c++) {
                Py_ssize_t e = dots2[c];
                if (!(e < t->n && (M_DIGIT(t->d[e]) || t->d[e] == ':'))) {
                    return e;
                }
            }
        }
    }
    if (!(q < t->n && (M_DIGIT(t->d[q]) || t->d[q] == ':'))) {
        return q;
    }
    return -1;
}

/* clock_time: \b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?[AaPp]\.?[Mm]\b\.?)?(?![\d:]) */
static Py_ssize_t
m_clock(const MText *t, Py_ssize_t s)
{
    Py_ssize_t p, e;
    if (!m_boundary(t, s) || !m_at(t, s, m_digit)) {
        return -1;
    }
    p = m_at(t, s + 1, m_digit) ? s + 2 : s + 1; /* \d{1,2}: only this count can meet the ':' */
    if (!m_is(t, p, ':') || !m_digits(t, p + 1, 2)) {
        return -1;
    }
    p += 3;
    if (m_is(t, p, ':') && m_digits(t, p + 1, 2)) {
        Py_ssize_t base = p + 3;
        if ((m_is(t, base, '.') || m_is(t, base, ',')) && m_at(t, base + 1, m_digit)) {
            Py_ssize_t k;
            for (k = m_run(t, base + 1, m_digit); k > base + 1; k--) {
                if ((e = m_clock_tail(t, k)) >= 0) {
                    return e;
                }
            }
        }
        if ((e = m_clock_tail(t, base)) >= 0) {
            return e;
        }
    }
    return m_clock_tail(t, p);
}

/* from q: \s?UNIT, then (relative) \s+ago\b or (elapsed, ci) \b; units: the list to try */
static Py_ssize_t
m_unit_tail(const MText *t, Py_ssize_t q, int ago, int ci, const char *const *units, int nunits)
{
    Py_ssize_t spaces[2];
    int ns = 0, a, k;
    if (m_at(t, q, m_space)) {
        spaces[ns++] = q + 1;
    }
    spaces[ns++] = q;
    for (a = 0; a < ns; a++) {
        Py_ssize_t u = spaces[a];
        uint8_t first;
        if (u >= t->n) {
            continue;
        }
        first = ci ? (uint8_t)(t->d[u] | 0x20) : t->d[u];
        if (first != 'm' && first != 's' && first != 'h' && first != 'd') { /* no unit starts so */
            continue;
        }
        for (k = 0; k < nunits; k++) {
            Py_ssize_t len, v, w;
            if ((uint8_t)units[k][0] != first) {
                continue;
            }
            len = (Py_ssize_t)strlen(units[k]);
            v = u + len;
            if (!m_lit(t, u, units[k], len, ci)) {
                continue;
            }
            if (!ago) {
                if (m_boundary(t, v)) {
                    return v;
                }
                continue;
            }
            if (!m_at(t, v, m_space)) {
                continue;
            }
            for (w = m_run(t, v, m_space); w > v; w--) {
                if (m_lit(t, w, "ago", 3, 0) && m_boundary(t, w + 3)) {
                    return w + 3;
                }
            }
        }
    }
    return -1;
}

/* from p (a digit): \d+(?:[.,]\d+)?, each choice in order, then m_unit_tail */
static Py_ssize_t
m_number_tail(const MText *t, Py_ssize_t p, int ago, int ci)
{
    Py_ssize_t k, j, e;
    if (!m_at(t, p, m_digit)) {
        return -1;
    }
    for (k = m_run(t, p, m_digit); k > p; k--) {
        if ((m_is(t, k, '.') || m_is(t, k, ',')) && m_at(t, k + 1, m_digit)) {
            for (j = m_run(t, k + 1, m_digit); j > k + 1; j--) {
                if ((e = m_unit_tail(t, j, ago, ci, UNITS, N_UNITS)) >= 0) {
                    return e;
                }
            }
        }
        if ((e = m_unit_tail(t, k, ago, ci, UNITS, N_UNITS)) >= 0) {
            return e;
        }
    }
    return -1;
}

/* relative_time: \b\d+(?:[.,]\d+)?\s?UNIT\s+ago\b */
static Py_ssize_t
m_relative(const MText *t, Py_ssize_t s)
{
    if (!m_boundary(t, s)) {
        return -1;
    }
    return m_number_tail(t, s, 1, 0);
}

static const char *const ELAPSED_WORDS[] = {
    "took", "elapsed", "duration", "latency", "runtime", "time taken", "wall time",
};

/* elapsed: (?i:\b(?:took|...|wall time)\b\s*[:=]?\s*\d+(?:[.,]\d+)?\s?UNIT\b
             |\bin\s\d+\.\d+\s?(?:s|secs?|seconds?)\b) */
static Py_ssize_t
m_elapsed(const MText *t, Py_ssize_t s)
{
    int w;
    Py_ssize_t e, k, j;
    if (!m_boundary(t, s)) {
        return -1;
    }
    for (w = 0; w < (int)(sizeof(ELAPSED_WORDS) / sizeof(ELAPSED_WORDS[0])); w++) {
        Py_ssize_t len, p, a, b, end1, end2;
        if ((uint8_t)ELAPSED_WORDS[w][0] != (t->d[s] | 0x20)) {
            continue;
        }
        len = (Py_ssize_t)strlen(ELAPSED_WORDS[w]);
        p = s + len;
        if (!m_lit(t, s, ELAPSED_WORDS[w], len, 1) || !m_boundary(t, p)) {
            continue;
        }
        end1 = m_run(t, p, m_space);
        for (a = end1; a >= p; a--) { /* \s* */
            Py_ssize_t opts[2];
            int no = 0, o;
            if (m_is(t, a, ':') || m_is(t, a, '=')) {
                opts[no++] = a + 1;
            }
            opts[no++] = a;
            for (o = 0; o < no; o++) { /* [:=]? */
                end2 = m_run(t, opts[o], m_space);
                for (b = end2; b >= opts[o]; b--) { /* \s* */
                    if ((e = m_number_tail(t, b, 0, 1)) >= 0) {
                        return e;
                    }
                }
            }
        }
    }
    /* \bin\s\d+\.\d+\s?(?:s|secs?|seconds?)\b */
    if (!m_lit(t, s, "in", 2, 1) || !m_at(t, s + 2, m_space) || !m_at(t, s + 3, m_digit)) {
        return -1;
    }
    for (k = m_run(t, s + 3, m_digit); k > s + 3; k--) {
        if (!m_is(t, k, '.') || !m_at(t, k + 1, m_digit)) {
            continue;
        }
        for (j = m_run(t, k + 1, m_digit); j > k + 1; j--) {
            if ((e = m_unit_tail(t, j, 0, 1, UNITS_S, 5)) >= 0) {
                return e;
            }
        }
    }
    return -1;
}

/* uuid: \b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b */
static Py_ssize_t
m_uuid(const MText *t, Py_ssize_t s)
{
    static const int groups[5] = {8, 4, 4, 4, 12};
    Py_ssize_t p = s;
    int g, k;
    if (!m_boundary(t, s) || s + 36 > t->n) {
        return -1;
    }
    for (g = 0; g < 5; g++) {
        for (k = 0; k < groups[g]; k++, p++) {
            if (!M_HEX(t->d[p])) {
                return -1;
            }
        }
        if (g < 4) {
            if (t->d[p] != '-') {
                return -1;
            }
            p++;
        }
    }
    return m_boundary(t, p) ? p : -1;
}

static const char *const KEYED_WORDS[] = {
    "request", "req", "trace", "span", "correlation", "session", "run",
};

/* keyed_id's tail from p: ["']?\s*[:=#]?\s*["']?[\w-]{6,} */
static Py_ssize_t
m_keyed_tail(const MText *t, Py_ssize_t p)
{
    Py_ssize_t q1[2], c1[2], q2[2], a, b, e1, e2;
    int n1 = 0, i1, nc, ic, n2, i2;
    if (m_is(t, p, '"') || m_is(t, p, '\'')) {
        q1[n1++] = p + 1;
    }
    q1[n1++] = p;
    for (i1 = 0; i1 < n1; i1++) {
        e1 = m_run(t, q1[i1], m_space);
        for (a = e1; a >= q1[i1]; a--) {
            nc = 0;
            if (m_is(t, a, ':') || m_is(t, a, '=') || m_is(t, a, '#')) {
                c1[nc++] = a + 1;
            }
            c1[nc++] = a;
            for (ic = 0; ic < nc; ic++) {
                e2 = m_run(t, c1[ic], m_space);
                for (b = e2; b >= c1[ic]; b--) {
                    n2 = 0;
                    if (m_is(t, b, '"') || m_is(t, b, '\'')) {
                        q2[n2++] = b + 1;
                    }
                    q2[n2++] = b;
                    for (i2 = 0; i2 < n2; i2++) {
                        Py_ssize_t f = q2[i2], g = f;
                        while (g < t->n && (M_WORD(t->d[g]) || t->d[g] == '-')) {
                            g++;
                        }
                        if (g - f >= 6) {
                            return g;
                        }
                    }
                }
            }
        }
    }
    return -1;
}

/* keyed_id: (?i:\b(?:x-)?(?:request|req|trace|span|correlation|session|run)[-_ ]?id\b)
             ["']?\s*[:=#]?\s*["']?[\w-]{6,} */
static Py_ssize_t
m_keyed(const MText *t, Py_ssize_t s)
{
    Py_ssize_t starts[2], seps[2], e;
    int ns = 0, a, w, nsep, b;
    if (!m_boundary(t, s)) {
        return -1;
    }
    if (m_lit(t, s, "x-", 2, 1)) {
        starts[ns++] = s + 2;
    }
    starts[ns++] = s;
    for (a = 0; a < ns; a++) {
        for (w = 0; w < (int)(sizeof(KEYED_WORDS) / sizeof(KEYED_WORDS[0])); w++) {
            Py_ssize_t len, p;
            if (starts[a] >= t->n || (uint8_t)KEYED_WORDS[w][0] != (t->d[starts[a]] | 0x20)) {
                continue;
            }
            len = (Py_ssize_t)strlen(KEYED_WORDS[w]);
            p = starts[a] + len;
            if (!m_lit(t, starts[a], KEYED_WORDS[w], len, 1)) {
                continue;
            }
            nsep = 0;
            if (m_is(t, p, '-') || m_is(t, p, '_') || m_is(t, p, ' ')) {
                seps[nsep++] = p + 1;
            }
            seps[nsep++] = p;
            for (b = 0; b < nsep; b++) {
                Py_ssize_t q = seps[b];
                if (!m_lit(t, q, "id", 2, 1) || !m_boundary(t, q + 2)) {
                    continue;
                }
                if ((e = m_keyed_tail(t, q + 2)) >= 0) {
                    return e;
                }
            }
        }
    }
    return -1;
}

/* hex_id: \b(?=[0-9a-fA-F]{0,31}[0-9])(?=[0-9a-fA-F]{0,31}[a-fA-F])[0-9a-fA-F]{32}\b */
static Py_ssize_t
m_hex32(const MText *t, Py_ssize_t s)
{
    Py_ssize_t k;
    int digit = 0, letter = 0;
    if (s + 32 > t->n || !m_boundary(t, s)) {
        return -1;
    }
    for (k = s; k < s + 32; k++) {
        uint8_t c = t->d[k];
        if (M_DIGIT(c)) {
            digit = 1;
        }
        else if (M_HEX(c)) {
            letter = 1;
        }
        else {
            return -1;
        }
    }
    return digit && letter && m_boundary(t, s + 32) ? s + 32 : -1;
}

typedef Py_ssize_t (*MMatcher)(const MText *, Py_ssize_t);

static const MMatcher MASKERS[] = {m_iso, m_clock, m_relative, m_elapsed, m_uuid, m_keyed, m_hex32};
#define N_MASKERS ((int)(sizeof(MASKERS) / sizeof(MASKERS[0])))
#define M_RELATIVE 2
#define M_ELAPSED 3
#define M_KEYED 5
#define M_AGO_ANCHOR 7 /* m_candidates' "ago" (not a pattern) */
#define M_AGO (1u << M_AGO_ANCHOR) /* m_found: the data holds "ago" after a space (see there) */

/* d[0, len) is lit (lower-case ASCII), ASCII case-insensitively */
static inline int
m_word_is(const uint8_t *d, Py_ssize_t len, const char *lit)
{
    Py_ssize_t k;
    for (k = 0; k < len; k++) {
        uint8_t c = d[k];
        if (c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }
        if (c != (uint8_t)lit[k] || lit[k] == 0) {
            return 0;
        }
    }
    return lit[len] == 0;
}

/* elapsed can start at the word d[0, len) only when it is one of its words: in, took, time (of
   time taken), wall (of wall time), elapsed, latency, runtime, duration */
static inline int
m_elapsed_word(const uint8_t *d, Py_ssize_t len)
{
    switch (len) {
    case 2: return m_word_is(d, len, "in");
    case 4: return m_word_is(d, len, "took") || m_word_is(d, len, "time") || m_word_is(d, len, "wall");
    case 7: return m_word_is(d, len, "elapsed") || m_word_is(d, len, "latency") || m_word_is(d, len, "runtime");
    case 8: return m_word_is(d, len, "duration");
    default: return 0;
    }
}

/*
 * The scan. The data is read 64 bytes at a time (a block), each block as bit masks (MBits, bit
 * i: byte i of the block) of the byte classes the patterns' necessary conditions read; from
 * them and the next block's (a condition reads up to 32 bytes ahead) and the previous one's
 * (one byte behind), m_candidates gives, for each pattern, the positions where a match can be:
 * a superset of its match starts (the anchors, for elapsed and keyed_id: see m_starts), so
 * that the matchers above run only there. Bytes past the end read as 0 (no class): a condition
 * that needs a byte there fails, one that needs a non-word byte there holds, as at the end of
 * the data for the regex. m_bits is the block's masks in the widest instructions the CPU has
 * (AVX-512BW, AVX2, SSE2; a table per byte elsewhere), chosen when the module loads; every
 * version gives the same masks.
 */
enum { MB_W, MB_D, MB_H, MB_DS, MB_COLON, MB_SCE, MB_ID, MB_AGO, MB_N };
/* MB_W a word byte (M_WORD), MB_D a digit, MB_H a hex digit, MB_DS - or /, MB_COLON :, MB_SCE \s
   (M_SPACE), : or =; MB_ID: `id` starts there (either case), MB_AGO: `ago` starts there (these two
   read the two bytes after the block too: m_bits reads 66 bytes) */
#define M_OVER 2

typedef struct {
    uint64_t m[MB_N];
} MBits;

typedef void (*MBitsFn)(const uint8_t *, MBits *);

#define M_STORE_BITS(b, w, dg, h, ds, co, sc, id, ago)                                    \
    do {                                                                                  \
        (b)->m[MB_W] = (w), (b)->m[MB_D] = (dg), (b)->m[MB_H] = (h), (b)->m[MB_DS] = (ds); \
        (b)->m[MB_COLON] = (co), (b)->m[MB_SCE] = (sc), (b)->m[MB_ID] = (id);              \
        (b)->m[MB_AGO] = (ago);                                                           \
    } while (0)

/* M_BITS_OF[c]: bit 8 * k when byte c is of class k; for MB_ID: c is i or I, for MB_AGO: c is a
   (the portable m_bits checks the bytes after these) */
static uint64_t M_BITS_OF[256];

static void
init_mask_bits(void)
{
    int c;
    for (c = 0; c < 256; c++) {
        uint64_t k = 0;
        k |= (uint64_t)M_WORD(c) << 8 * MB_W | (uint64_t)M_DIGIT(c) << 8 * MB_D | (uint64_t)M_HEX(c) << 8 * MB_H;
        k |= (uint64_t)(c == '-' || c == '/') << 8 * MB_DS | (uint64_t)(c == ':') << 8 * MB_COLON;
        k |= (uint64_t)(M_SPACE(c) || c == ':' || c == '=') << 8 * MB_SCE;
        k |= (uint64_t)((c | 0x20) == 'i') << 8 * MB_ID | (uint64_t)(c == 'a') << 8 * MB_AGO;
        M_BITS_OF[c] = k;
    }
}

/* swaps the m-masked bits of x >> k with those of y (a step of an 8x8 byte transpose) */
#define M_SWAP(x, y, k, m)                      \
    do {                                        \
        uint64_t t_ = (((x) >> (k)) ^ (y)) & (m); \
        (x) ^= t_ << (k);                       \
        (y) ^= t_;                              \
    } while (0)

/* The portable m_bits, without vector instructions: for each 8 bytes, the sum of M_BITS_OF[byte j]
   << j holds class k's 8 bits in its byte k; an 8x8 byte transpose of the block's 8 sums gives the
   masks. */
static void
m_bits_scalar(const uint8_t *d, MBits *b)
{
    uint64_t r[8];
    int c, j;
    for (c = 0; c < 8; c++) {
        const uint8_t *q = d + 8 * c;
        r[c] = M_BITS_OF[q[0]] | M_BITS_OF[q[1]] << 1 | M_BITS_OF[q[2]] << 2 | M_BITS_OF[q[3]] << 3 |
               M_BITS_OF[q[4]] << 4 | M_BITS_OF[q[5]] << 5 | M_BITS_OF[q[6]] << 6 | M_BITS_OF[q[7]] << 7;
    }
    for (j = 0; j < 4; j++) {
        M_SWAP(r[j], r[j + 4], 32, UINT64_C(0x00000000FFFFFFFF));
    }
    for (j = 0; j < 8; j += (j & 1) ? 3 : 1) { /* 0, 1, 4, 5 */
        M_SWAP(r[j], r[j + 2], 16, UINT64_C(0x0000FFFF0000FFFF));
    }
    for (j = 0; j < 8; j += 2) {
        M_SWAP(r[j], r[j + 1], 8, UINT64_C(0x00FF00FF00FF00FF));
    }
    for (j = 0; j < MB_N; j++) {
        b->m[j] = r[j];
    }
    for (r[0] = b->m[MB_ID]; r[0]; r[0] &= r[0] - 1) { /* i or I: then d or D */
        j = __builtin_ctzll(r[0]);
        if ((d[j + 1] | 0x20) != 'd') {
            b->m[MB_ID] &= ~((uint64_t)1 << j);
        }
    }
    for (r[0] = b->m[MB_AGO]; r[0]; r[0] &= r[0] - 1) { /* a: then go */
        j = __builtin_ctzll(r[0]);
        if (d[j + 1] != 'g' || d[j + 2] != 'o') {
            b->m[MB_AGO] &= ~((uint64_t)1 << j);
        }
    }
}

#if defined(__SSE2__)
#define M_SSE_RANGE(x, lo, len) \
    _mm_cmplt_epi8(_mm_add_epi8((x), _mm_set1_epi8((char)(128 - (lo)))), _mm_set1_epi8((char)(-128 + (len))))
#define M_SSE_EQ(x, c) _mm_cmpeq_epi8((x), _mm_set1_epi8((char)(c)))
#define M_SSE_BITS(x) ((uint64_t)(uint32_t)_mm_movemask_epi8(x))
#define M_SSE_LOW(x) _mm_or_si128((x), _mm_set1_epi8(0x20))

static void
m_bits_sse2(const uint8_t *d, MBits *b)
{
    /* the masks in locals (d may alias b for the compiler: stores to b->m would be redone) */
    uint64_t w = 0, dg = 0, h = 0, ds = 0, co = 0, sc = 0, id = 0, ago = 0;
    int j;
    for (j = 0; j < 64; j += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(d + j));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(d + j + 1));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(d + j + 2));
        __m128i low = M_SSE_LOW(v);
        __m128i dig = M_SSE_RANGE(v, '0', 10), colon = M_SSE_EQ(v, ':');
        __m128i word = _mm_or_si128(_mm_or_si128(dig, M_SSE_RANGE(low, 'a', 26)), M_SSE_EQ(v, '_'));
        __m128i sce = _mm_or_si128(_mm_or_si128(M_SSE_EQ(v, ' '), M_SSE_RANGE(v, '\t', 5)),
                                   _mm_or_si128(colon, M_SSE_EQ(v, '=')));
        w |= M_SSE_BITS(word) << j;
        dg |= M_SSE_BITS(dig) << j;
        h |= M_SSE_BITS(_mm_or_si128(dig, M_SSE_RANGE(low, 'a', 6))) << j;
        ds |= M_SSE_BITS(_mm_or_si128(M_SSE_EQ(v, '-'), M_SSE_EQ(v, '/'))) << j;
        co |= M_SSE_BITS(colon) << j;
        sc |= M_SSE_BITS(sce) << j;
        id |= M_SSE_BITS(_mm_and_si128(M_SSE_EQ(low, 'i'), M_SSE_EQ(M_SSE_LOW(v1), 'd'))) << j;
        ago |= M_SSE_BITS(_mm_and_si128(_mm_and_si128(M_SSE_EQ(v, 'a'), M_SSE_EQ(v1, 'g')), M_SSE_EQ(v2, 'o'))) << j;
    }
    M_STORE_BITS(b, w, dg, h, ds, co, sc, id, ago);
}
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define M_X86_DISPATCH 1
#include <immintrin.h>

#define M_AVX_RANGE(x, lo, len) \
    _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(-128 + (len))), _mm256_add_epi8((x), _mm256_set1_epi8((char)(128 - (lo)))))
#define M_AVX_EQ(x, c) _mm256_cmpeq_epi8((x), _mm256_set1_epi8((char)(c)))
#define M_AVX_BITS(x) ((uint64_t)(uint32_t)_mm256_movemask_epi8(x))
#define M_AVX_LOW(x) _mm256_or_si256((x), _mm256_set1_epi8(0x20))

__attribute__((target("avx2"))) static void
m_bits_avx2(const uint8_t *d, MBits *b)
{
    uint64_t w = 0, dg = 0, h = 0, ds = 0, co = 0, sc = 0, id = 0, ago = 0;
    int j;
    for (j = 0; j < 64; j += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(d + j));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(d + j + 1));
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(d + j + 2));
        __m256i low = M_AVX_LOW(v);
        __m256i dig = M_AVX_RANGE(v, '0', 10), colon = M_AVX_EQ(v, ':');
        __m256i word = _mm256_or_si256(_mm256_or_si256(dig, M_AVX_RANGE(low, 'a', 26)), M_AVX_EQ(v, '_'));
        __m256i sce = _mm256_or_si256(_mm256_or_si256(M_AVX_EQ(v, ' '), M_AVX_RANGE(v, '\t', 5)),
                                      _mm256_or_si256(colon, M_AVX_EQ(v, '=')));
        w |= M_AVX_BITS(word) << j;
        dg |= M_AVX_BITS(dig) << j;
        h |= M_AVX_BITS(_mm256_or_si256(dig, M_AVX_RANGE(low, 'a', 6))) << j;
        ds |= M_AVX_BITS(_mm256_or_si256(M_AVX_EQ(v, '-'), M_AVX_EQ(v, '/'))) << j;
        co |= M_AVX_BITS(colon) << j;
        sc |= M_AVX_BITS(sce) << j;
        id |= M_AVX_BITS(_mm256_and_si256(M_AVX_EQ(low, 'i'), M_AVX_EQ(M_AVX_LOW(v1), 'd'))) << j;
        ago |= M_AVX_BITS(_mm256_and_si256(_mm256_and_si256(M_AVX_EQ(v, 'a'), M_AVX_EQ(v1, 'g')), M_AVX_EQ(v2, 'o')))
               << j;
    }
    M_STORE_BITS(b, w, dg, h, ds, co, sc, id, ago);
}

#define M_512_RANGE(x, lo, len) \
    _mm512_cmplt_epu8_mask(_mm512_sub_epi8((x), _mm512_set1_epi8((char)(lo))), _mm512_set1_epi8((char)(len)))
#define M_512_EQ(x, c) _mm512_cmpeq_epi8_mask((x), _mm512_set1_epi8((char)(c)))
#define M_512_LOW(x) _mm512_or_si512((x), _mm512_set1_epi8(0x20))

__attribute__((target("avx512f,avx512bw"))) static void
m_bits_avx512(const uint8_t *d, MBits *b)
{
    __m512i v = _mm512_loadu_si512((const void *)d);
    __m512i v1 = _mm512_loadu_si512((const void *)(d + 1));
    __m512i v2 = _mm512_loadu_si512((const void *)(d + 2));
    __m512i low = M_512_LOW(v);
    uint64_t dig = M_512_RANGE(v, '0', 10), colon = M_512_EQ(v, ':');
    M_STORE_BITS(b, dig | M_512_RANGE(low, 'a', 26) | M_512_EQ(v, '_'), dig, dig | M_512_RANGE(low, 'a', 6),
                 M_512_EQ(v, '-') | M_512_EQ(v, '/'), colon,
                 M_512_EQ(v, ' ') | M_512_RANGE(v, '\t', 5) | colon | M_512_EQ(v, '='),
                 M_512_EQ(low, 'i') & M_512_EQ(M_512_LOW(v1), 'd'),
                 M_512_EQ(v, 'a') & M_512_EQ(v1, 'g') & M_512_EQ(v2, 'o'));
}

static int m_has_avx2(void) { return __builtin_cpu_supports("avx2"); }
static int m_has_avx512(void) { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }
#endif

static int m_always(void) { return 1; }

/* the versions of m_bits, the widest first; m_isa: the one in use (see init_mask_isa, _mask_isa) */
static const struct {
    const char *name;
    MBitsFn fn;
    int (*supported)(void);
} M_ISAS[] = {
#if defined(M_X86_DISPATCH)
    {"avx512bw", m_bits_avx512, m_has_avx512},
    {"avx2", m_bits_avx2, m_has_avx2},
#endif
#if defined(__SSE2__)
    {"sse2", m_bits_sse2, m_always},
#endif
    {"scalar", m_bits_scalar, m_always},
};
#define N_ISAS ((int)(sizeof(M_ISAS) / sizeof(M_ISAS[0])))
static int m_isa = N_ISAS - 1;
static MBitsFn m_bits = m_bits_scalar;

static void
init_mask_isa(void)
{
    int k;
#if defined(M_X86_DISPATCH)
    __builtin_cpu_init();
#endif
    for (k = 0; k < N_ISAS && !M_ISAS[k].supported(); k++) {
    }
    m_isa = k;
    m_bits = M_ISAS[k].fn;
}

/* A block scan of d[0, n): p the block's start; prev, cur, next: the masks of the blocks at
   p - 64, p and p + 64 (zero before the data and past its end). */
typedef struct {
    const uint8_t *d;
    Py_ssize_t n, p;
    MBits *prev, *cur, *next;
    MBits buf[3];
} MScan;

static inline void
m_load(MScan *s, Py_ssize_t p, MBits *b)
{
    if (p + 64 + M_OVER <= s->n) {
        m_bits(s->d + p, b);
    }
    else if (p < s->n) {
        uint8_t pad[64 + M_OVER];
        Py_ssize_t len = s->n - p;
        memset(pad, 0, sizeof(pad));
        memcpy(pad, s->d + p, (size_t)(len < 64 + M_OVER ? len : 64 + M_OVER));
        m_bits(pad, b);
    }
    else {
        memset(b, 0, sizeof(*b));
    }
}

static inline void
m_scan_init(MScan *s, const uint8_t *d, Py_ssize_t n)
{
    s->d = d;
    s->n = n;
    s->p = 0;
    s->prev = &s->buf[0];
    s->cur = &s->buf[1];
    s->next = &s->buf[2];
    memset(s->prev, 0, sizeof(MBits));
    m_load(s, 0, s->cur);
    m_load(s, 64, s->next);
}

static inline void
m_scan_step(MScan *s)
{
    MBits *old = s->prev;
    s->p += 64;
    s->prev = s->cur;
    s->cur = s->next;
    s->next = old;
    m_load(s, s->p + 64, old);
}

#if defined(__GNUC__)
#define M_INLINE static inline __attribute__((always_inline))
#else
#define M_INLINE static inline
#endif

/* bit i: class f holds at byte i + k of the block (1 <= k <= 63), or at byte i - 1 */
#define M_AHEAD(s, f, k) (((s)->cur->m[f] >> (k)) | ((s)->next->m[f] << (64 - (k))))
#define M_BEHIND(s, f) (((s)->cur->m[f] << 1) | ((s)->prev->m[f] >> 63))

/*
 * The block's candidates, out[k] for pattern k (out[M_AGO_ANCHOR]: "ago"), each bit a position
 * where a necessary condition of a match holds, read off the regex (S: a word starts there, as
 * every match's \b before a word byte); a few bytes are enough, the matcher checks the rest:
 *   iso_datetime at s: S, \d{4}[-/]: digits at s..s+3, - or / at s+4;
 *   clock_time at s: S, \d{1,2}:\d{2}: a digit at s, then :dd at s+1 or d:dd at s+1;
 *   relative_time at s: S and a digit (m_found also needs an "ago" after s);
 *   elapsed: at q, the first digit of its \d+: the word before it ends with \b and only \s*[:=]?\s*
 *     lies between, so q starts a word and the byte before it is \s, : or = (m_starts: the match's
 *     start from q);
 *   uuid at s: S, hex digits at s and s+7, - at s+8 and s+13 (read as - or /);
 *   keyed_id: at c, the `id\b` of its key (i or I, then d or D, then no word byte; m_starts);
 *   hex_id at s: S, hex digits at s, s+16 and s+31, no word byte at s+32;
 *   "ago" at a: the a of `\s+ago\b` (a byte before it that is \s, : or =; ago; no word byte after).
 */
M_INLINE void
m_candidates(const MScan *s, uint64_t *out)
{
    const uint64_t *c = s->cur->m;
    uint64_t starts = c[MB_W] & ~M_BEHIND(s, MB_W), digit = starts & c[MB_D], hex = starts & c[MB_H];
    uint64_t d1 = M_AHEAD(s, MB_D, 1), d2 = M_AHEAD(s, MB_D, 2), d3 = M_AHEAD(s, MB_D, 3);
    uint64_t sce = M_BEHIND(s, MB_SCE);
    out[0] = digit & d1 & d2 & d3 & M_AHEAD(s, MB_DS, 4);
    out[1] = digit & d3 & ((M_AHEAD(s, MB_COLON, 1) & d2) | (d1 & M_AHEAD(s, MB_COLON, 2) & M_AHEAD(s, MB_D, 4)));
    out[M_RELATIVE] = digit;
    out[M_ELAPSED] = digit & sce;
    out[4] = hex & M_AHEAD(s, MB_H, 7) & M_AHEAD(s, MB_DS, 8) & M_AHEAD(s, MB_DS, 13);
    out[M_KEYED] = c[MB_ID] & ~M_AHEAD(s, MB_W, 2);
    out[6] = hex & M_AHEAD(s, MB_H, 16) & M_AHEAD(s, MB_H, 31) & ~M_AHEAD(s, MB_W, 32);
    out[M_AGO_ANCHOR] = sce & c[MB_AGO] & ~M_AHEAD(s, MB_W, 3);
}

static const Py_ssize_t KEYED_LENGTHS[] = {7, 3, 5, 4, 11, 7, 3}; /* of KEYED_WORDS */

/*
 * The starts a match of pattern k can have for its candidate at c (m_candidates), ascending,
 * into out (at most 2); the count. For most patterns c itself. For elapsed, from its number's
 * first digit c: back over \s*[:=]?\s* (greedily: the bytes between its word and c are exactly
 * these, and the word's last byte is none of them) to the end of its word, then that word's
 * start s0 (when the word is one of its words), after the word before it when s0 is the second
 * word of `time taken` or `wall time` (one space between). For keyed_id, from its `id` at c:
 * its key ends at c, or at c - 1 after a [-_ ] separator; no two keys end alike, so it is the
 * one that ends there, at s; then s - 2 when `x-` is before it, and s. A start reached from a
 * later candidate is never before one reached from an earlier one (the words between them), so
 * the starts come in order, as m_sub needs.
 */
M_INLINE int
m_starts(const MText *t, int k, Py_ssize_t c, Py_ssize_t *out)
{
    const uint8_t *d = t->d;
    int n = 0, w;
    if (k == M_ELAPSED) {
        Py_ssize_t j = c, e, s0, s1;
        while (j > 0 && M_SPACE(d[j - 1])) {
            j--;
        }
        if (j > 0 && (d[j - 1] == ':' || d[j - 1] == '=')) {
            j--;
            while (j > 0 && M_SPACE(d[j - 1])) {
                j--;
            }
        }
        if (j == 0) {
            return 0;
        }
        switch (d[j - 1] | 0x20) { /* the last letter of took, elapsed, duration, latency, runtime, taken, time, in */
        case 'k': case 'd': case 'n': case 'y': case 'e': break;
        default: return 0;
        }
        for (e = s0 = j; s0 > 0 && M_WORD(d[s0 - 1]); s0--) {
        }
        if (s0 >= 2 && d[s0 - 1] == ' ' && M_WORD(d[s0 - 2])) {
            for (s1 = s0 - 2; s1 > 0 && M_WORD(d[s1 - 1]); s1--) {
            }
            if (s0 - 1 - s1 == 4 && (m_word_is(d + s1, 4, "time") || m_word_is(d + s1, 4, "wall"))) {
                out[n++] = s1;
            }
        }
        if (m_elapsed_word(d + s0, e - s0)) {
            out[n++] = s0;
        }
        return n;
    }
    if (k == M_KEYED) {
        Py_ssize_t end = c > 0 && (d[c - 1] == '-' || d[c - 1] == '_' || d[c - 1] == ' ') ? c - 1 : c;
        for (w = 0; w < (int)(sizeof(KEYED_LENGTHS) / sizeof(KEYED_LENGTHS[0])); w++) {
            Py_ssize_t s = end - KEYED_LENGTHS[w];
            if (s >= 0 && m_lit(t, s, KEYED_WORDS[w], KEYED_LENGTHS[w], 1)) {
                if (s >= 2 && m_lit(t, s - 2, "x-", 2, 1)) {
                    out[n++] = s - 2;
                }
                out[n++] = s;
                break;
            }
        }
        return n;
    }
    out[n++] = c;
    return n;
}

/* 1 when pattern k matches at a start its candidate at c gives */
static inline int
m_matches_at(const MText *t, int k, Py_ssize_t c)
{
    Py_ssize_t starts[2];
    int n = m_starts(t, k, c, starts), j;
    for (j = 0; j < n; j++) {
        if (MASKERS[k](t, starts[j]) >= 0) {
            return 1;
        }
    }
    return 0;
}

/* The patterns of kmask that match somewhere in t (bit k: pattern k), as a re.search of each
   would tell, plus M_AGO when relative_time is in kmask and t holds an "ago" candidate (the
   passes below do not run relative_time without one: masking never makes one). One block scan
   for all of them, a pattern's candidates looked at until it is found (the scan stops when
   every one is); relative_time, whose \d+ can start at any number, only when t holds an "ago",
   and then only before the last one, in a second scan. */
static unsigned
m_found(const MText *t, unsigned kmask)
{
    MScan s;
    unsigned found = 0, rest = kmask & ~(1u << M_RELATIVE);
    int relative = (kmask >> M_RELATIVE) & 1;
    Py_ssize_t ago = -1; /* the last "ago" candidate */
    if (kmask == 0) {
        return 0;
    }
    for (m_scan_init(&s, t->d, t->n); s.p < t->n; m_scan_step(&s)) {
        unsigned todo = rest & ~found;
        uint64_t cands[8];
        int k;
        m_candidates(&s, cands);
        todo &= (unsigned)(cands[0] != 0) | (unsigned)(cands[1] != 0) << 1 | (unsigned)(cands[3] != 0) << 3 |
                (unsigned)(cands[4] != 0) << 4 | (unsigned)(cands[5] != 0) << 5 | (unsigned)(cands[6] != 0) << 6;
        while (todo) {
            uint64_t cand;
            k = __builtin_ctz(todo);
            cand = cands[k];
            todo &= todo - 1;
            while (cand) {
                Py_ssize_t c = s.p + __builtin_ctzll(cand);
                cand &= cand - 1;
                if (m_matches_at(t, k, c)) {
                    found |= 1u << k;
                    break;
                }
            }
        }
        if (relative) {
            uint64_t a = cands[M_AGO_ANCHOR];
            if (a) {
                ago = s.p + 63 - __builtin_clzll(a);
            }
        }
        else if (found == rest) {
            return found;
        }
    }
    if (ago > 0) {
        found |= M_AGO;
        for (m_scan_init(&s, t->d, ago); s.p < ago; m_scan_step(&s)) {
            uint64_t cand = s.cur->m[MB_W] & ~M_BEHIND(&s, MB_W) & s.cur->m[MB_D]; /* as m_candidates */
            while (cand) {
                Py_ssize_t c = s.p + __builtin_ctzll(cand);
                cand &= cand - 1;
                if (m_relative(t, c) >= 0) {
                    return found | 1u << M_RELATIVE;
                }
            }
        }
    }
    return found;
}

/* One re.sub pass of pattern k over [src, src+n) into out (room for n bytes); returns the
   output length, or -1 when nothing matched. Matching reads src only, as re.sub does: the
   matcher runs at each start of a candidate (m_candidates, m_starts), in order, from the end
   of the last match on. */
static Py_ssize_t
m_sub(int k, const uint8_t *src, Py_ssize_t n, uint8_t *out)
{
    MText t = {src, n};
    MScan s;
    Py_ssize_t done = 0, o = 0;
    MMatcher match = MASKERS[k];
    int any = 0;
    for (m_scan_init(&s, src, n); s.p < n; m_scan_step(&s)) {
        uint64_t cands[8], cand;
        m_candidates(&s, cands);
        cand = cands[k];
        while (cand) {
            Py_ssize_t starts[2], e;
            int ns = m_starts(&t, k, s.p + __builtin_ctzll(cand), starts), j;
            cand &= cand - 1;
            for (j = 0; j < ns; j++) {
                if (starts[j] < done || (e = match(&t, starts[j])) < 0) {
                    continue;
                }
                memcpy(out + o, src + done, (size_t)(starts[j] - done));
                o += starts[j] - done;
                out[o++] = 0;
                out[o++] = '~';
                done = e;
                any = 1;
            }
        }
    }
    if (!any) {
        return -1;
    }
    memcpy(out + o, src + done, (size_t)(n - done));
    return o + (n - done);
}

PyDoc_STRVAR(mask_doc,
"mask(data, kinds, /) -> bytes\n"
"\n"
"data with each built-in volatile pattern of kinds (bytes of pattern numbers, in order) replaced\n"
"by b'\\x00~', as re.sub of each pattern in turn (fingerprint.VolatileMask.bytes is the\n"
"definition); data itself when nothing matched.");

static PyObject *
canon_mask(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    const uint8_t *cur, *kinds;
    uint8_t *bufs[2] = {NULL, NULL};
    Py_ssize_t n, nk, i, len;
    int which = 0, changed = 0;
    unsigned kmask = 0, found;
    PyObject *res;

    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "mask() takes two bytes arguments");
        return NULL;
    }
    cur = (const uint8_t *)PyBytes_AS_STRING(args[0]);
    n = PyBytes_GET_SIZE(args[0]);
    kinds = (const uint8_t *)PyBytes_AS_STRING(args[1]);
    nk = PyBytes_GET_SIZE(args[1]);
    for (i = 0; i < nk; i++) {
        if (kinds[i] >= N_MASKERS) {
            PyErr_SetString(PyExc_ValueError, "mask(): unknown pattern number");
            return NULL;
        }
        kmask |= 1u << kinds[i];
    }
    {
        MText whole = {cur, n};
        found = m_found(&whole, kmask);
        if (!found) { /* no pattern matches: every pass leaves data as it is */
            return Py_NewRef(args[0]);
        }
    }
    /* found: the patterns that match in the data as it is (or did, before the last pass: a pass
       that changes nothing keeps them). A pass runs for those only; after a pass that changed the
       data, the later patterns not found yet are looked for again in it (a mask can make a match:
       the word boundary its token puts before a word), relative_time only when the input has an
       "ago" (a mask never makes one). */
    for (i = 0; i < nk; i++) {
        Py_ssize_t j;
        unsigned later = 0;
        if (!(found >> kinds[i] & 1)) {
            continue;
        }
        if (bufs[which] == NULL) {
            bufs[which] = PyMem_Malloc((size_t)(n > 0 ? n : 1));
            if (bufs[which] == NULL) {
                PyMem_Free(bufs[1 - which]);
                return PyErr_NoMemory();
            }
        }
        len = m_sub(kinds[i], cur, n, bufs[which]);
        if (len < 0) {
            continue;
        }
        cur = bufs[which];
        n = len;
        which = 1 - which;
        changed = 1;
        for (j = i + 1; j < nk; j++) {
            later |= 1u << kinds[j];
        }
        later &= ~found & ~(found & M_AGO ? 0u : 1u << M_RELATIVE);
        if (later) {
            MText now = {cur, n};
            found |= m_found(&now, later) & ~M_AGO;
        }
    }
    res = changed ? PyBytes_FromStringAndSize((const char *)cur, n) : Py_NewRef(args[0]);
    PyMem_Free(bufs[0]);
    PyMem_Free(bufs[1]);
    return res;
}

/* ------------------------------------------------------------------ */
/* Words: which of a set of ASCII words a text holds (rules/injection.py's gates)  */
/*
 * Words(cmap, table, nclasses, masks, nwords64) runs an Aho-Corasick automaton that Python
 * builds (injection._words_tables) over lower-cased ASCII; present(text) -> (plain, flat)
 * is, as two ints (bit i: word i), which words are in injection._lowered(text), and which
 * are in it once every spacing mark (injection._SQUASH: Unicode whitespace and " .-_*|+~/")
 * is removed. Code points: ASCII through cmap (upper case as lower case); the four letters
 * re.IGNORECASE folds to ASCII (U+0130, U+0131, U+017F, U+212A) as i, i, s, k (what
 * _lowered does); any other code point lower-cases to no ASCII letter, so it is class 0,
 * on which every word breaks.
 *
 * table: uint32 entries, [state][class] -> next state; masks: nwords64 uint64 per state,
 * the words that end in that state.
 *
 * fields() reads a non-ASCII character by its learned reading (learn(): injection._reading, what
 * injection.normalise makes of it, ASCII lower-cased, any other character as the byte 0x80) and
 * leaves a text with a character not learned to Python; unknown() lists those of a text.
 */

typedef struct {
    PyObject_HEAD
    uint32_t *table;
    uint64_t *masks;
    uint8_t *hasout; /* hasout[s]: some word ends in state s */
    Py_ssize_t nstates;
    Py_ssize_t nclasses;
    Py_ssize_t nwords64;
    uint8_t cmap[128];
    uint8_t sep[128];
    uint64_t *gates; /* the gates for fields() (see words_candidates); NULL: not given */
    uint16_t *ptable; /* table in rows of 1 << pshift entries, each next state as its row's offset
                         (NULL when that does not fit 16 bits, or nwords64 > 4) */
    uint64_t *masks4; /* masks padded to 4 words a state, with ptable */
    int pshift;
    Py_ssize_t longest; /* the longest word (the deepest state: its shortest path from the root) */
    Py_ssize_t ngates;
    /* learned readings of non-ASCII code points (see words_learn): pages[cp >> 8][cp & 255] is 0
       (not learned), WORDS_REFUSED (no reading: fields() declines the text, as for 0), or
       1 + the reading's index in readings */
    uint32_t **pages;
    uint8_t *readings; /* WORDS_READING bytes each: the length, then the bytes */
    Py_ssize_t nreadings, capreadings;
} Words;

#define WORDS_READING 9 /* a reading: its length (0..8), then up to 8 bytes */
#define WORDS_PAGES (0x110000 >> 8)
#define WORDS_MAX_READINGS 65536
#define WORDS_REFUSED 0xFFFFFFFFu

static void
words_dealloc(Words *self)
{
    PyMem_Free(self->table);
    PyMem_Free(self->masks);
    PyMem_Free(self->hasout);
    PyMem_Free(self->gates);
    PyMem_Free(self->ptable);
    PyMem_Free(self->masks4);
    if (self->pages != NULL) {
        Py_ssize_t p;
        for (p = 0; p < WORDS_PAGES; p++) {
            PyMem_Free(self->pages[p]);
        }
        PyMem_Free(self->pages);
    }
    PyMem_Free(self->readings);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/*
 * The gates for fields(), as injection._native_gates writes them (uint64 words): for the plain
 * alternatives, then for the letter-spaced ones: the number of alternatives, then for each its
 * number of conjunctions, then for each conjunction the patterns it needs (bit k: gate pattern k,
 * see words_pattern) and its number of word groups, then each group's word mask (nwords64 words).
 * An alternative's gate passes when one of its conjunctions has a word of each group and every
 * pattern it needs.
 */
#define WORDS_PATTERNS 4
#define WORDS_MAX_ALTERNATIVES 16

static int
gates_valid(const uint64_t *g, Py_ssize_t len, Py_ssize_t w64)
{
    Py_ssize_t n, at = 0, part, alt, conj, groups;
    if (len % (Py_ssize_t)sizeof(uint64_t) != 0) {
        return 0;
    }
    n = len / (Py_ssize_t)sizeof(uint64_t);
    for (part = 0; part < 2; part++) {
        uint64_t nalt;
        if (at >= n || (nalt = g[at++]) > WORDS_MAX_ALTERNATIVES) {
            return 0;
        }
        for (alt = 0; alt < (Py_ssize_t)nalt; alt++) {
            uint64_t nconj;
            if (at >= n || (nconj = g[at++]) > 64) {
                return 0;
            }
            for (conj = 0; conj < (Py_ssize_t)nconj; conj++) {
                if (at + 2 > n || g[at] >> WORDS_PATTERNS != 0 || g[at + 1] > 64) {
                    return 0;
                }
                groups = (Py_ssize_t)g[at + 1];
                at += 2 + groups * w64;
                if (at > n) {
                    return 0;
                }
            }
        }
    }
    return at == n;
}

static PyObject *
words_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_buffer cmap, table, masks, gates = {0};
    Py_ssize_t nclasses, nwords64, nstates, i;
    Words *self = NULL;
    const uint32_t *src;
    static const char SEPS[] = " .-_*|+~/";

    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Words() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*y*ny*n|y*:Words", &cmap, &table, &nclasses, &masks, &nwords64, &gates)) {
        return NULL;
    }
    nstates = nclasses > 0 ? table.len / (Py_ssize_t)sizeof(uint32_t) / nclasses : 0;
    if (cmap.len != 128 || nclasses < 2 || nclasses > 256 || nwords64 < 1 || nwords64 > 64 ||
        table.len != nstates * nclasses * (Py_ssize_t)sizeof(uint32_t) || nstates < 1 ||
        masks.len != nstates * nwords64 * (Py_ssize_t)sizeof(uint64_t)) {
        PyErr_SetString(PyExc_ValueError, "Words: inconsistent tables");
        goto done;
    }
    if (gates.buf != NULL && !gates_valid((const uint64_t *)gates.buf, gates.len, nwords64)) {
        PyErr_SetString(PyExc_ValueError, "Words: inconsistent gates");
        goto done;
    }
    for (i = 0; i < 128; i++) {
        if (((const uint8_t *)cmap.buf)[i] >= nclasses) {
            PyErr_SetString(PyExc_ValueError, "Words: class out of range");
            goto done;
        }
    }
    src = (const uint32_t *)table.buf;
    for (i = 0; i < nstates * nclasses; i++) {
        if (src[i] >= (uint32_t)nstates) {
            PyErr_SetString(PyExc_ValueError, "Words: state out of range");
            goto done;
        }
    }
    self = (Words *)type->tp_alloc(type, 0);
    if (self == NULL) {
        goto done;
    }
    self->table = PyMem_Malloc((size_t)table.len);
    self->masks = PyMem_Malloc((size_t)masks.len);
    self->hasout = PyMem_Malloc((size_t)nstates);
    if (gates.buf != NULL) {
        self->gates = PyMem_Malloc((size_t)gates.len);
        self->ngates = gates.len / (Py_ssize_t)sizeof(uint64_t);
    }
    if (self->table == NULL || self->masks == NULL || self->hasout == NULL ||
        (gates.buf != NULL && self->gates == NULL)) {
        Py_CLEAR(self);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(self->table, table.buf, (size_t)table.len);
    memcpy(self->masks, masks.buf, (size_t)masks.len);
    if (gates.buf != NULL) {
        memcpy(self->gates, gates.buf, (size_t)gates.len);
    }
    { /* breadth first from the root: a state's distance is the length of the word part it stands for */
        Py_ssize_t *dist = PyMem_Malloc((size_t)nstates * sizeof(Py_ssize_t)), *queue, head = 0, tail = 0, c;
        queue = PyMem_Malloc((size_t)nstates * sizeof(Py_ssize_t));
        if (dist == NULL || queue == NULL) {
            PyMem_Free(dist);
            PyMem_Free(queue);
            Py_CLEAR(self);
            PyErr_NoMemory();
            goto done;
        }
        for (i = 0; i < nstates; i++) {
            dist[i] = -1;
        }
        dist[0] = 0;
        queue[tail++] = 0;
        self->longest = 0;
        while (head < tail) {
            Py_ssize_t st = queue[head++];
            if (dist[st] > self->longest) {
                self->longest = dist[st];
            }
            for (c = 0; c < nclasses; c++) {
                Py_ssize_t nx = (Py_ssize_t)src[st * nclasses + c];
                if (dist[nx] < 0) {
                    dist[nx] = dist[st] + 1;
                    queue[tail++] = nx;
                }
            }
        }
        PyMem_Free(dist);
        PyMem_Free(queue);
    }
    self->pshift = 0;
    while (((Py_ssize_t)1 << self->pshift) < nclasses) {
        self->pshift++;
    }
    if ((nstates << self->pshift) <= 65536 && nwords64 <= 4) {
        Py_ssize_t row = (Py_ssize_t)1 << self->pshift, c;
        self->ptable = PyMem_Calloc((size_t)(nstates << self->pshift), sizeof(uint16_t));
        self->masks4 = PyMem_Calloc((size_t)nstates * 4, sizeof(uint64_t));
        if (self->ptable == NULL || self->masks4 == NULL) {
            Py_CLEAR(self);
            PyErr_NoMemory();
            goto done;
        }
        for (i = 0; i < nstates; i++) {
            for (c = 0; c < nclasses; c++) {
                self->ptable[i * row + c] = (uint16_t)(src[i * nclasses + c] << self->pshift);
            }
            memcpy(self->masks4 + i * 4, self->masks + i * nwords64, (size_t)nwords64 * sizeof(uint64_t));
        }
    }
    for (i = 0; i < nstates; i++) {
        Py_ssize_t k;
        self->hasout[i] = 0;
        for (k = 0; k < nwords64; k++) {
            if (self->masks[i * nwords64 + k] != 0) {
                self->hasout[i] = 1;
            }
        }
    }
    memcpy(self->cmap, cmap.buf, 128);
    memset(self->sep, 0, 128);
    for (i = 0; i < 128; i++) {
        self->sep[i] = (uint8_t)(Py_UNICODE_ISSPACE((Py_UCS4)i) || (i > 0 && strchr(SEPS, (int)i) != NULL));
    }
    self->nstates = nstates;
    self->nclasses = nclasses;
    self->nwords64 = nwords64;
done:
    PyBuffer_Release(&cmap);
    PyBuffer_Release(&table);
    PyBuffer_Release(&masks);
    if (gates.buf != NULL) {
        PyBuffer_Release(&gates);
    }
    return (PyObject *)self;
}

#define WORDS_MAX64 64

PyDoc_STRVAR(words_present_doc,
"present(text, /) -> tuple[int, int, bool]\n"
"\n"
"The words in injection._lowered(text), and in it with every spacing mark removed (bit i: word i),\n"
"and whether injection._SPACED finds a letter-spaced word (four letters, each spaced by one of\n"
"\" .-_*|+~/\") in text.");

static PyObject *
words_present(Words *self, PyObject *text)
{
    uint64_t plain[WORDS_MAX64], flat[WORDS_MAX64];
    const uint32_t *table = self->table;
    const uint64_t *masks = self->masks;
    Py_ssize_t nc = self->nclasses, w64 = self->nwords64, n, i, k;
    uint32_t sp = 0, sf = 0;
    int kind, chain = 0, after_letter = 0, spaced = 0;
    const void *data;
    PyObject *a, *b;

    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "present() needs str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (str_ready(text) < 0) {
        return NULL;
    }
    memset(plain, 0, sizeof(plain));
    memset(flat, 0, sizeof(flat));
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    for (i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        unsigned cls;
        int is_sep;
        /* _SPACED: [a-z](?:[ .\-_*|+~/][a-z]){3}, re.IGNORECASE: the letters are ASCII ones and
           the four that fold to them; chain counts the letters of the current alternation */
        if (c < 128 ? M_ALPHA(c) : (c == 0x130 || c == 0x131 || c == 0x17F || c == 0x212A)) {
            chain = after_letter ? 1 : chain + 1;
            after_letter = 1;
            if (chain >= 4) {
                spaced = 1;
            }
        }
        else if (c < 128 && c != 0 && strchr(" .-_*|+~/", (int)c) != NULL && after_letter) {
            after_letter = 0;
        }
        else {
            chain = 0;
            after_letter = 0;
        }
        if (c < 128) {
            cls = self->cmap[c];
            is_sep = self->sep[c];
        }
        else {
            if (c == 0x130 || c == 0x131) {
                cls = self->cmap['i'];
            }
            else if (c == 0x17F) {
                cls = self->cmap['s'];
            }
            else if (c == 0x212A) {
                cls = self->cmap['k'];
            }
            else {
                cls = 0;
            }
            is_sep = Py_UNICODE_ISSPACE(c);
        }
        sp = table[(Py_ssize_t)sp * nc + cls];
        if (self->hasout[sp]) {
            const uint64_t *m = masks + (Py_ssize_t)sp * w64;
            for (k = 0; k < w64; k++) {
                plain[k] |= m[k];
            }
        }
        if (!is_sep) {
            sf = table[(Py_ssize_t)sf * nc + cls];
            if (self->hasout[sf]) {
                const uint64_t *m = masks + (Py_ssize_t)sf * w64;
                for (k = 0; k < w64; k++) {
                    flat[k] |= m[k];
                }
            }
        }
    }
    a = _PyLong_FromByteArray((const unsigned char *)plain, (size_t)w64 * 8, 1, 0);
    if (a == NULL) {
        return NULL;
    }
    b = _PyLong_FromByteArray((const unsigned char *)flat, (size_t)w64 * 8, 1, 0);
    if (b == NULL) {
        Py_DECREF(a);
        return NULL;
    }
    return Py_BuildValue("(NNO)", a, b, spaced ? Py_True : Py_False);
}

/* ---- fields(): the gates of each text field of a step, natively ---- */

/* The text injection._text_of(value) makes, lower-cased, while it is ASCII and made of plain data. */
typedef struct {
    uint8_t *buf;
    Py_ssize_t len, cap;
    Py_ssize_t size;      /* characters of the strings taken (the joining newlines not counted) */
    Py_ssize_t max_chars; /* injection.MAX_SCAN_CHARS */
    int max_depth;        /* injection._DEPTH */
    int parts;            /* strings taken */
    int done;             /* max_chars reached: _text_of stops */
    int declined;         /* a character not learned, or a value _texts would read otherwise */
    const Words *words;   /* its learned readings of non-ASCII characters */
} TextBuf;

static int
tb_reserve(TextBuf *tb, Py_ssize_t more)
{
    if (tb->len + more > tb->cap) {
        Py_ssize_t cap = tb->cap ? tb->cap : 4096;
        uint8_t *grown;
        while (cap < tb->len + more) {
            cap *= 2;
        }
        grown = PyMem_Realloc(tb->buf, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        tb->buf = grown;
        tb->cap = cap;
    }
    return 0;
}

/*
 * A string that is not ASCII, cut at n characters: each ASCII character lower-cased, each other
 * one as its learned reading (words_learn), and declined at the first one not learned.
 */
static int
tb_add_wide(TextBuf *tb, PyObject *text, Py_ssize_t n)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    uint32_t *const *pages = tb->words->pages;
    Py_ssize_t k;
    if (pages == NULL) {
        tb->declined = 1;
        return 0;
    }
    for (k = 0; k < n; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        const uint32_t *page;
        const uint8_t *reading;
        uint32_t at;
        if (c < 128) {
            tb->buf[tb->len++] = (c >= 'A' && c <= 'Z') ? (uint8_t)(c | 0x20) : (uint8_t)c;
            continue;
        }
        page = pages[c >> 8];
        if (page == NULL || (at = page[c & 255]) == 0 || at == WORDS_REFUSED) {
            tb->declined = 1;
            return 0;
        }
        reading = tb->words->readings + (Py_ssize_t)(at - 1) * WORDS_READING;
        /* room for the reading and one byte for each character left (reserved for one each) */
        if (reading[0] > 1 && tb_reserve(tb, reading[0] + (n - k)) < 0) {
            return -1;
        }
        memcpy(tb->buf + tb->len, reading + 1, reading[0]);
        tb->len += reading[0];
    }
    return 0;
}

/* _text_of's parts.append(text[: MAX_SCAN_CHARS - size]), joined by "\n", lower-cased; a string
   that is not ASCII, normalise'd as its characters' learned readings (tb_add_wide) */
static int
tb_add(TextBuf *tb, PyObject *text)
{
    Py_ssize_t n, k;
    const uint8_t *src;
    uint8_t *dst;
    if (str_ready(text) < 0) {
        return -1;
    }
    n = PyUnicode_GET_LENGTH(text);
    if (n > tb->max_chars - tb->size) {
        n = tb->max_chars - tb->size;
    }
    if (tb_reserve(tb, n + 1) < 0) {
        return -1;
    }
    if (tb->parts++ > 0) {
        tb->buf[tb->len++] = '\n';
    }
    if (!PyUnicode_IS_ASCII(text)) {
        if (tb_add_wide(tb, text, n) < 0) {
            return -1;
        }
        tb->size += n;
        if (tb->size >= tb->max_chars) {
            tb->done = 1;
        }
        return 0;
    }
    src = (const uint8_t *)PyUnicode_DATA(text);
    dst = tb->buf + tb->len;
    for (k = 0; k + 8 <= n; k += 8) { /* 8 ASCII bytes at a time: A-Z get 0x20 */
        uint64_t x, low7, upper;
        memcpy(&x, src + k, 8);
        low7 = x & 0x7F7F7F7F7F7F7F7FULL;
        upper = (low7 + 0x3F3F3F3F3F3F3F3FULL) & ~(low7 + 0x2525252525252525ULL) & ~x & 0x8080808080808080ULL;
        x |= upper >> 2;
        memcpy(dst + k, &x, 8);
    }
    for (; k < n; k++) {
        uint8_t c = src[k];
        dst[k] = (c >= 'A' && c <= 'Z') ? (uint8_t)(c | 0x20) : c;
    }
    tb->len += n;
    tb->size += n;
    if (tb->size >= tb->max_chars) {
        tb->done = 1;
    }
    return 0;
}

/* injection._texts(value, depth), into tb; -1 on an error (memory) */
static int
tb_walk(TextBuf *tb, PyObject *value, int depth)
{
    if (depth > tb->max_depth) {
        return 0;
    }
    if (PyUnicode_Check(value)) {
        return tb_add(tb, value);
    }
    if (PyDict_CheckExact(value)) {
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (!tb->done && !tb->declined && PyDict_Next(value, &pos, &key, &item)) {
            if (PyUnicode_Check(key) && tb_add(tb, key) < 0) {
                return -1;
            }
            if (!tb->done && !tb->declined && tb_walk(tb, item, depth + 1) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
        Py_ssize_t i;
        /* a list may change size only through Python code, and none runs here */
        for (i = 0; i < PySequence_Fast_GET_SIZE(value) && !tb->done && !tb->declined; i++) {
            if (tb_walk(tb, PySequence_Fast_GET_ITEM(value, i), depth + 1) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value)) {
        return 0; /* no text, no .content */
    }
    tb->declined = 1; /* a Mapping or sequence of another type, a message with .content, ... */
    return 0;
}

#define W_SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r') || ((c) >= 0x1c && (c) <= 0x1f))
#define W_ALNUM(c) (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z'))
#define W_WORD(c) (W_ALNUM(c) || (c) == '_')

/* lit (lower-case) at t[i] */
static inline int
w_lit(const uint8_t *t, Py_ssize_t n, Py_ssize_t i, const char *lit)
{
    Py_ssize_t len = (Py_ssize_t)strlen(lit);
    return i + len <= n && memcmp(t + i, lit, (size_t)len) == 0;
}

/* the end of the run of \s from i */
static inline Py_ssize_t
w_spaces(const uint8_t *t, Py_ssize_t n, Py_ssize_t i)
{
    while (i < n && W_SPACE(t[i])) {
        i++;
    }
    return i;
}

static int
w_one_of(const uint8_t *t, Py_ssize_t n, Py_ssize_t i, const char *const *lits, int nlits)
{
    int k;
    for (k = 0; k < nlits; k++) {
        if (w_lit(t, n, i, lits[k])) {
            return 1;
        }
    }
    return 0;
}

/* The first occurrence of needle (len >= 1 bytes) in t[from, n), or NULL: memmem, 16 positions at a
   time where SSE2 is (the positions whose byte is the needle's first and whose byte len - 1 on is
   its last, then a compare; glibc's memmem is slow for these short needles). */
static const uint8_t *
w_find(const uint8_t *t, Py_ssize_t n, Py_ssize_t from, const char *needle, Py_ssize_t len)
{
    Py_ssize_t i = from;
#if defined(__SSE2__)
    __m128i first = _mm_set1_epi8(needle[0]), last = _mm_set1_epi8(needle[len - 1]);
    for (; i + 16 + len - 1 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(t + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(t + i + len - 1));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
        while (m) {
            Py_ssize_t at = i + __builtin_ctz(m);
            if (len <= 2 || memcmp(t + at + 1, needle + 1, (size_t)(len - 2)) == 0) {
                return t + at;
            }
            m &= m - 1;
        }
    }
#endif
    for (; i + len <= n; i++) {
        if (t[i] == (uint8_t)needle[0] && memcmp(t + i, needle, (size_t)len) == 0) {
            return t + i;
        }
    }
    return NULL;
}

static const char *const W_GRADES[] = {"score", "rating", "grade", "mark"};
static const char *const W_HIGHS[] = {"perfect", "full", "max", "high", "top", "passing"};
static const char *const W_ROLES[] = {"system", "instruction"};
static const char *const W_TAILS[] = {"of", "run", "data", "input"};

/*
 * Gate pattern k on the lower-cased ASCII text t (injection._NATIVE_PATTERNS, in this order):
 * 0: (?:perfect|full|max|high|top|passing)\w*\s+(?:score|rating|grade|mark)
 * 1: score\s+(?:this|it|the\s+run)
 * 2: ##\s*(?:system|instruction)
 * 3: end[\s_-]*(?:of|run|data|input), where the "end" starts a line but for non-alphanumeric
 *    characters (fake_role_marker's ^[\W_]*END...(?:DATA|INPUT), the one alternative this
 *    pattern gates, needs that: ^ is a line start, [\W_] every character but a letter or a digit)
 * Each is what a regex search finds (\s and \w of ASCII text; no backtracking can help: the
 * runs \w*, \s+, \s* and [\s_-]* end where a letter the next part needs begins). A byte >= 0x80
 * stands for a learned non-ASCII character (no space, see words_learn): 0 takes it as \w and 3 as
 * [\W_], either of which it may be, so the gate passes whenever the regex may find a match.
 */
static int
words_pattern(const uint8_t *t, Py_ssize_t n, int k)
{
    const uint8_t *hit;
    Py_ssize_t i, j;
    int h, hw;
    switch (k) {
    case 0: /* from each grade word back: \s+, then the run of \w before it holds a high word */
        for (h = 0; h < 4; h++) {
            Py_ssize_t len = (Py_ssize_t)strlen(W_GRADES[h]);
            for (i = 0; (hit = w_find(t, n, i, W_GRADES[h], len)) != NULL;
                 i = hit - t + 1) {
                Py_ssize_t g = hit - t, ws;
                if (g == 0 || !W_SPACE(t[g - 1])) {
                    continue;
                }
                j = g - 1;
                while (j > 0 && W_SPACE(t[j - 1])) {
                    j--;
                }
                for (ws = j; ws > 0 && (W_WORD(t[ws - 1]) || t[ws - 1] >= 0x80); ws--) {
                }
                for (hw = 0; hw < 6; hw++) {
                    Py_ssize_t hl = (Py_ssize_t)strlen(W_HIGHS[hw]);
                    if (j - ws >= hl && w_find(t, j, ws, W_HIGHS[hw], hl) != NULL) {
                        return 1;
                    }
                }
            }
        }
        return 0;
    case 1:
        for (i = 0; (hit = w_find(t, n, i, "score", 5)) != NULL; i = hit - t + 1) {
            j = hit - t + 5;
            if (j < n && W_SPACE(t[j])) {
                j = w_spaces(t, n, j);
                if (w_lit(t, n, j, "this") || w_lit(t, n, j, "it")) {
                    return 1;
                }
                if (w_lit(t, n, j, "the") && j + 3 < n && W_SPACE(t[j + 3]) &&
                    w_lit(t, n, w_spaces(t, n, j + 3), "run")) {
                    return 1;
                }
            }
        }
        return 0;
    case 2:
        for (i = 0; (hit = w_find(t, n, i, "##", 2)) != NULL; i = hit - t + 1) {
            if (w_one_of(t, n, w_spaces(t, n, hit - t + 2), W_ROLES, 2)) {
                return 1;
            }
        }
        return 0;
    case 3:
        for (i = 0; (hit = w_find(t, n, i, "end", 3)) != NULL; i = hit - t + 1) {
            Py_ssize_t at = hit - t, b = at;
            while (b > 0 && !W_ALNUM(t[b - 1]) && t[b - 1] != '\n') {
                b--;
            }
            if (b > 0 && t[b - 1] != '\n') {
                continue; /* a letter or a digit before it on its line */
            }
            j = at + 3;
            while (j < n && (W_SPACE(t[j]) || t[j] == '_' || t[j] == '-')) {
                j++;
            }
            if (w_one_of(t, n, j, W_TAILS, 4)) {
                return 1;
            }
        }
        return 0;
    default:
        return 0;
    }
}

/* the alternatives whose gate passes (bit i: alternative i of the part), from the gates at *at */
static unsigned
words_candidates(const uint64_t *g, Py_ssize_t *at, Py_ssize_t w64, const uint64_t *present,
                 const uint8_t *t, Py_ssize_t n, int *patterns, int use_patterns)
{
    unsigned found = 0;
    uint64_t nalt = g[(*at)++], alt, nconj, c;
    for (alt = 0; alt < nalt; alt++) {
        int passes = 0;
        nconj = g[(*at)++];
        for (c = 0; c < nconj; c++) {
            uint64_t need = g[*at], ngroups = g[*at + 1], grp;
            const uint64_t *groups = g + *at + 2;
            int ok = !passes;
            *at += 2 + (Py_ssize_t)ngroups * w64;
            for (grp = 0; ok && grp < ngroups; grp++) {
                Py_ssize_t k;
                int any = 0;
                for (k = 0; k < w64; k++) {
                    any |= (groups[grp * (uint64_t)w64 + (uint64_t)k] & present[k]) != 0;
                }
                ok = any;
            }
            if (ok && use_patterns) {
                int p;
                for (p = 0; ok && p < WORDS_PATTERNS; p++) {
                    if (need >> p & 1) {
                        if (patterns[p] < 0) {
                            patterns[p] = words_pattern(t, n, p);
                        }
                        ok = patterns[p];
                    }
                }
            }
            passes |= ok;
        }
        if (passes) {
            found |= 1u << alt;
        }
    }
    return found;
}

/*
 * _SPACED ([a-z](?:[ .\-_*|+~/][a-z]){3}, re.IGNORECASE) on ASCII text as a table: the state is
 * 2 * chain + after_letter of words_present's loop (chain: the letters of the current
 * alternation, after_letter: the last character was a letter), W_SPACED_FOUND once a fourth
 * letter is reached; the input is W_KIND of the character (0 other, 1 letter, 2 spacing mark).
 */
#define W_SPACED_FOUND 8
static uint8_t W_KIND[256];
static uint8_t W_SPACED_NEXT[9][3];

static void
init_words_tables(void)
{
    int c, state, kind;
    for (c = 0; c < 256; c++) {
        W_KIND[c] = (uint8_t)(M_ALPHA(c) && c < 128 ? 1 : (c != 0 && c < 128 && strchr(" .-_*|+~/", c) != NULL) ? 2 : 0);
    }
    for (state = 0; state < 9; state++) {
        for (kind = 0; kind < 3; kind++) {
            int chain = state / 2, after = state % 2, next;
            if (state == W_SPACED_FOUND) {
                next = W_SPACED_FOUND;
            }
            else if (kind == 1) {
                chain = after ? 1 : chain + 1;
                next = chain >= 4 ? W_SPACED_FOUND : 2 * chain + 1;
            }
            else if (kind == 2 && after) {
                next = 2 * chain;
            }
            else {
                next = 0;
            }
            W_SPACED_NEXT[state][kind] = (uint8_t)next;
        }
    }
}

/* the words in the ASCII t (plain: bit i, word i) and whether _SPACED finds a letter-spaced
   word in it, as present() */
#define WORDS_LANES 4
#define WORDS_LANED_MIN 1024 /* shorter texts: one lane */

/* One lane of words_scan_ascii over t[from, to), from the automaton state off and the _SPACED
   state spaced; or-s its words into p and returns its _SPACED state */
static inline unsigned
words_lane(const Words *self, const uint8_t *t, Py_ssize_t from, Py_ssize_t to, uint32_t off,
           unsigned spaced, uint64_t *p)
{
    const uint16_t *ptable = self->ptable;
    const uint64_t *masks4 = self->masks4;
    const uint8_t *cmap = self->cmap;
    int shift = self->pshift;
    uint64_t p0 = 0, p1 = 0, p2 = 0, p3 = 0;
    Py_ssize_t i;
    for (i = from; i < to; i++) {
        uint8_t c = t[i];
        const uint64_t *m;
        spaced = W_SPACED_NEXT[spaced][W_KIND[c]];
        off = ptable[off + cmap[c & 0x7f]];
        m = masks4 + ((off >> shift) << 2);
        p0 |= m[0];
        p1 |= m[1];
        p2 |= m[2];
        p3 |= m[3];
    }
    p[0] |= p0;
    p[1] |= p1;
    p[2] |= p2;
    p[3] |= p3;
    return spaced;
}

/*
 * The words in the ASCII t (plain: bit i, word i) and whether _SPACED finds a letter-spaced word
 * in it, as present(). Long texts in WORDS_LANES interleaved lanes (each lane's look-ups chain;
 * lanes overlap): lane k reads its segment after the `reach` bytes before it, from the start
 * states, so it finds every word and letter-spaced run that ends in its segment (none is longer
 * than reach + 1 bytes: the longest word, and 7 for _SPACED's four letters and three marks).
 */
static int
words_scan_ascii(Words *self, const uint8_t *t, Py_ssize_t n, uint64_t *plain)
{
    const uint8_t *cmap = self->cmap;
    Py_ssize_t i, k;
    unsigned spaced = 0;
    if (self->ptable != NULL) {
        uint64_t got[4] = {0, 0, 0, 0};
        Py_ssize_t reach = self->longest > 6 ? self->longest - 1 : 6, seg = n / WORDS_LANES;
        if (n < WORDS_LANED_MIN || seg <= reach) {
            spaced = words_lane(self, t, 0, n, 0, 0, got);
        }
        else {
            const uint16_t *ptable = self->ptable;
            const uint64_t *masks4 = self->masks4;
            int shift = self->pshift, lane;
            uint32_t off[WORDS_LANES] = {0};
            unsigned sp[WORDS_LANES] = {0};
            uint64_t p0 = 0, p1 = 0, p2 = 0, p3 = 0;
            /* lanes 1..: the bytes before their segments, to be in the state the text leaves there
               for every word that ends in the segment */
            for (lane = 1; lane < WORDS_LANES; lane++) {
                for (i = lane * seg - reach; i < lane * seg; i++) {
                    uint8_t c = t[i];
                    sp[lane] = W_SPACED_NEXT[sp[lane]][W_KIND[c]];
                    off[lane] = ptable[off[lane] + cmap[c & 0x7f]];
                    /* no words or-ed in here: a word that ends here ends in the lane before */
                }
            }
            {
                const uint8_t *t0 = t, *t1 = t + seg, *t2 = t + 2 * seg, *t3 = t + 3 * seg;
                uint32_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3];
                unsigned s0 = sp[0], s1 = sp[1], s2 = sp[2], s3 = sp[3];
#define WORDS_STEP(o, s, c)                                      \
    do {                                                         \
        const uint64_t *m;                                       \
        (s) = W_SPACED_NEXT[(s)][W_KIND[(c)]];                   \
        (o) = ptable[(o) + cmap[(c) & 0x7f]];                    \
        m = masks4 + (((o) >> shift) << 2);                      \
        p0 |= m[0];                                              \
        p1 |= m[1];                                              \
        p2 |= m[2];                                              \
        p3 |= m[3];                                              \
    } while (0)
                for (i = 0; i < seg; i++) {
                    uint8_t c0 = t0[i], c1 = t1[i], c2 = t2[i], c3 = t3[i];
                    WORDS_STEP(o0, s0, c0);
                    WORDS_STEP(o1, s1, c1);
                    WORDS_STEP(o2, s2, c2);
                    WORDS_STEP(o3, s3, c3);
                }
#undef WORDS_STEP
                off[0] = o0;
                off[1] = o1;
                off[2] = o2;
                off[3] = o3;
                sp[0] = s0;
                sp[1] = s1;
                sp[2] = s2;
                sp[3] = s3;
            }
            got[0] = p0;
            got[1] = p1;
            got[2] = p2;
            got[3] = p3;
            for (lane = 0; lane < WORDS_LANES; lane++) {
                spaced |= sp[lane] == W_SPACED_FOUND ? W_SPACED_FOUND : 0;
            }
            if (WORDS_LANES * seg < n) { /* the rest, as the last lane's go on */
                unsigned s_tail = words_lane(self, t, WORDS_LANES * seg, n, off[WORDS_LANES - 1],
                                             sp[WORDS_LANES - 1], got);
                spaced |= s_tail == W_SPACED_FOUND ? W_SPACED_FOUND : 0;
            }
        }
        for (k = 0; k < self->nwords64; k++) {
            plain[k] |= got[k];
        }
        return spaced == W_SPACED_FOUND;
    }
    {
        const uint32_t *table = self->table;
        const uint64_t *masks = self->masks;
        Py_ssize_t nc = self->nclasses, w64 = self->nwords64;
        uint32_t st = 0;
        for (i = 0; i < n; i++) {
            uint8_t c = t[i];
            spaced = W_SPACED_NEXT[spaced][W_KIND[c]];
            st = table[(Py_ssize_t)st * nc + cmap[c & 0x7f]];
            if (self->hasout[st]) {
                const uint64_t *m = masks + (Py_ssize_t)st * w64;
                for (k = 0; k < w64; k++) {
                    plain[k] |= m[k];
                }
            }
        }
    }
    return spaced == W_SPACED_FOUND;
}

/* the words in the ASCII t once every spacing mark is removed (flat), as present() */
static void
words_scan_flat(Words *self, const uint8_t *t, Py_ssize_t n, uint64_t *flat)
{
    const uint32_t *table = self->table;
    const uint64_t *masks = self->masks;
    Py_ssize_t nc = self->nclasses, w64 = self->nwords64, i, k;
    uint32_t sf = 0;
    for (i = 0; i < n; i++) {
        uint8_t c = t[i] & 0x7f;
        if (self->sep[c]) {
            continue;
        }
        sf = table[(Py_ssize_t)sf * nc + self->cmap[c]];
        if (self->hasout[sf]) {
            const uint64_t *m = masks + (Py_ssize_t)sf * w64;
            for (k = 0; k < w64; k++) {
                flat[k] |= m[k];
            }
        }
    }
}

PyDoc_STRVAR(words_fields_doc,
"fields(values, max_chars, max_depth, /) -> tuple[int | None, ...]\n"
"\n"
"For each value of the tuple values (a step's text fields), the alternatives whose gate passes on\n"
"injection.normalise(injection._text_of(value)) (bit i: plain alternative i; bit 16 + j: letter-spaced\n"
"alternative j, only when the text holds a letter-spaced word; 0 for None), or None when the value\n"
"holds a non-ASCII character not learned (see learn), or data other than str, exact dict, list and\n"
"tuple, int, float, bool and None (then Python decides); the empty tuple when every item would be 0.\n"
"Needs the gates given to Words().");

static PyObject *
words_fields(Words *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *values, *out;
    Py_ssize_t nvalues, v, max_chars, max_depth;
    TextBuf tb = {0};
    int nothing;

    if (nargs != 3 || !PyTuple_Check(args[0]) || !PyLong_Check(args[1]) || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "fields() takes a tuple and two ints");
        return NULL;
    }
    if (self->gates == NULL) {
        PyErr_SetString(PyExc_ValueError, "fields(): this Words has no gates");
        return NULL;
    }
    max_chars = PyLong_AsSsize_t(args[1]);
    max_depth = PyLong_AsSsize_t(args[2]);
    if ((max_chars == -1 || max_depth == -1) && PyErr_Occurred()) {
        return NULL;
    }
    if (max_chars < 0 || max_depth < 0 || max_depth > 1000) {
        PyErr_SetString(PyExc_ValueError, "fields(): bad limits");
        return NULL;
    }
    values = args[0];
    nvalues = PyTuple_GET_SIZE(values);
    nothing = 1;
    out = PyTuple_New(nvalues);
    if (out == NULL) {
        return NULL;
    }
    for (v = 0; v < nvalues; v++) {
        PyObject *value = PyTuple_GET_ITEM(values, v), *item;
        uint64_t plain[WORDS_MAX64], flat[WORDS_MAX64];
        int patterns[WORDS_PATTERNS], p, spaced;
        Py_ssize_t at = 0;
        unsigned found;
        if (value == Py_None) { /* no text: no alternative */
            item = PyLong_FromLong(0);
            if (item == NULL) {
                Py_DECREF(out);
                PyMem_Free(tb.buf);
                return NULL;
            }
            PyTuple_SET_ITEM(out, v, item);
            continue;
        }
        tb.len = tb.size = 0;
        tb.parts = tb.done = tb.declined = 0;
        tb.max_chars = max_chars;
        tb.max_depth = (int)max_depth;
        tb.words = self;
        if (tb_walk(&tb, value, 0) < 0) {
            Py_DECREF(out);
            PyMem_Free(tb.buf);
            return NULL;
        }
        if (tb.declined) {
            PyTuple_SET_ITEM(out, v, Py_NewRef(Py_None));
            nothing = 0;
            continue;
        }
        memset(plain, 0, sizeof(plain));
        memset(flat, 0, sizeof(flat));
        for (p = 0; p < WORDS_PATTERNS; p++) {
            patterns[p] = -1;
        }
        spaced = words_scan_ascii(self, tb.buf, tb.len, plain);
        found = words_candidates(self->gates, &at, self->nwords64, plain, tb.buf, tb.len, patterns, 1);
        if (spaced) {
            words_scan_flat(self, tb.buf, tb.len, flat);
            found |= words_candidates(self->gates, &at, self->nwords64, flat, tb.buf, tb.len, patterns, 0) << 16;
        }
        nothing &= found == 0;
        item = PyLong_FromUnsignedLong(found);
        if (item == NULL) {
            Py_DECREF(out);
            PyMem_Free(tb.buf);
            return NULL;
        }
        PyTuple_SET_ITEM(out, v, item);
    }
    PyMem_Free(tb.buf);
    if (nothing) { /* no field to search, none left to Python: the caller is done */
        Py_DECREF(out);
        return PyTuple_New(0);
    }
    return out;
}

PyDoc_STRVAR(words_learn_doc,
"learn(code, reading, /) -> bool\n"
"\n"
"Read the non-ASCII code point code as reading in fields() (up to 8 bytes: ASCII bytes as they are,\n"
"lower-cased; any other byte stands for a character that is no ASCII one, no space and no letter\n"
"re.IGNORECASE folds to ASCII), instead of declining the text: the caller vouches that it is what\n"
"injection.normalise makes of the character wherever it stands. reading None: refused (fields()\n"
"still declines a text that holds it, and unknown() no longer lists it). False (nothing learned)\n"
"once 65,536 code points are learned; a code point learned or refused again keeps its first entry.");

static PyObject *
words_learn(Words *self, PyObject *const *args, Py_ssize_t nargs)
{
    long code;
    const char *bytes;
    Py_ssize_t len, k;
    uint32_t *page;
    uint8_t *reading;
    if (nargs != 2 || !PyLong_Check(args[0]) || !(PyBytes_Check(args[1]) || args[1] == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "learn() takes an int and bytes or None");
        return NULL;
    }
    code = PyLong_AsLong(args[0]);
    if (code == -1 && PyErr_Occurred()) {
        return NULL;
    }
    bytes = args[1] == Py_None ? NULL : PyBytes_AS_STRING(args[1]);
    len = args[1] == Py_None ? 0 : PyBytes_GET_SIZE(args[1]);
    if (code < 128 || code > 0x10FFFF || len > WORDS_READING - 1) {
        PyErr_SetString(PyExc_ValueError, "learn(): a non-ASCII code point and up to 8 bytes");
        return NULL;
    }
    if (self->pages == NULL) {
        self->pages = PyMem_Calloc(WORDS_PAGES, sizeof(uint32_t *));
        if (self->pages == NULL) {
            return PyErr_NoMemory();
        }
    }
    page = self->pages[code >> 8];
    if (page != NULL && page[code & 255] != 0) {
        Py_RETURN_TRUE;
    }
    if (self->nreadings >= WORDS_MAX_READINGS) {
        Py_RETURN_FALSE;
    }
    if (page == NULL) {
        page = self->pages[code >> 8] = PyMem_Calloc(256, sizeof(uint32_t));
        if (page == NULL) {
            return PyErr_NoMemory();
        }
    }
    if (bytes == NULL) {
        page[code & 255] = WORDS_REFUSED;
        self->nreadings++; /* counted: the table stays bounded */
        Py_RETURN_TRUE;
    }
    if (self->nreadings == self->capreadings) {
        Py_ssize_t cap = self->capreadings ? self->capreadings * 2 : 256;
        uint8_t *grown = PyMem_Realloc(self->readings, (size_t)(cap * WORDS_READING));
        if (grown == NULL) {
            return PyErr_NoMemory();
        }
        self->readings = grown;
        self->capreadings = cap;
    }
    reading = self->readings + self->nreadings * WORDS_READING;
    reading[0] = (uint8_t)len;
    for (k = 0; k < len; k++) {
        uint8_t c = (uint8_t)bytes[k];
        reading[1 + k] = c >= 0x80 ? 0x80 : (c >= 'A' && c <= 'Z') ? (uint8_t)(c | 0x20) : c;
    }
    page[code & 255] = (uint32_t)++self->nreadings;
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(words_unknown_doc,
"unknown(text, /) -> str\n"
"\n"
"The non-ASCII characters of text that are neither learned nor refused (see learn), each once, in\n"
"the order they first appear, at most 64.");

#define WORDS_UNKNOWN_MAX 64

static PyObject *
words_unknown(Words *self, PyObject *text)
{
    Py_UCS4 out[WORDS_UNKNOWN_MAX];
    Py_ssize_t n, i, nout = 0, k;
    int kind;
    const void *data;
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "unknown() needs str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (str_ready(text) < 0) {
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    for (i = 0; i < n && nout < WORDS_UNKNOWN_MAX; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        const uint32_t *page;
        if (c < 128) {
            continue;
        }
        page = self->pages != NULL ? self->pages[c >> 8] : NULL;
        if (page != NULL && page[c & 255] != 0) {
            continue;
        }
        for (k = 0; k < nout && out[k] != c; k++) {
        }
        if (k == nout) {
            out[nout++] = c;
        }
    }
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, nout);
}

static PyMethodDef words_methods[] = {
    {"present", (PyCFunction)words_present, METH_O, words_present_doc},
    {"learn", (PyCFunction)(void (*)(void))words_learn, METH_FASTCALL, words_learn_doc},
    {"unknown", (PyCFunction)words_unknown, METH_O, words_unknown_doc},
    {"fields", (PyCFunction)(void (*)(void))words_fields, METH_FASTCALL, words_fields_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(words_doc,
"Words(cmap, table, nclasses, masks, nwords64, /)\n"
"\n"
"Which of a set of ASCII words a text holds, built by liveguard.rules.injection (see present).");

static PyTypeObject WordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "liveguard._canon.Words",
    .tp_basicsize = sizeof(Words),
    .tp_dealloc = (destructor)words_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = words_doc,
    .tp_methods = words_methods,
    .tp_new = words_new,
};

PyDoc_STRVAR(canonical_doc,
"canonical(ignore_keys, volatile_keys, convert, maybe_json, max_depth, kinds, obj, /) -> bytes\n"
"\n"
"mask(dumps(obj, ignore_keys, volatile_keys, convert, maybe_json, max_depth), kinds), in one call\n"
"(dumps alone when kinds is empty): a Fingerprinter's canonical bytes, obj last so that\n"
"functools.partial binds the rest. Raises Decline as dumps does.");

static PyObject *
canon_canonical(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *dargs[6], *margs[2], *out, *res;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "canonical() takes exactly 7 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyBytes_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "canonical(): kinds must be bytes");
        return NULL;
    }
    dargs[0] = args[6];
    dargs[1] = args[0];
    dargs[2] = args[1];
    dargs[3] = args[2];
    dargs[4] = args[3];
    dargs[5] = args[4];
    out = canon_dumps(module, dargs, 6);
    if (out == NULL || PyBytes_GET_SIZE(args[5]) == 0) {
        return out;
    }
    margs[0] = out;
    margs[1] = args[5];
    res = canon_mask(module, margs, 2);
    Py_DECREF(out);
    return res;
}

PyDoc_STRVAR(mask_isa_doc,
"_mask_isa(name=None, /) -> str\n"
"\n"
"The instructions mask's block scan uses (one of _mask_isas()); with name, use those from now\n"
"on (for tests: every version gives the same output) and return the ones used before.");

static PyObject *
canon_mask_isa(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    const char *name;
    int k, before = m_isa;
    if (nargs > 1 || (nargs == 1 && args[0] != Py_None && !PyUnicode_Check(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "_mask_isa() takes at most one str argument");
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None) {
        name = PyUnicode_AsUTF8(args[0]);
        if (name == NULL) {
            return NULL;
        }
        for (k = 0; k < N_ISAS && (strcmp(M_ISAS[k].name, name) != 0 || !M_ISAS[k].supported()); k++) {
        }
        if (k == N_ISAS) {
            PyErr_Format(PyExc_ValueError, "_mask_isa(): %R is not one of _mask_isas()", args[0]);
            return NULL;
        }
        m_isa = k;
        m_bits = M_ISAS[k].fn;
    }
    return PyUnicode_FromString(M_ISAS[before].name);
}

PyDoc_STRVAR(mask_isas_doc,
"_mask_isas() -> tuple[str, ...]\n"
"\n"
"The versions of mask's block scan this CPU runs, the widest first (the one chosen at load).");

static PyObject *
canon_mask_isas(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *names = PyList_New(0), *name, *out;
    int k;
    if (names == NULL) {
        return NULL;
    }
    for (k = 0; k < N_ISAS; k++) {
        if (!M_ISAS[k].supported()) {
            continue;
        }
        name = PyUnicode_FromString(M_ISAS[k].name);
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(name);
    }
    out = PyList_AsTuple(names);
    Py_DECREF(names);
    return out;
}

static PyMethodDef canon_methods[] = {
    {"_mask_isa", (PyCFunction)(void (*)(void))canon_mask_isa, METH_FASTCALL, mask_isa_doc},
    {"_mask_isas", canon_mask_isas, METH_NOARGS, mask_isas_doc},
    {"dumps", (PyCFunction)(void (*)(void))canon_dumps, METH_FASTCALL, dumps_doc},
    {"mask", (PyCFunction)(void (*)(void))canon_mask, METH_FASTCALL, mask_doc},
    {"canonical", (PyCFunction)(void (*)(void))canon_canonical, METH_FASTCALL, canonical_doc},
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
    init_mask_bits();
    init_mask_isa();
    init_words_tables();
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
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0 || PyType_Ready(&WordsType) < 0 ||
        PyModule_AddObjectRef(m, "Words", (PyObject *)&WordsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
