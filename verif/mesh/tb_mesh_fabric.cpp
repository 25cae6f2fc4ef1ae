// tb_mesh_fabric: a Rows x Cols mesh_fabric (shape fixed at build time: -DROWS -DCOLS)
// against a C model of static per-color routing.
//
// Model: for a wavelet entering router q with color c, walk the route tables (mask per
// router and color) to get the exact set of local ports (and the host link) that must
// receive it, and the count every router output port and err_unrouted counter must show.
// Checks: every delivered wavelet belongs to that set; per (source, color) stream every
// destination sees sequence numbers 0, 1, 2, ... with no gap, duplicate or reorder; at the
// end of a phase every stream is complete at every destination, the fabric is idle and all
// router counters equal the model. The local port only offers colors whose ready is set.
// Phases: all-to-all unicast (per-color XY routes to up to 16 destinations per phase,
// rotating until every PE was a destination), multicast storms (per-color broadcast trees
// from random roots, unrouted colors), random stalls at every local port and at the host.
// Measurements: sustained rate of a host broadcast to every PE and of a straight row
// stream, and the latency of one wavelet across the mesh (cycles per hop).
#include "Vmesh_fabric.h"
#include "tb_common.h"
#include <memory>
#include <vector>
#include <set>
#include <map>

#ifndef ROWS
#define ROWS 2
#endif
#ifndef COLS
#define COLS 2
#endif
static const int R = ROWS, C = COLS, P = ROWS * COLS, W = 37;
static const int HOST = P;  // index of the host link as a source/destination

struct Tb {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vmesh_fabric> m;
    std::mt19937_64 rng;
    TbVerdict v;
    uint64_t cyc = 0;
    unsigned rt[P][16];
    uint64_t model_ctr[P][6];
    // streams: (src, color) -> sent count; destinations set; per (dest, src, color) next seq
    uint32_t sent[P + 1][16];
    std::vector<std::set<int>> dests;      // index src*16+color
    std::vector<uint32_t> next_seq;        // index (dst*(P+1)+src)*16+color
    // pending injections (valid/ready: hold until accepted)
    bool pv[P + 1];
    uint64_t pd[P + 1];
    uint64_t delivered = 0, injected = 0;
    unsigned rnd(unsigned n) { return unsigned(rng() % n); }

    Tb(int argc, char **argv, uint64_t seed) : rng(seed) {
        ctx = std::make_unique<VerilatedContext>();
        ctx->commandArgs(argc, argv);
        tb_asserts_init(ctx.get());
        m = std::make_unique<Vmesh_fabric>(ctx.get());
        dests.resize((P + 1) * 16);
        next_seq.assign((P + 1) * (P + 1) * 16, 0);
    }
    void tick() {
        m->clk_i = 1; m->eval(); m->clk_i = 0; m->eval();
        tb_asserts_check(ctx.get(), v, cyc);
        cyc++;
    }

    // route walk: deliveries and counter increments of one wavelet entering router q
    void walk(int q, unsigned color, std::set<int> *dst, bool count) {
        int steps = 0;
        std::vector<int> work{q};
        while (!work.empty()) {
            int x = work.back(); work.pop_back();
            if (++steps > 4 * P + 8) { v.fail(cyc, "route table loops (bench bug)", 0, 1); return; }
            unsigned mk = rt[x][color];
            int r = x / C, c = x % C;
            if (!mk) { if (count) model_ctr[x][5]++; continue; }
            for (int p = 0; p < 5; p++) {
                if (!((mk >> p) & 1)) continue;
                if (count) model_ctr[x][p]++;
                if (p == 4) { if (dst) dst->insert(x); continue; }
                int nr = r + (p == 2) - (p == 0), nc = c + (p == 1) - (p == 3);
                if (nr < 0 || nr >= R || nc < 0 || nc >= C) {
                    if (x == 0 && p == 3 && dst) dst->insert(HOST);  // host link
                    continue;                                         // off the edge: dropped
                }
                work.push_back(nr * C + nc);
            }
        }
    }

    void write_routes() {
        for (unsigned c = 0; c < 16; c++) {
            for (int q = 0; q < P; q++) {
                tb_set(m->rt_we_i, 0, P, 0);
                tb_set(m->rt_we_i, q, 1, 1);
                m->rt_addr_i = c; m->rt_wdata_i = rt[q][c];
                m->eval(); tick();
            }
        }
        tb_set(m->rt_we_i, 0, P, 0); m->eval();
        // streams start over with the new routes
        for (int s = 0; s <= P; s++) for (int c = 0; c < 16; c++) {
            sent[s][c] = 0;
            dests[s * 16 + c].clear();
            walk(s == HOST ? 0 : s, c, &dests[s * 16 + c], false);
        }
        std::fill(next_seq.begin(), next_seq.end(), 0);
        for (int q = 0; q < P; q++) for (int k = 0; k < 6; k++) model_ctr[q][k] = 0;
        m->ctr_clear_i = 1; m->eval(); tick(); m->ctr_clear_i = 0; m->eval();
    }

