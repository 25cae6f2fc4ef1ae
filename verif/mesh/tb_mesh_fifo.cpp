// tb_mesh_fifo: mesh_fifo against a cycle-exact C model (a deque with the same bypass
// rule). Every cycle compares in_ready, out_valid, out_data (when valid) and empty; random
// valid and back-pressure in phases (streaming, filling, draining). FIFO_DEPTH/FIFO_BYPASS
// select the configuration the binary was built for (see verif/mesh.mk).
#include "Vmesh_fifo.h"
#include "tb_common.h"
#include <deque>
#include <memory>

#ifndef FIFO_DEPTH
#define FIFO_DEPTH 2
#endif
#ifndef FIFO_BYPASS
#define FIFO_BYPASS 1
#endif

int main(int argc, char **argv) {
    TbArgs args = tb_parse(argc, argv);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto f = std::make_unique<Vmesh_fifo>(ctx.get());
    std::mt19937_64 rng(args.seed);
    TbVerdict v;
    uint64_t cyc = 0;
    printf("mesh_fifo Depth=%d Bypass=%d\n", FIFO_DEPTH, FIFO_BYPASS);
    auto tick = [&]() { f->clk_i = 1; f->eval(); f->clk_i = 0; f->eval(); cyc++; };
    f->clk_i = 0; f->rst_ni = 0; f->in_valid_i = 0; f->out_ready_i = 0; f->eval();
    tick(); f->rst_ni = 1; f->eval();

    std::deque<uint64_t> q;
    bool pv = false; uint64_t pd = 0; uint64_t next = 0;
    uint64_t in_beats = 0, out_beats = 0, expect_next_out = 0;
    unsigned p_valid = 50, p_ready = 50;
    for (uint64_t k = 0; k < args.cycles; k++) {
        if (k % 500 == 0) {
            static const unsigned pv_tab[] = {100, 90, 50, 10, 100, 30};
            static const unsigned pr_tab[] = {100, 10, 50, 90, 50, 100};
            unsigned ph = rng() % 6;
            p_valid = pv_tab[ph]; p_ready = pr_tab[ph];
        }
        if (!pv && rng() % 100 < p_valid) {
            pv = true;
            pd = ((rng() & 0x1f) << 32) | (next++ & 0xffffffff);
        }
        bool rdy = rng() % 100 < p_ready;
        f->in_valid_i = pv; f->in_data_i = pd; f->out_ready_i = rdy;
        f->eval();
        bool exp_in_ready = q.size() < FIFO_DEPTH;
        bool bypass = FIFO_BYPASS && q.empty();
        bool exp_out_valid = bypass ? pv : !q.empty();
        uint64_t exp_out = bypass ? pd : (q.empty() ? 0 : q.front());
        v.check(cyc, "in_ready", exp_in_ready, f->in_ready_o);
        v.check(cyc, "out_valid", exp_out_valid, f->out_valid_o);
        v.check(cyc, "empty", q.empty(), f->empty_o);
        if (exp_out_valid) v.check(cyc, "out_data", exp_out, f->out_data_o);
        bool in_hs = pv && exp_in_ready, out_hs = exp_out_valid && rdy;
        if (out_hs) {
            // end-to-end order: the n-th beat out is the n-th beat in
            v.check(cyc, "beat order", expect_next_out, f->out_data_o & 0xffffffff);
            expect_next_out++;
            out_beats++;
            if (!bypass) q.pop_front();
        }
        if (in_hs) {
            in_beats++;
            if (!(bypass && out_hs)) q.push_back(pd);
            pv = false;
        }
        tick();
        if (v.errors) break;
    }
    printf("%llu beats in, %llu beats out, %llu cycles\n", (unsigned long long)in_beats,
           (unsigned long long)out_beats, (unsigned long long)cyc);
    f->final();
    return v.finish("tb_mesh_fifo");
}
