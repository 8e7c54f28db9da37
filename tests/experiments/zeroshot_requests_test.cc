// Every registered task's requests (0- and 2-shot) equal those of the Python
// re-implementation of lm-eval (tools/parity/lm_eval_reference.py requests,
// committed as tests/fixtures/zeroshot/requests.json).
#include <fstream>

#include "datasets/tasks/python_random.h"
#include "datasets/tasks/task.h"
#include "experiments/metrics/zeroshot.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

nlohmann::json Fixture() {
  std::ifstream in(testing::FixturePath("zeroshot/requests.json"));
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

TEST(PythonRandomTest, SampleMatchesCPython) {
  const nlohmann::json f = Fixture()["python_random_1234"]["sample"];
  ASSERT_GT(f.size(), 0u);
  PythonRandom rng(1234);  // One generator across calls, like the script.
  for (const auto& c : f) {
    EXPECT_EQ(rng.Sample(c[0].get<int64_t>(), c[1].get<int64_t>()),
              c[2].get<std::vector<int64_t>>())
        << "sample(range(" << c[0] << "), " << c[1] << ")";
  }
}

TEST(ZeroshotRequestsTest, EveryTaskMatchesTheLmEvalReimplementation) {
  DS_REQUIRE_DATA();
  const nlohmann::json f = Fixture();
  const int64_t limit = f["limit"].get<int64_t>();
  for (const auto& [name, want] : f["tasks"].items()) {
    SCOPED_TRACE(name);
    auto task = FindTask(name);
    ASSERT_TRUE(task.ok()) << task.status();
    auto docs = LoadTaskDocs(**task);
    ASSERT_TRUE(docs.ok()) << docs.status();
    EXPECT_EQ(static_cast<int64_t>(docs->size()), want["docs"].get<int64_t>());
    for (const auto& [shots, key] : {std::pair{0, "0shot"}, {2, "2shot"}}) {
      PythonRandom rng(f["seed"].get<uint32_t>());
      for (int64_t d = 0; d < limit; ++d) {
        const auto reqs = BuildRequests(**task, *docs, d, shots, &rng);
        const auto& w = want[key][d];
        ASSERT_EQ(reqs.size(), w.size()) << key << " doc " << d;
        for (size_t r = 0; r < reqs.size(); ++r) {
          EXPECT_EQ(reqs[r].context, w[r][0].get<std::string>())
              << key << " doc " << d << " request " << r;
          EXPECT_EQ(reqs[r].continuation, w[r][1].get<std::string>())
              << key << " doc " << d << " request " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace dynsparse
