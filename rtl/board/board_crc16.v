// board_crc16 - one byte of CRC-16/CCITT-FALSE (poly 0x1021, no reflection), combinational.
// The link framing (docs/link.md) checks TYPE..payload with it; the
// initial value 0xffff is the caller's. Matches frm_crc16 in host/driver/frame.c.
`default_nettype none

module board_crc16 (
  input  wire  [15:0] crc_i,   // running CRC before this byte
  input  wire  [7:0]  data_i,  // next byte, MSB first into the register
  output logic [15:0] crc_o    // running CRC after this byte
);
  always_comb begin
    crc_o = crc_i ^ {data_i, 8'h00};
    for (int k = 0; k < 8; k++) begin
      crc_o = crc_o[15] ? ((crc_o << 1) ^ 16'h1021) : (crc_o << 1);
    end
  end
endmodule

`default_nettype wire