    // XY route toward d for every router
    void route_unicast(unsigned color, int d) {
        int dr = d / C, dc = d % C;
        for (int q = 0; q < P; q++) {
            int r = q / C, c = q % C;
            unsigned mk;
            if (c < dc) mk = 1u << 1;
            else if (c > dc) mk = 1u << 3;
            else if (r < dr) mk = 1u << 2;
            else if (r > dr) mk = 1u << 0;
            else mk = 1u << 4;
            rt[q][color] = mk;
        }
    }
    // broadcast tree from root: along the root's row both ways, then up and down columns
    void route_bcast(unsigned color, int root, bool to_host) {
        int rr = root / C, rc = root % C;
        for (int q = 0; q < P; q++) {
            int r = q / C, c = q % C;
            unsigned mk = 1u << 4;
            if (r == rr) {
                mk |= (1u << 0) | (1u << 2);
                if (c >= rc) mk |= 1u << 1;
                if (c <= rc) mk |= 1u << 3;
            } else if (r < rr) mk |= 1u << 0;
            else mk |= 1u << 2;
            // keep off-edge bits out (they would only be dropped), except the host link
            if (r == 0) mk &= ~1u;
            if (r == R - 1) mk &= ~(1u << 2);
            if (c == C - 1) mk &= ~(1u << 1);
            if (c == 0 && !(q == 0 && to_host)) mk &= ~(1u << 3);
            rt[q][color] = mk;
        }
    }

    // One cycle of random traffic. p_inj: injection probability per source (percent),
    // colors: allowed colors mask, p_ready / p_cready: local stalls.
    void cycle(unsigned p_inj, unsigned colors, unsigned p_ready, unsigned p_cready,
               bool host_src) {
        for (int s = 0; s <= P; s++) {
            if (s == HOST && !host_src) continue;
            if (!pv[s] && p_inj && rnd(100) < p_inj && colors) {
                unsigned c;
                do c = rnd(16); while (!((colors >> c) & 1));
                pd[s] = wv_make(rnd(2), c, (uint32_t(s) << 24) | (sent[s][c]++ & 0xffffff));
                pv[s] = true;
            }
        }
        for (int q = 0; q < P; q++) {
            tb_set(m->loc_in_valid_i, q, 1, pv[q]);
            tb_set(m->loc_in_data_i, q * W, W, pv[q] ? pd[q] : 0);
            tb_set(m->loc_out_ready_i, q, 1, rnd(100) < p_ready);
            for (int c = 0; c < 16; c++) tb_set(m->loc_color_ready_i, q * 16 + c, 1, rnd(100) < p_cready);
        }
        m->host_in_valid_i = pv[HOST];
        m->host_in_data_i = pv[HOST] ? pd[HOST] : 0;
        m->host_out_ready_i = rnd(100) < p_ready;
        m->eval();
        // accepted injections (before deliveries: a wavelet can cross one router and be
        // delivered to its own local port in the cycle it enters)
        for (int s = 0; s <= P; s++) {
            bool rdy = s == HOST ? m->host_in_ready_o : tb_get(m->loc_in_ready_o, s, 1);
            if (pv[s] && rdy) {
                walk(s == HOST ? 0 : s, wv_color(pd[s]), nullptr, true);
                pv[s] = false;
                injected++;
            }
        }
        for (int d = 0; d <= P; d++) {
            bool ov, rdy;
            uint64_t od;
            if (d == HOST) { ov = m->host_out_valid_o; rdy = m->host_out_ready_i; od = m->host_out_data_o; }
            else {
                ov = tb_get(m->loc_out_valid_o, d, 1);
                rdy = tb_get(m->loc_out_ready_i, d, 1);
                od = tb_get(m->loc_out_data_o, d * W, W);
                if (ov) v.check(cyc, "local port offers only a ready color", 1,
                                tb_get(m->loc_color_ready_i, d * 16 + wv_color(od), 1));
            }
            if (!(ov && rdy)) continue;
            delivered++;
            unsigned s = (od >> 24) & 0xff, c = wv_color(od), sq = od & 0xffffff;
            if (s > (unsigned)P) { v.fail(cyc, "delivered wavelet from no source", 0, od); continue; }
            if (!dests[s * 16 + c].count(d)) {
                char what[96];
                snprintf(what, sizeof what, "wavelet src %u color %u delivered at %d off its route", s, c, d);
                v.fail(cyc, what, 0, od);
                continue;
            }
            uint32_t &ns = next_seq[(d * (P + 1) + s) * 16 + c];
            char what[96];
            snprintf(what, sizeof what, "seq of src %u color %u at dest %d", s, c, d);
            v.check(cyc, what, ns, sq);
            ns = sq + 1;
        }
        tick();
    }

