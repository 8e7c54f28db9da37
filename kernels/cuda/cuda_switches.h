// The DYNSPARSE_CUDA_* environment variables: A/B timing switches of the CUDA
// backend (docs/cuda.md has the table), read when a backend is created.
#ifndef DYNSPARSE_KERNELS_CUDA_CUDA_SWITCHES_H_
#define DYNSPARSE_KERNELS_CUDA_CUDA_SWITCHES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/cuda/cuda_backend_options.h"

namespace dynsparse::cuda {

// Applies the switches in `environment` (entries "NAME=VALUE", as in
// environ) to `options`. A DYNSPARSE_CUDA_ name the backend does not know, or
// a value its switch does not take, is InvalidArgument naming the variable
// and what it accepts: a typo in an A/B run must fail, not time the default.
// PDL, EARLY_LOADS, STORE_PREFETCH, GEMV_BOUNDS, DEEP_MMA and
// WEIGHTS_EVICT_FIRST are read where they apply (DeviceContext, which is made
// from a device id alone) and only checked here.
absl::Status ApplyCudaSwitches(absl::Span<const absl::string_view> environment,
                               CudaBackendOptions* options);

// Each on/off switch that sets an option field, with the value that moves
// the option off its default ("0"; "1" for the options off by default):
// what a test runs to check that every A/B switch computes the same thing.
struct OptionToggle {
  absl::string_view name;   // Without the DYNSPARSE_CUDA_ prefix.
  absl::string_view value;  // "0" or "1".
  // "DYNSPARSE_CUDA_<name>=<value>", as ApplyCudaSwitches takes it.
  std::string Assignment() const;
};
std::vector<OptionToggle> OptionToggles();

// This process's environment, as ApplyCudaSwitches takes it.
std::vector<absl::string_view> ProcessEnvironment();

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_CUDA_SWITCHES_H_
