#!/usr/bin/env bash
# ptxas_regs.sh LOG: one line per kernel of a `ptxas -v` log, demangled and
# sorted: "name registers spill-store-bytes" (for diffing two builds).
awk '/Compiling entry function/ {
       match($0, /'"'"'[^'"'"']+'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2)
     }
     /spill stores/ { s = $5 }
     /Used [0-9]+ registers/ { print k, $5, s }' "$1" | c++filt |
  sed 's/_GLOBAL__N__[0-9a-f_]*//' | sort
