// tb_mesh_router: one mesh_router against a C reference model.
//
// Reference model (transaction level, exact on content and order): a wavelet accepted on
// input i with color c must appear exactly once on every output o in route[c] and nowhere
// else, in input order per (i, o) pair; mask 0 drops it and counts err_unrouted. Every
// output beat is compared with the head of the expected queue of the input it names (the
// payload carries input and sequence number). Cycle-level rules checked too: registered
// outputs hold valid/data while stalled, the local output only offers a color whose
// local_color_ready is set, an idle router forwards in the next cycle (1 cycle per hop),
// an unstalled stream moves one wavelet per cycle, counters match the model at the end.
// Fairness: the router's bounded-wait assertions (mesh_router_fair.vh,
// mesh_router_lean_fair.vh) run in every cycle; a failing one is a failed check of this
// bench at its cycle (an arbiter whose pointer does not rotate fails them in the first
// random epoch).
// Stimulus: random route tables (multicast, unrouted colors) per epoch, random valid
// patterns, random back-pressure on every output and random per-color local ready.
// TB_LEAN: the same bench on mesh_router_lean (the board's shared-bus router: registered
// 1-deep input FIFOs and no output registers, so 1 cycle per hop, at most one wavelet every
// other cycle per link, and an output may drop its valid while stalled (the bus moves on);
// the local input has no FIFO: the source holds a wavelet until ready, so the model expects
// its copies from the first cycle it is offered (a multicast copy may leave before ready);
// 16-bit err_unrouted; no per-port counters: counters 0-4 read 0). All five ports exist
// here, so there is no sink.
#ifdef TB_LEAN
#include "Vmesh_router_lean.h"
typedef Vmesh_router_lean Vrouter;
static const unsigned HOP = 1;          // cycles from input accepted to output
static const bool HOLD = false;         // outputs hold valid/data while stalled
static const double MIN_RATE = 0.49;    // sustained wavelets per cycle on one link
static const uint64_t CTR_MASK = 0xffff;       // err_unrouted
static const uint64_t PORT_CTR_MASK = 0;        // wavelets out per port: not kept, read 0
static const int DIRECT = 4;            // the input without a FIFO (the local one)
#else
#include "Vmesh_router.h"
typedef Vmesh_router Vrouter;
static const unsigned HOP = 1;
static const bool HOLD = true;
static const double MIN_RATE = 0.99;
static const uint64_t CTR_MASK = 0xffffffff;
static const uint64_t PORT_CTR_MASK = 0xffffffff;
static const int DIRECT = -1;           // every input has a FIFO
#endif
#include "tb_common.h"
#include <deque>
#include <memory>

static const int W = 37;
static const char *port_name[5] = {"N", "E", "S", "W", "L"};

