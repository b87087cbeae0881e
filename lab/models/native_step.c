/* One decode step of a plain Llama in C, on one CPU thread: StaticStep's arithmetic
 * (lab/models/static_step.py) with no per-operation dispatch and its own matmul.
 *
 * Why: at 8 rows oneDNN's packed fp32 matmul ran the step's 33 projections at ~38 GFLOP/s
 * (2.9 ms, 2.1x the bandwidth limit on its own) and the compiled step spent ~1.5 ms more around
 * them; this tile (8 rows x 32 columns, 16 accumulators, the weight streamed once per block)
 * ran the same 33 at ~78 GFLOP/s (1.42 ms) on the same core. Built at run time by
 * lab/models/native_step.py with the machine's C compiler (-O3 -march=native); GCC/Clang vector
 * extensions, so no intrinsics and any target the compiler knows.
 *
 * Layouts: a projection's weight [n, k] is packed as [n / 32][k][32] (n a multiple of 32);
 * a layer's store is [rows, 2 * kv_heads, capacity, dim], keys in the first kv_heads planes. */

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t i16 __attribute__((vector_size(64)));
#define BLOCK 32 /* output columns per packed block: two v16 */
#define TILE 8   /* rows per tile */

typedef struct {
    int64_t hidden, heads, kv_heads, dim, inter, vocab, layers, rows, capacity, positions;
    const float *embed;                 /* [vocab, hidden] */
    const float *cos, *sin;             /* [positions, dim]; sin's first half negated */
    const float *const *in_norm;        /* [layers] -> [hidden] */
    const float *const *post_norm;
    const float *in_eps, *post_eps;     /* [layers] */
    const float *scale;                 /* [layers]: the attention's scaling */
    const float *const *qkv, *const *o, *const *gate_up, *const *down; /* packed */
    const float *norm;
    float norm_eps;
    const float *head;                  /* packed [vocab / 32][hidden][32] */
    float *const *stores;               /* [layers] -> the layer's store */
    float *scratch;                     /* dojo_scratch_floats(model) floats */
} Model;

static inline v16 load16(const float *p) { v16 v; memcpy(&v, p, sizeof v); return v; }
static inline void store16(float *p, v16 v) { memcpy(p, &v, sizeof v); }

void dojo_pack(const float *w, int64_t n, int64_t k, float *packed) {
    for (int64_t b = 0; b < n / BLOCK; b++)
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < BLOCK; j++)
                packed[(b * k + i) * BLOCK + j] = w[(b * BLOCK + j) * k + i];
}

/* y[m, 32 columns] (+)= x[m, k] @ the block's 32 columns; `split` independent accumulator sets
 * over alternate k (few rows leave the FMA's latency exposed otherwise), summed at the end. */
static inline __attribute__((always_inline)) void tile(const float *x, int64_t k,
                                                       const float *w, float *y, int64_t n,
                                                       int m, int split, int add) {
    v16 acc[4][TILE][2];
    for (int s = 0; s < split; s++)
        for (int r = 0; r < m; r++) acc[s][r][0] = acc[s][r][1] = (v16){0};
    int64_t i = 0;
    for (; i + split <= k; i += split)
        for (int s = 0; s < split; s++) {
            v16 w0 = load16(w + (i + s) * BLOCK), w1 = load16(w + (i + s) * BLOCK + 16);
            for (int r = 0; r < m; r++) {
                float xv = x[r * k + i + s];
                acc[s][r][0] += xv * w0;
                acc[s][r][1] += xv * w1;
            }
        }
    for (; i < k; i++) {
        v16 w0 = load16(w + i * BLOCK), w1 = load16(w + i * BLOCK + 16);
        for (int r = 0; r < m; r++) {
            float xv = x[r * k + i];
            acc[0][r][0] += xv * w0;
            acc[0][r][1] += xv * w1;
        }
    }
    for (int r = 0; r < m; r++) {
        v16 lo = acc[0][r][0], hi = acc[0][r][1];
        for (int s = 1; s < split; s++) { lo += acc[s][r][0]; hi += acc[s][r][1]; }
        if (add) { lo += load16(y + r * n); hi += load16(y + r * n + 16); }
        store16(y + r * n, lo);
        store16(y + r * n + 16, hi);
    }
}

/* y [m, n] = x [m, k] @ w.T (add: y += it), w packed by dojo_pack; exported for the bench's
 * "projections alone" row. */
