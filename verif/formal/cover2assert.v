// cover2assert: techmap for mesh_formal.sh's cover runs on ABC, which reads assertions only:
// each cover(c) becomes assert(!c), so a counterexample to the assertion is a trace that
// reaches the cover. Formal only.
(* techmap_celltype = "$cover" *)
module cover2assert (A, EN);
  input A, EN;
  \$assert _TECHMAP_REPLACE_ (.A(!A), .EN(EN));
endmodule
