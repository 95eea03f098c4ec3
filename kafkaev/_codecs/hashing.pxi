# CRC-32C (Castagnoli), the RecordBatch v2 checksum, and murmur2, the Java
# client's default partitioner hash.
#
# CRC-32C uses the SSE4.2 crc32 instruction when the CPU has it (checked once
# at import) and a slicing-by-8 table otherwise. Both are compiled here with a
# per-function target attribute, so the module still runs on CPUs without
# SSE4.2 and setup.py needs no -msse4.2.

cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    #include <string.h>

    #define KEV_CRC32C_POLY 0x82F63B78u  /* reflected Castagnoli polynomial */

    static uint32_t kev_crc32c_table[8][256];
    static int kev_crc32c_use_hw = 0;

    static uint32_t kev_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) {
        crc = ~crc;
        while (n && ((uintptr_t)p & 7)) {
            crc = kev_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
            n--;
        }
        while (n >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w = __builtin_bswap64(w);
    #endif
            w ^= crc;
            crc = kev_crc32c_table[7][w & 0xFF] ^
                  kev_crc32c_table[6][(w >> 8) & 0xFF] ^
                  kev_crc32c_table[5][(w >> 16) & 0xFF] ^
                  kev_crc32c_table[4][(w >> 24) & 0xFF] ^
                  kev_crc32c_table[3][(w >> 32) & 0xFF] ^
                  kev_crc32c_table[2][(w >> 40) & 0xFF] ^
                  kev_crc32c_table[1][(w >> 48) & 0xFF] ^
                  kev_crc32c_table[0][w >> 56];
            p += 8;
            n -= 8;
        }
        while (n--) {
            crc = kev_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        }
        return ~crc;
    }

    #if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    #include <nmmintrin.h>
    #define KEV_HAVE_HW_CRC32C 1
    __attribute__((target("sse4.2")))
    static uint32_t kev_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
        uint64_t c = ~crc;
        while (n && ((uintptr_t)p & 7)) {
            c = _mm_crc32_u8((uint32_t)c, *p++);
            n--;
        }
        while (n >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            c = _mm_crc32_u64(c, w);
            p += 8;
            n -= 8;
        }
        while (n--) {
            c = _mm_crc32_u8((uint32_t)c, *p++);
        }
        return ~(uint32_t)c;
    }
    static int kev_cpu_has_sse42(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("sse4.2");
    }
    #else
    #define KEV_HAVE_HW_CRC32C 0
    static uint32_t kev_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
        return kev_crc32c_sw(crc, p, n);
    }
    static int kev_cpu_has_sse42(void) { return 0; }
    #endif

    static void kev_crc32c_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ KEV_CRC32C_POLY : c >> 1;
            kev_crc32c_table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = kev_crc32c_table[0][i];
            for (int t = 1; t < 8; t++) {
                c = kev_crc32c_table[0][c & 0xFF] ^ (c >> 8);
                kev_crc32c_table[t][i] = c;
            }
        }
        kev_crc32c_use_hw = kev_cpu_has_sse42();
    }

    /* crc is the CRC of the bytes before p (0 to start); returns the CRC through p[n-1]. */
    static inline uint32_t kev_crc32c(uint32_t crc, const unsigned char *p, size_t n) {
        return kev_crc32c_use_hw ? kev_crc32c_hw(crc, p, n) : kev_crc32c_sw(crc, p, n);
    }

    /* org.apache.kafka.common.utils.Utils.murmur2, byte for byte, in uint32 arithmetic
       (Java's int overflow wraps the same way; >>> is the unsigned shift). */
    static uint32_t kev_murmur2(const unsigned char *data, size_t length) {
        const uint32_t seed = 0x9747b28cu;
        const uint32_t m = 0x5bd1e995u;
        const int r = 24;
        uint32_t h = seed ^ (uint32_t)length;
        size_t length4 = length / 4;
        for (size_t i = 0; i < length4; i++) {
            size_t i4 = i * 4;
            uint32_t k = (uint32_t)data[i4] | ((uint32_t)data[i4 + 1] << 8) |
                         ((uint32_t)data[i4 + 2] << 16) | ((uint32_t)data[i4 + 3] << 24);
            k *= m;
            k ^= k >> r;
            k *= m;
            h *= m;
            h ^= k;
        }
        size_t tail = length & ~(size_t)3;
        switch (length % 4) {
            case 3: h ^= (uint32_t)data[tail + 2] << 16; /* fall through */
            case 2: h ^= (uint32_t)data[tail + 1] << 8;  /* fall through */
            case 1: h ^= (uint32_t)data[tail];
                    h *= m;
        }
        h ^= h >> 13;
        h *= m;
        h ^= h >> 15;
        return h;
    }
    """
    void kev_crc32c_init() noexcept nogil
    int kev_crc32c_use_hw
    uint32_t kev_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
    uint32_t kev_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
    uint32_t kev_crc32c_raw "kev_crc32c"(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
    uint32_t kev_murmur2(const unsigned char *data, size_t length) noexcept nogil

kev_crc32c_init()

# Java's Utils.toPositive: clear the sign bit (not abs(), which differs for MIN_VALUE).
cdef enum:
    POSITIVE_MASK = 0x7FFFFFFF


cdef uint32_t crc32c_update(uint32_t crc, const char *data, Py_ssize_t n) noexcept nogil:
    return kev_crc32c_raw(crc, <const unsigned char *>data, <size_t>n)


cdef int32_t murmur2_positive(const char *data, Py_ssize_t n) noexcept nogil:
    return <int32_t>(kev_murmur2(<const unsigned char *>data, <size_t>n) & POSITIVE_MASK)


def crc32c(data, uint32_t crc=0):
    """CRC-32C (Castagnoli) of a bytes-like object, as in the RecordBatch v2 header.

    ``crc`` continues a running checksum: ``crc32c(b, crc32c(a)) == crc32c(a + b)``.
    """
    cdef Py_buffer view
    cdef uint32_t result
    if PyBytes_CheckExact(data):
        return crc32c_update(crc, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    try:
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    except TypeError:
        raise TypeError(f"crc32c: 'data' must be bytes-like, got {type(data).__name__}") from None
    try:
        with nogil:
            result = crc32c_update(crc, <const char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def murmur2(key):
    """The Java client's partitioner hash: ``Utils.toPositive(Utils.murmur2(key))``.

    A 31-bit non-negative int; the default partition of a keyed record is
    ``murmur2(key) % num_partitions``. ``str`` keys are hashed as UTF-8.
    """
    cdef Py_buffer view
    cdef const char *p
    cdef Py_ssize_t n
    cdef int32_t result
    if PyBytes_CheckExact(key):
        return murmur2_positive(PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
    if isinstance(key, str):
        p = PyUnicode_AsUTF8AndSize(key, &n)
        return murmur2_positive(p, n)
    try:
        PyObject_GetBuffer(key, &view, PyBUF_SIMPLE)
    except TypeError:
        raise TypeError(f"murmur2: 'key' must be bytes-like or str, got {type(key).__name__}") from None
    try:
        result = murmur2_positive(<const char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def _crc32c_implementation():
    """Which CRC-32C path this CPU uses: "sse4.2" or "table" (for tests and benchmarks)."""
    return "sse4.2" if kev_crc32c_use_hw else "table"


def _crc32c_table(data, uint32_t crc=0):
    """CRC-32C through the table path regardless of the CPU (tests compare both paths)."""
    cdef bytes b = bytes(data)
    return kev_crc32c_sw(crc, <const unsigned char *>PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b))
