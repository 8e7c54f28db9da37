// YAML experiment configs: the YAML reader, then schema validation against
// the real method and metric tables (what `dynsparse run` does after
// includes and --set are applied).
#include <cstddef>
#include <cstdint>
#include <string>

#include "experiments/harness/config.h"
#include "experiments/harness/yaml_json.h"
#include "experiments/metrics/registry.h"
#include "methods/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto tree = dynsparse::ParseYaml(text, "fuzz.yaml");
  if (!tree.ok()) return 0;
  (void)dynsparse::ToYaml(*tree);
  const dynsparse::ConfigTables tables{dynsparse::MethodRegistry(),
                                       dynsparse::MetricRegistry()};
  (void)dynsparse::ParseExperimentConfig(*tree, tables);
  return 0;
}