    void drain_and_check(const char *phase) {
        for (unsigned t = 0; pv[0] || true; t++) {
            bool any = false;
            for (int s = 0; s <= P; s++) any |= pv[s];
            if (!any) break;
            if (t > 10000) { v.fail(cyc, "timeout: injections not accepted", 0, 1); return; }
            cycle(0, 0, 100, 100, true);
        }
        for (int k = 0; k < 4 * (R + C) + 20; k++) cycle(0, 0, 100, 100, true);
        v.check(cyc, "fabric idle after drain", 1, m->idle_o);
        uint64_t lost = 0;
        for (int s = 0; s <= P; s++) for (int c = 0; c < 16; c++) for (int d : dests[s * 16 + c]) {
            uint32_t got = next_seq[(d * (P + 1) + s) * 16 + c];
            if (got != sent[s][c]) {
                if (!lost) {
                    char what[96];
                    snprintf(what, sizeof what, "%s: wavelets of src %d color %d at dest %d", phase, s, c, d);
                    v.fail(cyc, what, sent[s][c], got);
                }
                lost++;
            }
        }
        v.checks++;
        for (unsigned k = 0; k < 6; k++) {
            m->ctr_addr_i = k; m->eval();
            for (int q = 0; q < P; q++) {
                char what[64];
                snprintf(what, sizeof what, "%s: router %d counter %u", phase, q, k);
                v.check(cyc, what, model_ctr[q][k] & 0xffffffff, tb_get(m->ctr_rdata_o, q * 32, 32));
            }
        }
    }
};