void dojo_matmul(const float *x, int64_t m, int64_t k, int64_t n, const float *packed,
                   float *y, int add) {
    for (int64_t b = 0; b < n / BLOCK; b++) {
        const float *w = packed + b * k * BLOCK;
        for (int64_t r0 = 0; r0 < m; r0 += TILE) {
            const float *xr = x + r0 * k;
            float *yr = y + r0 * n + b * BLOCK;
            switch (m - r0 < TILE ? m - r0 : TILE) {
            case 8: tile(xr, k, w, yr, n, 8, 1, add); break;
            case 7: tile(xr, k, w, yr, n, 7, 1, add); break;
            case 6: tile(xr, k, w, yr, n, 6, 1, add); break;
            case 5: tile(xr, k, w, yr, n, 5, 1, add); break;
            case 4: tile(xr, k, w, yr, n, 4, 1, add); break;
            case 3: tile(xr, k, w, yr, n, 3, 2, add); break;
            case 2: tile(xr, k, w, yr, n, 2, 2, add); break;
            default: tile(xr, k, w, yr, n, 1, 4, add); break;
            }
        }
    }
}

/* The sum of the lanes as a tree (halves added, then their halves...): a lane-by-lane loop is
 * a chain of 16 dependent adds (~64 cycles), and attention takes one per column and head. */
static inline float hsum(v16 v) {
    typedef float v8 __attribute__((vector_size(32)));
    typedef float v4 __attribute__((vector_size(16)));
    v8 a, b;
    memcpy(&a, &v, sizeof a);
    memcpy(&b, (const char *)&v + sizeof a, sizeof b);
    a += b;
    v4 c, d;
    memcpy(&c, &a, sizeof c);
    memcpy(&d, (const char *)&a + sizeof c, sizeof d);
    c += d;
    return (c[0] + c[2]) + (c[1] + c[3]);
}

/* exp of each lane (Cephes' expf: 2^n times a degree-6 polynomial of the rest, ~1 ulp), the
 * input clamped to [-87.3, 88.7] (so a lane below gives ~1e-38, not 0). libm's expf is scalar:
 * the step's ~80k exponentials (softmax and SiLU at 8 rows) cost ~0.8 ms through it. */
static inline v16 pick(i16 mask, v16 yes, v16 no) { /* lanes of yes where mask is -1 */
    i16 a, b;
    memcpy(&a, &yes, sizeof a);
    memcpy(&b, &no, sizeof b);
    a = (a & mask) | (b & ~mask);
    memcpy(&yes, &a, sizeof a);
    return yes;
}

