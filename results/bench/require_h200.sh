# Sourced by the run scripts whose issue targets are set on an H200, as
# `source results/bench/require_h200.sh || exit 0`: on any other card it
# prints the card and returns 1, so the script stops without timing.
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200, skipped:"
  nvidia-smi -L
  return 1
fi