int main(int argc, char **argv) {
    TbArgs args = tb_parse(argc, argv);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto r = std::make_unique<Vrouter>(ctx.get());
    std::mt19937_64 rng(args.seed);
    TbVerdict v;
    uint64_t cyc = 0;

    tb_asserts_init(ctx.get());
    auto tick = [&]() {
        r->clk_i = 1; r->eval();
        r->clk_i = 0; r->eval();
        tb_asserts_check(ctx.get(), v, cyc);
        cyc++;
    };
    r->clk_i = 0; r->rst_ni = 0; r->in_valid_i = 0; r->out_ready_i = 0; r->loc_ready_i = 0;
    r->rt_we_i = 0; r->ctr_clear_i = 0; r->local_color_ready_i = 0xffff;
    r->eval(); tick(); tick();
    r->rst_ni = 1; r->eval();

    unsigned route[16] = {0};
    std::deque<uint64_t> exp[5][5];           // exp[in][out]
    uint64_t model_cnt[6] = {0};               // per output + unrouted
    uint32_t seq[5] = {0};
    bool pend_v[5] = {false};
    bool pend_seen[5] = {false};               // DIRECT: its copies are expected already
    uint64_t pend_d[5] = {0};
    bool prev_v[4] = {false};
    uint64_t prev_d[4] = {0};
    uint64_t wavelets_in = 0, beats_out = 0;
#ifdef TB_LEAN
    bool rd_pend = false;       // a route table read was requested last cycle
    unsigned rd_color = 0;
#endif

    auto rnd = [&](unsigned n) { return unsigned(rng() % n); };
    auto write_routes = [&](bool random_tab) {
#ifdef TB_LEAN
        rd_pend = false; r->rt_re_i = 0;
#endif
        for (unsigned c = 0; c < 16; c++) {
            unsigned m = random_tab ? rnd(32) : 0;
            if (random_tab && rnd(8) == 0) m = 0;  // unrouted colors
            route[c] = m;
            r->rt_we_i = 1; r->rt_addr_i = c; r->rt_wdata_i = m;
            r->eval(); tick();
        }
        r->rt_we_i = 0; r->eval();
        for (unsigned c = 0; c < 16; c++) v.check(cyc, "route table readback", route[c],
                                                  tb_get(r->rt_o, 5 * c, 5));
#ifdef TB_LEAN
        // the config read port: registered, through the bus's route decoder
        for (unsigned c = 0; c < 16; c++) {
            r->rt_re_i = 1; r->rt_route_i = 1; r->rt_addr_i = c; r->eval(); tick();
            r->rt_re_i = 0; r->eval();
            v.check(cyc, "route table read (rt_rdata_o)", route[c], r->rt_rdata_o);
        }
#endif
    };

    // One simulated cycle with the given stimulus knobs; returns number of output beats.
    auto cycle = [&](unsigned p_valid, unsigned p_ready, unsigned p_cready, bool check_hold) {
        unsigned outs = 0;
        for (int i = 0; i < 5; i++) {
            if (!pend_v[i] && rnd(100) < p_valid) {
                unsigned color = rnd(16);
                pend_d[i] = wv_make(rnd(2), color, (uint32_t(i) << 28) | (seq[i]++ & 0x0fffffff));
                pend_v[i] = true;
            }
            tb_set(r->in_data_i, i * W, W, pend_v[i] ? pend_d[i] : 0);
        }
        unsigned inv = 0;
        for (int i = 0; i < 5; i++) inv |= pend_v[i] << i;
        r->in_valid_i = inv;
        unsigned ordy = 0;
        for (int o = 0; o < 5; o++) ordy |= (rnd(100) < p_ready) << o;
        r->out_ready_i = ordy & 15; r->loc_ready_i = ordy >> 4;
        unsigned cr = 0;
        for (int c = 0; c < 16; c++) cr |= (rnd(100) < p_cready) << c;
        r->local_color_ready_i = cr;
#ifdef TB_LEAN
        // a config read of the route table now and then under traffic: it borrows the route
        // decoder for a cycle (the bus stalls); check the word the cycle after
        if (rd_pend) v.check(cyc, "route table read under traffic", route[rd_color],
                             r->rt_rdata_o);
        rd_pend = rnd(16) == 0;
        rd_color = rnd(16);
        r->rt_re_i = rd_pend; r->rt_route_i = 1; r->rt_addr_i = rd_color;
#endif
        r->eval();
        // inputs accepted this cycle (first: a bypassed wavelet can leave on the local port now)
        // (DIRECT: offered this cycle for the first time; it leaves the source at ready)
        for (int i = 0; i < 5; i++) {
            bool ready = (r->in_ready_o >> i) & 1;
            if (pend_v[i] && !pend_seen[i] && (ready || i == DIRECT)) {
                unsigned m = route[wv_color(pend_d[i])];
                if (getenv("TBDBG")) printf("%llu in %d %llx mask %x\n", (unsigned long long)cyc, i, (unsigned long long)pend_d[i], m);
                if (!m) model_cnt[5]++;
                for (int o = 0; o < 5; o++) if ((m >> o) & 1) exp[i][o].push_back(pend_d[i]);
                pend_seen[i] = true;
                wavelets_in++;
            }
            if (pend_v[i] && ready) pend_v[i] = pend_seen[i] = false;
        }
        // outputs
        for (int o = 0; o < 5; o++) {
            bool ov = o < 4 ? (r->out_valid_o >> o) & 1 : r->loc_valid_o;
            uint64_t od = o < 4 ? tb_get(r->out_data_o, o * W, W) : r->loc_data_o;
            if (o < 4 && HOLD && check_hold && prev_v[o]) {
                v.check(cyc, "registered output holds valid while stalled", 1, ov);
                v.check(cyc, "registered output holds data while stalled", prev_d[o], od);
            }
            if (o == 4 && ov) v.check(cyc, "local output offers only a ready color", 1,
                                      (cr >> wv_color(od)) & 1);
            bool hs = ov && ((ordy >> o) & 1);
            if (o < 4) { prev_v[o] = ov && !hs; prev_d[o] = od; }
            if (!hs) continue;
            outs++;
            beats_out++;
            if (getenv("TBDBG")) printf("%llu out %d %llx\n", (unsigned long long)cyc, o, (unsigned long long)od);
            model_cnt[o]++;
            unsigned src = (od >> 28) & 7;
            if (src > 4) { v.fail(cyc, "output beat from no input", 0, od); continue; }
            char what[64];
            snprintf(what, sizeof what, "output %s beat from input %s", port_name[o],
                     port_name[src]);
            if (exp[src][o].empty()) { v.fail(cyc, what, 0, od); continue; }
            v.check(cyc, what, exp[src][o].front(), od);
            exp[src][o].pop_front();
        }
        tick();
        return outs;
    };

    auto drain = [&]() {
        for (int k = 0; k < 200 * int(HOP); k++) cycle(0, 100, 100, true);
        for (int i = 0; i < 5; i++) for (int o = 0; o < 5; o++) {
            if (!exp[i][o].empty()) {
                char what[64];
                snprintf(what, sizeof what, "lost wavelets %s -> %s", port_name[i], port_name[o]);
                v.fail(cyc, what, 0, exp[i][o].size());
                exp[i][o].clear();
            }
        }
        v.check(cyc, "router idle after drain", 1, r->idle_o);
    };

    // --- directed: latency through an idle router (1 cycle per hop) and sustained rate.
    write_routes(false);
    {
        // color 1: W -> E, color 2: local -> N, color 3: N -> local + S + E (multicast).
        unsigned tab[4] = {0, 0x02, 0x01, 0x16};
        for (unsigned c = 1; c < 4; c++) {
            route[c] = tab[c]; r->rt_we_i = 1; r->rt_addr_i = c; r->rt_wdata_i = tab[c];
            r->eval(); tick();
        }
        r->rt_we_i = 0;
        // single wavelet W -> E: appears on E output the cycle after it is accepted
        r->out_ready_i = 0xf; r->loc_ready_i = 1; r->local_color_ready_i = 0xffff;
        r->in_valid_i = 1 << 3; tb_set(r->in_data_i, 3 * W, W, wv_make(0, 1, 0x30000000));
        r->eval();
        v.check(cyc, "idle router accepts", 1, (r->in_ready_o >> 3) & 1);
        tick(); r->in_valid_i = 0; r->eval();
        for (unsigned k = 1; k < HOP; k++) {
            v.check(cyc, "E output not valid before the hop latency", 0, (r->out_valid_o >> 1) & 1);
            tick();
        }
        v.check(cyc, "E output valid one hop after input", 1, (r->out_valid_o >> 1) & 1);
        v.check(cyc, "E output data", wv_make(0, 1, 0x30000000), tb_get(r->out_data_o, W, W));
        tick();
        // sustained stream: 1000 wavelets W->E with all ready, count cycles
        unsigned sent = 0, got = 0; uint64_t t0 = cyc;
        while (got < 1000 && cyc - t0 < 5000) {
            r->in_valid_i = (sent < 1000) ? (1 << 3) : 0;
            tb_set(r->in_data_i, 3 * W, W, wv_make(0, 1, 0x30000000 | sent));
            r->out_ready_i = 0xf; r->loc_ready_i = 1;
            r->eval();
            if (((r->out_valid_o >> 1) & 1)) {
                v.check(cyc, "stream order", wv_make(0, 1, 0x30000000 | got),
                        tb_get(r->out_data_o, W, W));
                got++;
            }
            if (sent < 1000 && ((r->in_ready_o >> 3) & 1)) sent++;
            tick();
        }
        double rate = 1000.0 / double(cyc - t0 - 1);
        printf("sustained W->E: 1000 wavelets in %llu cycles (%.3f wavelets/cycle)\n",
               (unsigned long long)(cyc - t0 - 1), rate);
        v.check(cyc, "sustained rate", 1, rate > MIN_RATE);
        // multicast with one branch stalled: N -> local + S + E; stall E for 5 cycles
        r->in_valid_i = 1 << 0; tb_set(r->in_data_i, 0, W, wv_make(0, 3, 0x0000abcd));
        r->out_ready_i = 0xf & ~0x02; r->loc_ready_i = 1; r->eval(); tick();
        r->in_valid_i = 0;
        unsigned seenS = 0, seenL = 0, seenE = 0;
        for (int k = 0; k < 8; k++) {
            r->out_ready_i = (k < 5) ? (0xf & ~0x02) : 0xf; r->loc_ready_i = 1;
            r->eval();
            if ((r->out_valid_o >> 2) & 1) seenS++;
            if (((r->out_valid_o >> 1) & 1) && k >= 5) seenE++;
            if (r->loc_valid_o) seenL++;
            tick();
        }
        // local was offered in the accept cycle (unregistered), so count it separately
        v.check(cyc, "multicast S copy exactly once", 1, seenS);
        v.check(cyc, "multicast E copy exactly once after stall", 1, seenE);
        (void)seenL;
        for (int k = 0; k < 5; k++) { r->out_ready_i = 0xf; r->loc_ready_i = 1; r->eval(); tick(); }
        for (int k = 0; k < 6; k++) model_cnt[k] = 0;
        r->ctr_clear_i = 1; r->eval(); tick(); r->ctr_clear_i = 0; r->eval();
    }

    // --- random epochs
    unsigned epochs = 0;
    uint64_t end = cyc + args.cycles;
    while (cyc < end) {
        write_routes(true);
        unsigned p_valid = 20 + rnd(81), p_ready = 30 + rnd(71), p_cready = 30 + rnd(71);
        if (rnd(4) == 0) { p_ready = 100; p_cready = 100; }
        unsigned len = 500 + rnd(1500);
        for (unsigned k = 0; k < len; k++) cycle(p_valid, p_ready, p_cready, true);
        // stop injecting, drain
        for (unsigned t = 0; pend_v[0] || pend_v[1] || pend_v[2] || pend_v[3] || pend_v[4]; t++) {
            if (t > 1000) { v.fail(cyc, "timeout: inputs not accepted (router hung)", 0, 1); break; }
            cycle(0, 100, 100, true);
        }
        drain();
        epochs++;
        if (v.errors) break;
    }
    // counters against the model
    for (unsigned k = 0; k < 6; k++) {
        char what[48];
        snprintf(what, sizeof what, "counter %u", k);
#ifdef TB_LEAN
        r->rt_re_i = 1; r->rt_route_i = 0; r->rt_addr_i = k; r->eval(); tick();
        r->rt_re_i = 0; r->eval();
        v.check(cyc, what, model_cnt[k] & (k == 5 ? CTR_MASK : PORT_CTR_MASK), r->rt_rdata_o);
        v.check(cyc, "no read, rt_rdata_o 0", 0, (tick(), r->rt_rdata_o));
#else
        r->ctr_addr_i = k; r->eval();
        v.check(cyc, what, model_cnt[k] & CTR_MASK, r->ctr_rdata_o);
#endif
    }
    printf("%u epochs, %llu wavelets in, %llu beats out, %llu dropped, %llu cycles\n", epochs,
           (unsigned long long)wavelets_in, (unsigned long long)beats_out,
           (unsigned long long)model_cnt[5], (unsigned long long)cyc);
    r->final();
    return v.finish("tb_mesh_router");
}
