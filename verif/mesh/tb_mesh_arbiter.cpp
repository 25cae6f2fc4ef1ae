// tb_mesh_arbiter: mesh_arbiter (N = 5) against a cycle-exact C model of the round-robin
// pointer. Every cycle compares the grant; random request patterns and random advance
// (output stalls). Also checks fairness: while a requester holds its request it is granted
// and used within N uses of the output.
#include "Vmesh_arbiter.h"
#include "tb_common.h"
#include <memory>

int main(int argc, char **argv) {
    TbArgs args = tb_parse(argc, argv);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto a = std::make_unique<Vmesh_arbiter>(ctx.get());
    std::mt19937_64 rng(args.seed);
    TbVerdict v;
    const unsigned N = 5;
    uint64_t cyc = 0;
    auto tick = [&]() { a->clk_i = 1; a->eval(); a->clk_i = 0; a->eval(); cyc++; };
    a->clk_i = 0; a->rst_ni = 0; a->req_i = 0; a->advance_i = 0; a->eval();
    tick(); a->rst_ni = 1; a->eval();

    unsigned ptr = 0;
    unsigned waited[N] = {0};  // uses of the output since requester k started waiting
    unsigned held = 0;         // requests held until served (fairness part)
    uint64_t grants = 0;
    for (uint64_t k = 0; k < args.cycles; k++) {
        unsigned req = 0;
        if ((k / 1000) % 2 == 0) {
            req = rng() & 0x1f;  // fully random
        } else {
            // requesters hold their request until served, new ones join at random
            req = held | (rng() & 0x1f & (rng() & 0x1f));
        }
        bool adv = rng() % 4 != 0;
        a->req_i = req; a->advance_i = adv; a->eval();
        unsigned exp = 0;
        for (unsigned j = 0; j < N; j++) {
            unsigned idx = (ptr + j) % N;
            if ((req >> idx) & 1) { exp = 1u << idx; break; }
        }
        v.check(cyc, "grant", exp, a->gnt_o);
        if (exp && adv) {
            unsigned w = __builtin_ctz(exp);
            ptr = (w + 1) % N;
            grants++;
            for (unsigned j = 0; j < N; j++) {
                if (j == w) { waited[j] = 0; continue; }
                // held and still requesting: in the first cycle of a random phase the
                // held set is last phase's and the request may be gone
                if (((held & req) >> j) & 1) {
                    waited[j]++;
                    if (waited[j] >= N) v.fail(cyc, "starvation: uses while waiting", N - 1, waited[j]);
                }
            }
        }
        if ((k / 1000) % 2 == 1) {
            held = req & ~((exp && adv) ? exp : 0);
        } else {
            held = 0;
            for (unsigned j = 0; j < N; j++) waited[j] = 0;
        }
        tick();
        if (v.errors) break;
    }
    printf("%llu grants used, %llu cycles\n", (unsigned long long)grants, (unsigned long long)cyc);
    a->final();
    return v.finish("tb_mesh_arbiter");
}
