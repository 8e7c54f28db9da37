#include "core/graph/token_profile.h"

namespace dynsparse {

int TokenProfile::Bucket(int64_t rows) {
  if (rows <= 1) return 0;
  if (rows <= 8) return 1;
  if (rows <= 64) return 2;
  if (rows < 256) return 3;
  return 4;
}

const char* TokenProfile::BucketName(int bucket) {
  static constexpr const char* kNames[kBuckets] = {"1", "2-8", "9-64", "65-255",
                                                   "256+"};
  return bucket >= 0 && bucket < kBuckets ? kNames[bucket] : "?";
}

}  // namespace dynsparse
