#!/usr/bin/env bash
# Run 189 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the one-row GEMVs on one wave
# (GemvVectorWaveKernel, DYNSPARSE_CUDA_GEMV_WAVE=1, off by default).
# 1. The GEMV tests (the wave build against the default bit for bit, x read
#    after the PDL wait, the SASS load-order check).
# 2. The backend's decode tests with the wave build on for the whole run.
# 3. run189_list.txt: prompt-128 decode, wave against default, alternated.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
# Since run 189 ran (34ef976), its row summary moved to decode_rows.py and its
# H200 half, a copy of run188.sh, became a call of it; the backend ctest below
# lacks the staged libraries' LD_LIBRARY_PATH (all 154 failed to load).
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
python3 results/bench/decode_rows.py "$OUT/bench.jsonl"
mv "$OUT/bench.jsonl" "$OUT/bench_wave.jsonl"
mv "$OUT/logs.tgz" "$OUT/logs_wave.tgz"
pack run189_logs.tgz
# On an H200, run 188's list and sparse MLP rounds (it checks the card).
bash results/bench/run188.sh
