// Zero-shot task files in every format a loader reads: the first byte picks
// the loader, the rest is the file (PIQA's labels file is the part after the
// first NUL, written beside it as valid-labels.lst).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "datasets/tasks/jsonl.h"
#include "datasets/tasks/loaders.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dynsparse;
  if (size == 0) return 0;
  const int which = data[0] % 9;
  std::string_view body = fuzz::AsText(data + 1, size - 1);
  if (which == 0) {
    const size_t nul = body.find('\0');
    const std::string_view labels =
        nul == std::string_view::npos ? "" : body.substr(nul + 1);
    fuzz::WriteScratchFile("valid-labels.lst", labels);
    (void)LoadPiqa(fuzz::WriteScratchFile("valid.jsonl", body.substr(0, nul)));
    return 0;
  }
  const std::string path = fuzz::WriteScratchFile("task.jsonl", body);
  switch (which) {
    case 1:
      (void)LoadHellaswag(fuzz::WriteScratchFile("hellaswag.txt", body));
      break;
    case 2:
      (void)LoadFoundryChoices(path, "Passage: ", "\nAnswer:");
      break;
    case 3:
      (void)LoadFoundryCopa(path);
      break;
    case 4:
      (void)LoadFoundryPartial(path, /*wsc273_spacing=*/true);
      break;
    case 5:
      (void)LoadFoundryLambada(path);
      break;
    case 6:
      (void)LoadSuperGlueRte(path);
      break;
    case 7:
      (void)LoadSuperGlueWsc(path);
      break;
    default:
      (void)ReadJsonl(path);
  }
  return 0;
}
