// tb_common.h: the helpers every mesh bench shares: argument parsing (--seed, --cycles,
// +trace), a seeded RNG whose seed is printed, bit-field access into Verilator's wide
// signals, and the verdict (exit status 0 iff no check failed).
#ifndef MESH_TB_COMMON_H
#define MESH_TB_COMMON_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <verilated.h>

struct TbArgs {
    uint64_t seed = 1;
    uint64_t cycles = 20000;
    std::string shape;
    bool trace = false;
    int extra = 0;
};

static inline TbArgs tb_parse(int argc, char **argv) {
    TbArgs a;
    const char *env = getenv("SEED");
    if (env) a.seed = strtoull(env, nullptr, 0);
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--seed=", 7)) a.seed = strtoull(argv[i] + 7, nullptr, 0);
        else if (!strncmp(argv[i], "--cycles=", 9)) a.cycles = strtoull(argv[i] + 9, nullptr, 0);
        else if (!strncmp(argv[i], "--shape=", 8)) a.shape = argv[i] + 8;
        else if (!strncmp(argv[i], "--extra=", 8)) a.extra = atoi(argv[i] + 8);
        else if (!strcmp(argv[i], "+trace")) a.trace = true;
        else if (argv[i][0] == '+') continue;  // Verilator plusargs
        else { fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[i]); exit(2); }
    }
    printf("seed=%llu (replay with --seed=%llu)\n", (unsigned long long)a.seed,
           (unsigned long long)a.seed);
    return a;
}

// Bit access into Verilator signals of any width (CData/SData/IData/QData/VlWide).
template <typename T> static inline uint64_t tb_get(const T &sig, unsigned lsb, unsigned n) {
    uint64_t v = 0;
    for (unsigned k = 0; k < n; k++) {
        unsigned b = lsb + k;
        uint64_t bit;
        if constexpr (std::is_integral<T>::value) bit = (uint64_t(sig) >> b) & 1;
        else bit = (sig[b / 32] >> (b % 32)) & 1;
        v |= bit << k;
    }
    return v;
}
template <typename T> static inline void tb_set(T &sig, unsigned lsb, unsigned n, uint64_t v) {
    for (unsigned k = 0; k < n; k++) {
        unsigned b = lsb + k;
        uint64_t bit = (v >> k) & 1;
        if constexpr (std::is_integral<T>::value) {
            sig = T((uint64_t(sig) & ~(uint64_t(1) << b)) | (bit << b));
        } else {
            sig[b / 32] = (sig[b / 32] & ~(1u << (b % 32))) | (uint32_t(bit) << (b % 32));
        }
    }
}

struct TbVerdict {
    uint64_t checks = 0, errors = 0;
    void fail(uint64_t cycle, const char *what, uint64_t exp, uint64_t act) {
        if (errors < 10)
            printf("MISMATCH cycle %llu: %s: expected 0x%llx, actual 0x%llx\n",
                   (unsigned long long)cycle, what, (unsigned long long)exp,
                   (unsigned long long)act);
        errors++;
    }
    bool check(uint64_t cycle, const char *what, uint64_t exp, uint64_t act) {
        checks++;
        if (exp != act) { fail(cycle, what, exp, act); return false; }
        return true;
    }
    int finish(const char *name) {
        printf("%s: %llu checks, %llu errors\n", name, (unsigned long long)checks,
               (unsigned long long)errors);
        printf("RESULT: %d passed, %d failed\n", errors ? 0 : 1, errors ? 1 : 0);
        return errors ? 1 : 0;
    }
};

// RTL assertions: the mesh benches build with --assert -DMESH_FAIRNESS (the routers'
// bounded-wait checks, rtl/mesh/mesh_router*_fair.vh). A failing one prints its %Error line
// (file, line, instance) and is counted here as a failed check at the cycle it fired,
// instead of aborting the run. tb_asserts_init once per context, tb_asserts_check per tick.
static inline void tb_asserts_init(VerilatedContext *ctx) { ctx->fatalOnError(false); }
static inline void tb_asserts_check(VerilatedContext *ctx, TbVerdict &v, uint64_t cycle) {
    if (!ctx->gotError()) return;
    v.fail(cycle, "RTL assertion (see the %Error line above)", 1, 0);
    ctx->gotError(false);
    ctx->gotFinish(false);
}

// A wavelet is {ctrl[36], color[35:32], payload[31:0]}.
static inline uint64_t wv_make(unsigned ctrl, unsigned color, uint32_t payload) {
    return (uint64_t(ctrl & 1) << 36) | (uint64_t(color & 15) << 32) | payload;
}
static inline unsigned wv_color(uint64_t w) { return (w >> 32) & 15; }

#endif