int main(int argc, char **argv) {
    TbArgs args = tb_parse(argc, argv);
    char shape[16];
    snprintf(shape, sizeof shape, "%dx%d", R, C);
    if (!args.shape.empty() && args.shape != shape) {
        fprintf(stderr, "this binary is built for %s, not %s\n", shape, args.shape.c_str());
        return 2;
    }
    printf("mesh_fabric %s\n", shape);
    Tb t(argc, argv, args.seed);
    auto &m = t.m;
    m->clk_i = 0; m->rst_ni = 0; m->eval(); t.tick(); t.tick(); m->rst_ni = 1; m->eval();
    for (int s = 0; s <= P; s++) t.pv[s] = false;

    // ---- measurements: host broadcast to every PE, row stream, latency
    for (int q = 0; q < P; q++) for (int c = 0; c < 16; c++) t.rt[q][c] = 0;
    t.route_bcast(0, 0, false);
    if (C > 1) t.route_unicast(1, C - 1);  // row 0 stream (0,0) -> (0,C-1)
    else t.route_unicast(1, P - 1);
    t.route_unicast(2, P - 1);             // corner to corner
    t.write_routes();
    {
        // host broadcasts N wavelets on color 0 with nothing stalled; rate at each PE
        const unsigned N = 2000;
        unsigned sent = 0;
        std::vector<unsigned> got(P, 0);
        std::vector<uint64_t> first(P, 0), last(P, 0);
        uint64_t t0 = t.cyc;
        while (t.cyc - t0 < 20 * N) {
            m->host_in_valid_i = sent < N;
            m->host_in_data_i = wv_make(0, 0, (uint32_t(HOST) << 24) | sent);
            tb_set(m->loc_in_valid_i, 0, P, 0);
            tb_set(m->loc_out_ready_i, 0, P, ~0ull);
            for (int q = 0; q < P; q++) tb_set(m->loc_color_ready_i, q * 16, 16, 0xffff);
            m->eval();
            bool done = true;
            for (int q = 0; q < P; q++) {
                if (tb_get(m->loc_out_valid_o, q, 1)) {
                    uint64_t od = tb_get(m->loc_out_data_o, q * W, W);
                    t.v.check(t.cyc, "broadcast order", got[q], od & 0xffffff);
                    if (!got[q]) first[q] = t.cyc;
                    last[q] = t.cyc;
                    got[q]++;
                }
                done &= got[q] == N;
            }
            if (sent < N && m->host_in_ready_o) sent++;
            t.tick();
            if (done) break;
        }
        double worst = 1e9;
        for (int q = 0; q < P; q++) {
            t.v.check(t.cyc, "broadcast wavelets at every PE", N, got[q]);
            double rate = double(got[q]) / double(last[q] - first[q] + 1);
            if (rate < worst) worst = rate;
        }
        printf("host broadcast: %u wavelets to %d PEs in %llu cycles; slowest PE %.3f wavelets/cycle\n",
               N, P, (unsigned long long)(t.cyc - t0), worst);
        t.v.check(t.cyc, "broadcast sustains 1 wavelet/cycle/link", 1, worst > 0.99);
        for (int k = 0; k < 10; k++) t.tick();

        // latency: one wavelet (0,0) -> (R-1,C-1), idle mesh
        int hops = (R - 1) + (C - 1);
        m->host_in_valid_i = 0;
        tb_set(m->loc_in_valid_i, 0, 1, 1);
        tb_set(m->loc_in_data_i, 0, W, wv_make(0, 2, 0x00abcdef));
        m->eval();
        t.v.check(t.cyc, "idle router accepts", 1, tb_get(m->loc_in_ready_o, 0, 1));
        uint64_t tin = t.cyc, tout = 0;
        for (int k = 0; k < 4 * (R + C) + 4; k++) {
            if (k) { tb_set(m->loc_in_valid_i, 0, 1, 0); m->eval(); }
            if (tb_get(m->loc_out_valid_o, P - 1, 1)) {
                t.v.check(t.cyc, "latency wavelet data", wv_make(0, 2, 0x00abcdef),
                          tb_get(m->loc_out_data_o, (P - 1) * W, W));
                tout = t.cyc;
                break;
            }
            t.tick();
        }
        unsigned lat = unsigned(tout - tin);
        printf("latency (0,0) -> (%d,%d): %d hops, %u cycles from injection to delivery (%.2f cycles/hop)\n",
               R - 1, C - 1, hops, lat, hops ? double(lat) / hops : 0.0);
        t.v.check(t.cyc, "1 cycle per hop", hops, lat);
        for (int k = 0; k < 10; k++) t.tick();
    }

    // ---- random phases
    uint64_t end = t.cyc + args.cycles;
    int phase = 0, ucast_base = 0, a2a_rounds = 0;
    while ((t.cyc < end || ucast_base < P) && !t.v.errors) {
        char name[64];
        for (int q = 0; q < P; q++) for (int c = 0; c < 16; c++) t.rt[q][c] = 0;
        unsigned colors = 0;
        bool unicast = (phase % 2 == 0) || ucast_base < P;
        if (unicast) {
            // all-to-all: destinations ucast_base .. ucast_base+15 on colors 0..15
            int n = std::min(16, P - (ucast_base % P));
            for (int k = 0; k < n; k++) { t.route_unicast(k, (ucast_base + k) % P); colors |= 1u << k; }
            snprintf(name, sizeof name, "unicast to PEs %d..%d", ucast_base % P, ucast_base % P + n - 1);
            ucast_base += n;
            if (ucast_base >= P) a2a_rounds++;
        } else {
            // multicast storm: broadcast trees from random roots, a few unrouted colors
            for (unsigned c = 0; c < 16; c++) {
                if (t.rnd(6) == 0) { colors |= 1u << c; continue; }  // unrouted everywhere
                t.route_bcast(c, t.rnd(P), t.rnd(2));
                colors |= 1u << c;
            }
            snprintf(name, sizeof name, "multicast storm");
        }
        t.write_routes();
        unsigned p_inj = 10 + t.rnd(91), p_ready = 20 + t.rnd(81), p_cready = 20 + t.rnd(81);
        if (t.rnd(4) == 0) { p_ready = 100; p_cready = 100; }
        unsigned len = 1000 + t.rnd(2000);
        uint64_t d0 = t.delivered, i0 = t.injected;
        for (unsigned k = 0; k < len; k++) t.cycle(p_inj, colors, p_ready, p_cready, true);
        t.drain_and_check(name);
        printf("phase %d (%s): inj %u%% ready %u%% cready %u%%: %llu injected, %llu delivered\n",
               phase, name, p_inj, p_ready, p_cready, (unsigned long long)(t.injected - i0),
               (unsigned long long)(t.delivered - d0));
        phase++;
    }
    printf("%s: %d phases, %d all-to-all rounds, %llu wavelets injected, %llu delivered, %llu cycles\n",
           shape, phase, a2a_rounds, (unsigned long long)t.injected, (unsigned long long)t.delivered,
           (unsigned long long)t.cyc);
    m->final();
    return t.v.finish("tb_mesh_fabric");
}
