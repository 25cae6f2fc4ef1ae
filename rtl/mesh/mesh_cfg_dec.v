// mesh_cfg_dec: the config beat decoding every config stage shares (mesh_cfgchain,
// mesh_cfgchain_lean, mesh_cfgbus_lean; docs/architecture.md section 6). Combinational, no
// state: the beat's kind and fields, whether it is a write or a read for a PE that the
// stage serves (a chain stage: its own PE; the bus: PEs 0 .. NumPes-1), which of those PEs,
// and whether the router (targets 5 and 9) or the PE's config slave performs it.
// Each stage keeps its own buffer, read handling and handshakes.
`default_nettype none

module mesh_cfg_dec #(
  parameter int unsigned PeIndex = 0,  // the first PE the stage serves (a chain stage: its q)
  parameter int unsigned NumPes = 1    // PEs it serves from PeIndex on: 1 (a chain stage), or
                                       // all of them from 0 (mesh_cfgbus_lean)
) (
  input  wire  [29:0]       hdr_i,      // a beat's {kind, pe, target, addr}
  output wire  [7:0]        pe_o,
  output wire  [3:0]        target_o,
  output wire  [15:0]       addr_o,
  output wire               wr_o,       // a write beat
  output wire               rd_o,       // a read beat
  output wire               bcast_o,    // a write for every PE (pe 0xff)
  output wire  [NumPes-1:0] sel_o,      // PE PeIndex + q is addressed (its pe, or bcast_o)
  output wire               match_o,    // a write or read that a PE served here performs
  output wire               to_router_o,  // targets 5 (route table), 9 (router counters)
  output wire               route_o     // target 5
);
  localparam logic [1:0] KindWrite = 2'd0, KindRead = 2'd1;
  if (NumPes > 1 && PeIndex != 0) begin : g_bad_range
    $error("mesh_cfg_dec: a stage of several PEs serves them from PE 0");
  end

  wire [1:0] kind = hdr_i[29:28];
  assign pe_o = hdr_i[27:20];
  assign target_o = hdr_i[19:16];
  assign addr_o = hdr_i[15:0];
  assign wr_o = (kind == KindWrite);
  assign rd_o = (kind == KindRead);
  assign bcast_o = (pe_o == 8'hff) && wr_o;
  for (genvar q = 0; q < NumPes; q++) begin : g_sel
    assign sel_o[q] = bcast_o || (pe_o == 8'(PeIndex + q));
  end
  // one PE: its number; several (from 0): pe below NumPes, not an OR of NumPes compares
  wire here = (NumPes == 1) ? (pe_o == 8'(PeIndex)) : (32'(pe_o) < NumPes);
  assign match_o = (wr_o || rd_o) && (here || bcast_o);
  assign to_router_o = (target_o == 4'd5) || (target_o == 4'd9);
  assign route_o = (target_o == 4'd5);
endmodule

`default_nettype wire
