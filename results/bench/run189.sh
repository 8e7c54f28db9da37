#!/usr/bin/env bash
# Run 189 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the one-row GEMVs on one wave
# (GemvVectorWaveKernel, DYNSPARSE_CUDA_GEMV_WAVE=1, off by default).
# 1. The GEMV tests (the wave build against the default bit for bit, x read
#    after the PDL wait, the SASS load-order check).
# 2. The backend's decode tests with the wave build on for the whole run.
# 3. run189_list.txt: prompt-128 decode, wave against default, alternated.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test cuda_backend_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run189_list.txt \
  RUN_CTEST="-R Gemv -E ModelSized" bash results/bench/device_run.sh
(cd build-cuda-gpu && DYNSPARSE_CUDA_GEMV_WAVE=1 timeout 90 ctest -L cuda \
  -R CudaBackendTest -j 4 --output-on-failure) >"$OUT/ctest_wave.log" 2>&1
tail -5 "$OUT/ctest_wave.log"
# Everything but the bench lines into one archive (at most 8 files return).
pack() {
  (cd "$OUT" && tar czf "$1" --exclude='*.tgz' --exclude='bench*.jsonl' \
    --remove-files $(ls | grep -v -e '\.tgz$' -e '^bench.*\.jsonl$'))
}
python3 - "$OUT/bench.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    wave = "on one wave" in r.get("backend", "")
    print(f"{r['model']:20s} wave={int(wave)} "
          f"{r['decode_ms_median']:.3f} ms {r['decode_ms_median'] / r['floor_ms']:.3f}x")
PY
mv "$OUT/bench.jsonl" "$OUT/bench_wave.jsonl"
mv "$OUT/logs.tgz" "$OUT/logs_wave.tgz"
pack run189_logs.tgz
source results/bench/require_h200.sh || exit 0
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run188_list.txt \
  RUN_CTEST="-R FusedMlpLaunchPicks" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=1" \
  OPT-66B OPT-175B
exit 0
