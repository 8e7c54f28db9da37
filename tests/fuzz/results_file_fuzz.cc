// A harness results file (results.jsonl) as `dynsparse run` resumes from it
// and `dynsparse report` reads it: torn, damaged or hostile lines.
#include <cstddef>
#include <cstdint>

#include "experiments/harness/results_log.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int dropped = 0;
  (void)dynsparse::ReadResultsFile(
      dynsparse::fuzz::WriteScratchFile("results.jsonl",
                                        dynsparse::fuzz::AsText(data, size)),
      &dropped);
  return 0;
}
