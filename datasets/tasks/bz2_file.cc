// ReadMaybeBz2: bzip2 support is optional at build time (DYNSPARSE_HAVE_BZIP2)
// so machines without libbz2-dev still build everything else.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "datasets/tasks/loaders.h"
#include "datasets/text_file.h"

#ifdef DYNSPARSE_HAVE_BZIP2
#include <bzlib.h>
#endif

namespace dynsparse {

absl::StatusOr<std::string> ReadMaybeBz2(const std::string& path) {
  if (!absl::EndsWith(path, ".bz2")) return ReadTextFile(path);
#ifndef DYNSPARSE_HAVE_BZIP2
  return absl::UnimplementedError(absl::StrCat(
      path,
      ": built without libbz2 (install libbz2-dev, tools/install_deps.sh, "
      "and re-run cmake), or decompress the file and point at the .txt"));
#else
  auto packed = ReadSmallFile(path, int64_t{256} << 20);
  if (!packed.ok()) return packed.status();
  bz_stream strm{};
  if (BZ2_bzDecompressInit(&strm, 0, 0) != BZ_OK) {
    return absl::InternalError(absl::StrCat(path, ": bzip2 init failed"));
  }
  std::string out;
  std::string chunk(1 << 20, '\0');
  strm.next_in = packed->data();
  strm.avail_in = static_cast<unsigned>(packed->size());
  int rc = BZ_OK;
  while (rc == BZ_OK) {
    strm.next_out = chunk.data();
    strm.avail_out = static_cast<unsigned>(chunk.size());
    rc = BZ2_bzDecompress(&strm);
    out.append(chunk.data(), chunk.size() - strm.avail_out);
    if (rc == BZ_OK && strm.avail_in == 0 && strm.avail_out != 0) break;
    if (out.size() > (size_t{1} << 30)) break;
  }
  BZ2_bzDecompressEnd(&strm);
  if (rc != BZ_STREAM_END) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a complete bzip2 stream (bzlib code ", rc, ")"));
  }
  return out;
#endif
}

}  // namespace dynsparse