static inline v16 exp16(v16 x) {
    const v16 magic = (v16){0} + 12582912.f; /* 1.5 * 2^23: adding it rounds to an integer */
    x = pick(x < 88.7f, x, (v16){0} + 88.7f);
    x = pick(x > -87.3f, x, (v16){0} - 87.3f);
    v16 n = (x * 1.44269504088896341f + magic) - magic;
    v16 r = x - n * 0.693359375f + n * 2.12194440e-4f;
    v16 p = (v16){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.f;
    i16 bits = (__builtin_convertvector(n, i16) + 127) << 23;
    v16 scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* LeanLlama's RMSNorm: w * (x * rsqrt(sum(x * x) / size + eps)); size a multiple of 16. */
static void rms(const float *x, const float *w, float eps, int64_t size, float *out) {
    v16 acc = {0};
    for (int64_t i = 0; i < size; i += 16) { v16 v = load16(x + i); acc += v * v; }
    float inv = 1.f / sqrtf(hsum(acc) / (float)size + eps);
    for (int64_t i = 0; i < size; i += 16)
        store16(out + i, load16(w + i) * (load16(x + i) * inv));
}

/* out [16 * chunks] = softmax(q . keys[c] * scale over c < seen) . values. Inlined for a
 * constant `chunks` (the head_dim / 16 of common models), so the accumulators stay in
 * registers. p: room for `seen` floats. */
static inline __attribute__((always_inline)) void attend_chunks(
        const float *q, const float *keys, const float *values, int64_t seen, float scale,
        float *p, float *out, const int chunks) {
    const int64_t dim = 16 * chunks;
    float top = -INFINITY, total = 0.f;
    for (int64_t c = 0; c < seen; c++) {
        v16 acc = {0};
        for (int i = 0; i < chunks; i++) acc += load16(q + 16 * i) * load16(keys + c * dim + 16 * i);
        p[c] = hsum(acc) * scale;
        top = p[c] > top ? p[c] : top;
    }
    int64_t c = 0;
    for (; c + 16 <= seen; c += 16) {
        v16 e = exp16(load16(p + c) - top);
        store16(p + c, e);
        total += hsum(e);
    }
    for (; c < seen; c++) { /* the tail, one lane at a time through the same exp16 */
        p[c] = exp16((v16){0} + (p[c] - top))[0];
        total += p[c];
    }
    v16 acc[16];
    for (int i = 0; i < chunks; i++) acc[i] = (v16){0};
    for (int64_t col = 0; col < seen; col++) {
        float weight = p[col] / total;
        for (int i = 0; i < chunks; i++) acc[i] += weight * load16(values + col * dim + 16 * i);
    }
    for (int i = 0; i < chunks; i++) store16(out + 16 * i, acc[i]);
}

/* attend_chunks for a head_dim that is a multiple of 16, at most 256. */
static void attend(const float *q, const float *keys, const float *values, int64_t seen,
                   int64_t dim, float scale, float *p, float *out) {
    switch (dim / 16) {
    case 2: attend_chunks(q, keys, values, seen, scale, p, out, 2); break;
    case 4: attend_chunks(q, keys, values, seen, scale, p, out, 4); break;
    case 8: attend_chunks(q, keys, values, seen, scale, p, out, 8); break;
    default: attend_chunks(q, keys, values, seen, scale, p, out, (int)(dim / 16)); break;
    }
}

int64_t dojo_scratch_floats(const Model *m) {
    int64_t width = (m->heads + 2 * m->kv_heads) * m->dim;
    return m->rows * (2 * m->hidden + width + m->heads * m->dim + 3 * m->inter)
        + m->capacity;
}

/* Logits [b, vocab] of tokens ids[r] at rotary rows positions[r], each row's new key and value
 * written at column columns[r] of its store, attention over columns 0..columns[r]. Returns 0,
 * or what was out of range: 1 rows, 2 a token id, 3 a position, 4 a column (>= span), 5 the
 * span. Nothing is written unless every input is in range. */
int dojo_step(const Model *m, int64_t b, const int64_t *ids, const int64_t *positions,
              const int64_t *columns, int64_t span, float *logits) {
    if (b < 1 || b > m->rows) return 1;
    if (span < 1 || span > m->capacity) return 5;
    for (int64_t r = 0; r < b; r++) {
        if (ids[r] < 0 || ids[r] >= m->vocab) return 2;
        if (positions[r] < 0 || positions[r] >= m->positions) return 3;
        if (columns[r] < 0 || columns[r] >= span) return 4;
    }
    const int64_t hidden = m->hidden, heads = m->heads, kvh = m->kv_heads, dim = m->dim;
    const int64_t inter = m->inter, half = dim / 2, group = heads / kvh, cap = m->capacity;
    const int64_t width = (heads + 2 * kvh) * dim;
    float *h = m->scratch, *x = h + b * hidden, *qkv = x + b * hidden;
    float *att = qkv + b * width, *gu = att + b * heads * dim, *act = gu + b * 2 * inter;
    float *p = act + b * inter;
    for (int64_t r = 0; r < b; r++)
        memcpy(h + r * hidden, m->embed + ids[r] * hidden, hidden * sizeof(float));
    for (int64_t l = 0; l < m->layers; l++) {
        for (int64_t r = 0; r < b; r++)
            rms(h + r * hidden, m->in_norm[l], m->in_eps[l], hidden, x + r * hidden);
        dojo_matmul(x, b, hidden, width, m->qkv[l], qkv, 0);
        float *store = m->stores[l];
        for (int64_t r = 0; r < b; r++) {
            float *row = qkv + r * width;
            const float *c = m->cos + positions[r] * dim, *s = m->sin + positions[r] * dim;
            for (int64_t j = 0; j < heads + kvh; j++) { /* q and k rotated in place */
                float *v = row + j * dim, t[dim];
                for (int64_t i = 0; i < dim; i++) t[i] = v[(i + half) % dim];
                for (int64_t i = 0; i < dim; i++) v[i] = v[i] * c[i] + t[i] * s[i];
            }
            float *plane = store + r * 2 * kvh * cap * dim;
            for (int64_t j = 0; j < 2 * kvh; j++) /* keys, then values, at the row's column */
                memcpy(plane + (j * cap + columns[r]) * dim, row + (heads + j) * dim,
                       dim * sizeof(float));
            for (int64_t q = 0; q < heads; q++)
                attend(row + q * dim, plane + (q / group) * cap * dim,
                       plane + (kvh + q / group) * cap * dim, columns[r] + 1, dim,
                       m->scale[l], p, att + (r * heads + q) * dim);
        }
        dojo_matmul(att, b, heads * dim, hidden, m->o[l], h, 1);
        for (int64_t r = 0; r < b; r++)
            rms(h + r * hidden, m->post_norm[l], m->post_eps[l], hidden, x + r * hidden);
        dojo_matmul(x, b, hidden, 2 * inter, m->gate_up[l], gu, 0);
        for (int64_t r = 0; r < b; r++) /* SiLU(gate) * up; inter a multiple of 16 */
            for (int64_t i = 0; i < inter; i += 16) {
                v16 g = load16(gu + r * 2 * inter + i), up = load16(gu + r * 2 * inter + inter + i);
                store16(act + r * inter + i, g / (1.f + exp16(-g)) * up);
            }
        dojo_matmul(act, b, inter, hidden, m->down[l], h, 1);
    }
    for (int64_t r = 0; r < b; r++)
        rms(h + r * hidden, m->norm, m->norm_eps, hidden, x + r * hidden);
    dojo_matmul(x, b, hidden, m->vocab, m->head, logits, 0);
    return 0;
}
