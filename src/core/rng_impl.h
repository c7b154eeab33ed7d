/* rng_impl.h — the one home of attnlab's random-number mechanisms (internal header):
 *   al__mix64        the splitmix64 finaliser, a 64-bit bijective hash;
 *   al__splitmix64   the splitmix64 generator step (seeds the xoshiro streams);
 *   al__xoshiro_next one step of xoshiro256** on a raw state (al_rng_u64 is this, and hot loops that
 *                    keep a copy of the state in registers inline it);
 *   al__keep_hash    the counter-based dropout decision: a draw from index alone, so any pass can
 *                    regenerate any entry in any order and no mask is stored.
 * Every dropout and stream in the library goes through these, so equal inputs give equal bits. */
#ifndef ATTNLAB_RNG_IMPL_H
#define ATTNLAB_RNG_IMPL_H
#include <stdint.h>

#define AL__GOLDEN64 0x9e3779b97f4a7c15ULL   /* 2^64 / φ: the splitmix increment */
#define AL__MIX_M1 0xbf58476d1ce4e5b9ULL
#define AL__MIX_M2 0x94d049bb133111ebULL

static inline uint64_t al__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * AL__MIX_M1;
    z = (z ^ (z >> 27)) * AL__MIX_M2;
    return z ^ (z >> 31);
}
static inline uint64_t al__splitmix64(uint64_t *x) { return al__mix64(*x += AL__GOLDEN64); }

static inline uint64_t al__rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
/* s: (4) xoshiro256** state, advanced in place; returns the next 64-bit draw. */
static inline uint64_t al__xoshiro_next(uint64_t *s)
{
    uint64_t res = al__rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = al__rotl64(s[3], 45);
    return res;
}

/* Counter-based keep decision: the high 32 bits of mix64(base + idx·golden) compared with
 * thresh = p·2^32 (1 = keep). Attention dropout uses base = seed, idx = (b·H + h)·slots + slot. */
static inline int al__keep_hash(uint64_t base, uint64_t idx, uint32_t thresh)
{
    return (uint32_t)(al__mix64(base + idx * AL__GOLDEN64) >> 32) >= thresh;
}
#endif
