#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/io/llama2c_format.h"
#include "core/io/model_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/io/reference_llama.h"
#include "tests/io/temp_dir.h"
#include "tests/test_paths.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::TempDir;
using ::dynsparse::testing::WriteFileOrDie;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string MessageOf(const absl::Status& status) {
  return std::string(status.message());
}

struct Dims {
  int32_t dim = 8, hidden = 12, layers = 2, heads = 2, kv_heads = 1, vocab = 10,
          seq_len = 4;
  bool shared = true;
};

// A legacy llama2.c file whose array number a holds a * 1000 + i at index i
// (exact in f32), with the arrays' values kept for checking.
struct SyntheticFile {
  std::string bytes;
  std::map<std::string, std::vector<float>> arrays;

  // Row `row` of layer `layer` of an array of per-layer [rows, cols] blocks.
  std::vector<float> Row(const std::string& name, int layer, int rows, int cols,
                         int row) const {
    const float* p = arrays.at(name).data() + (layer * rows + row) * cols;
    return std::vector<float>(p, p + cols);
  }
};

SyntheticFile MakeFile(const Dims& d) {
  const int32_t header[7] = {d.dim,      d.hidden,
                             d.layers,   d.heads,
                             d.kv_heads, d.shared ? d.vocab : -d.vocab,
                             d.seq_len};
  const int kv_dim = d.dim / d.heads * d.kv_heads;
  const int half = d.dim / d.heads / 2;
  const std::vector<std::pair<std::string, int>> layout = {
      {"token_embedding", d.vocab * d.dim},
      {"rms_att", d.layers * d.dim},
      {"wq", d.layers * d.dim * d.dim},
      {"wk", d.layers * kv_dim * d.dim},
      {"wv", d.layers * kv_dim * d.dim},
      {"wo", d.layers * d.dim * d.dim},
      {"rms_ffn", d.layers * d.dim},
      {"w1", d.layers * d.hidden * d.dim},
      {"w2", d.layers * d.dim * d.hidden},
      {"w3", d.layers * d.hidden * d.dim},
      {"rms_final", d.dim},
      {"freq_cis_real", d.seq_len * half},
      {"freq_cis_imag", d.seq_len * half},
      {"wcls", d.shared ? 0 : d.vocab * d.dim},
  };
  SyntheticFile file;
  file.bytes.assign(reinterpret_cast<const char*>(header), sizeof(header));
  for (size_t a = 0; a < layout.size(); ++a) {
    std::vector<float> values(layout[a].second);
    for (size_t i = 0; i < values.size(); ++i) values[i] = a * 1000.0f + i;
    file.bytes.append(reinterpret_cast<const char*>(values.data()),
                      values.size() * sizeof(float));
    file.arrays[layout[a].first] = std::move(values);
  }
  return file;
}

std::vector<float> Row(const Tensor& t, int row) {
  const std::vector<float> all = t.ToF32Vector();
  const int64_t cols = t.dim(1);
  return std::vector<float>(all.begin() + row * cols,
                            all.begin() + (row + 1) * cols);
}

class Llama2cTest : public ::testing::Test {
 protected:
  absl::StatusOr<LoadedModel> Load(const std::string& bytes,
                                   DType dtype = DType::kF32) {
    WriteFileOrDie(path_, bytes);
    return LoadLlama2cModel(path_, LoadOptions{dtype});
  }
  // The load error, which must name the file.
  std::string ErrorOf(const std::string& bytes) {
    absl::StatusOr<LoadedModel> model = Load(bytes);
    EXPECT_FALSE(model.ok());
    const std::string message = MessageOf(model.status());
    EXPECT_THAT(message, HasSubstr("model.bin: "));
    return message;
  }
  static std::string WithHeaderField(std::string bytes, int field,
                                     int32_t value) {
    std::memcpy(bytes.data() + field * sizeof(int32_t), &value, sizeof(value));
    return bytes;
  }

  TempDir dir_;
  const std::string path_ = dir_.File("model.bin");
};

TEST_F(Llama2cTest, HeaderBecomesALlamaConfig) {
  absl::StatusOr<LoadedModel> model = Load(MakeFile({}).bytes);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.architecture, "llama2.c");
  EXPECT_EQ(c.family, ModelFamily::kLlama);
  EXPECT_EQ(c.hidden_size, 8);
  EXPECT_EQ(c.intermediate_size, 12);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_EQ(c.max_position_embeddings, 4);
  EXPECT_TRUE(c.gated_mlp);
  EXPECT_EQ(c.activation, Activation::kSilu);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(2));
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias);
  EXPECT_EQ(model->source, path_);
  EXPECT_EQ(model->checkpoint_bytes,
            static_cast<int64_t>(MakeFile({}).bytes.size()) - 28);
}

TEST_F(Llama2cTest, ArraysLandInHfSlots) {
  const SyntheticFile file = MakeFile({});
  absl::StatusOr<LoadedModel> model = Load(file.bytes);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelWeights& w = model->weights;
  EXPECT_EQ(w.tok_embed.ToF32Vector(), file.arrays.at("token_embedding"));
  EXPECT_EQ(w.tok_embed.shape(), (Shape{10, 8}));
  EXPECT_EQ(w.final_norm_w.ToF32Vector(), file.arrays.at("rms_final"));
  EXPECT_EQ(w.lm_head.raw_data(), w.tok_embed.raw_data());  // Shared.
  ASSERT_EQ(w.layers.size(), 2u);
  const LayerWeights& l = w.layers[1];
  EXPECT_EQ(l.attn_norm_w.ToF32Vector(), file.Row("rms_att", 1, 1, 8, 0));
  EXPECT_EQ(l.mlp_norm_w.ToF32Vector(), file.Row("rms_ffn", 1, 1, 8, 0));
  EXPECT_EQ(l.wv.shape(), (Shape{4, 8}));
  EXPECT_EQ(Row(l.wv, 3), file.Row("wv", 1, 4, 8, 3));
  EXPECT_EQ(Row(l.wo, 5), file.Row("wo", 1, 8, 8, 5));
  // w1 = gate, w3 = up, w2 = down.
  EXPECT_EQ(l.w_gate.shape(), (Shape{12, 8}));
  EXPECT_EQ(Row(l.w_gate, 7), file.Row("w1", 1, 12, 8, 7));
  EXPECT_EQ(Row(l.w_up, 7), file.Row("w3", 1, 12, 8, 7));
  EXPECT_EQ(l.w_down.shape(), (Shape{8, 12}));
  EXPECT_EQ(Row(l.w_down, 2), file.Row("w2", 1, 8, 12, 2));
  EXPECT_TRUE(l.bq.empty() && l.attn_norm_b.empty());
}

TEST_F(Llama2cTest, QueryAndKeyRowsArePermutedForRotateHalf) {
  const SyntheticFile file = MakeFile({});
  absl::StatusOr<LoadedModel> model = Load(file.bytes);
  ASSERT_TRUE(model.ok()) << model.status();
  const LayerWeights& l = model->weights.layers[1];
  // head_dim 4: HF row h*4 + j*2 + i holds llama2.c row h*4 + 2i + j.
  const int expected_source[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int row = 0; row < 8; ++row) {
    EXPECT_EQ(Row(l.wq, row), file.Row("wq", 1, 8, 8, expected_source[row]))
        << row;
  }
  for (int row = 0; row < 4; ++row) {  // One kv head.
    EXPECT_EQ(Row(l.wk, row), file.Row("wk", 1, 4, 8, expected_source[row]))
        << row;
  }
}

TEST_F(Llama2cTest, UnsharedClassifier) {
  Dims d;
  d.shared = false;
  const SyntheticFile file = MakeFile(d);
  absl::StatusOr<LoadedModel> model = Load(file.bytes);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->config.tie_word_embeddings);
  EXPECT_EQ(model->weights.lm_head.ToF32Vector(), file.arrays.at("wcls"));
  EXPECT_NE(model->weights.lm_head.raw_data(),
            model->weights.tok_embed.raw_data());
}

TEST_F(Llama2cTest, ConvertsToF16) {
  const SyntheticFile file = MakeFile({});
  absl::StatusOr<LoadedModel> model = Load(file.bytes, DType::kF16);
  ASSERT_TRUE(model.ok()) << model.status();
  const LayerWeights& l = model->weights.layers[0];
  EXPECT_EQ(l.wq.dtype(), DType::kF16);
  EXPECT_EQ(l.wv.dtype(), DType::kF16);
  EXPECT_EQ(model->weights.tok_embed.dtype(), DType::kF16);
  // Small integers are exact in f16.
  EXPECT_EQ(model->weights.tok_embed.ToF32Vector()[5],
            file.arrays.at("token_embedding")[5]);
  EXPECT_EQ(Row(l.wq, 1)[0], file.Row("wq", 0, 8, 8, 2)[0]);
}

// --- Bad input: each error names the file and what is wrong.

TEST_F(Llama2cTest, TruncatedFileNamesTheCutArray) {
  std::string bytes = MakeFile({}).bytes;
  bytes.resize(bytes.size() - 400);  // Cuts into w2 or later.
  const std::string message = ErrorOf(bytes);
  EXPECT_THAT(message, HasSubstr("model.bin: truncated: llama2.c array '"));
  EXPECT_THAT(message, HasSubstr("but the file has"));

  EXPECT_THAT(ErrorOf(bytes.substr(0, 28)),
              HasSubstr("truncated: llama2.c array 'token_embedding' needs "
                        "bytes [28,348) but the file has 28"));
  EXPECT_THAT(ErrorOf(bytes.substr(0, 10)),
              HasSubstr("model.bin: truncated: 10 bytes, shorter than the "
                        "28-byte llama2.c header"));
}

TEST_F(Llama2cTest, TrailingBytesMeanTheHeaderIsWrong) {
  EXPECT_THAT(ErrorOf(MakeFile({}).bytes + "extra"),
              HasSubstr("but its llama2.c header implies"));
}

TEST_F(Llama2cTest, BadHeaderValues) {
  const std::string good = MakeFile({}).bytes;
  EXPECT_THAT(
      ErrorOf(WithHeaderField(good, 0, -8)),
      HasSubstr("model.bin: llama2.c header field 'dim': -8 is outside"));
  EXPECT_THAT(ErrorOf(WithHeaderField(good, 2, 0)),
              HasSubstr("header field 'n_layers': 0 is outside"));
  EXPECT_THAT(ErrorOf(WithHeaderField(good, 6, 1 << 30)),
              HasSubstr("header field 'seq_len': 1073741824 is outside"));
  EXPECT_THAT(ErrorOf(WithHeaderField(good, 5, INT32_MIN)),
              HasSubstr("header field 'vocab_size'"));
  EXPECT_THAT(ErrorOf(WithHeaderField(good, 3, 3)),
              HasSubstr("header field 'n_heads': 3 does not divide dim 8"));
  EXPECT_THAT(ErrorOf(WithHeaderField(good, 4, 3)),
              HasSubstr("header field 'n_kv_heads': 3 does not divide "
                        "n_heads 2"));
  EXPECT_THAT(ErrorOf(WithHeaderField(good, 3, 8)),  // head size 1.
              HasSubstr("header field 'n_heads': head size dim/n_heads = 1 "
                        "is odd"));
}

TEST_F(Llama2cTest, VersionedFormatIsRefusedByName) {
  std::string bytes = MakeFile({}).bytes;
  bytes = WithHeaderField(bytes, 0, static_cast<int32_t>(0x616b3432));
  bytes = WithHeaderField(bytes, 1, 2);
  absl::StatusOr<LoadedModel> model = Load(bytes);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(MessageOf(model.status()),
              HasSubstr("model.bin: unsupported llama2.c version 2"));
}

TEST_F(Llama2cTest, MissingFile) {
  absl::StatusOr<LoadedModel> model =
      LoadLlama2cModel(dir_.File("absent.bin"), LoadOptions{});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(MessageOf(model.status()), HasSubstr("absent.bin"));
}

// --- The real stories260K checkpoint (shared/data, MANIFEST section 3).

constexpr char kStories260K[] = "models/llama2c_stories260K/stories260K.bin";

TEST(Stories260KTest, HeaderMatchesManifest) {
  DS_REQUIRE_DATA();
  absl::StatusOr<LoadedModel> model =
      LoadModel(testing::DataPath(kStories260K), LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.ParameterCount(), 260032);  // MANIFEST: 260,032 parameters.
  EXPECT_EQ(model->checkpoint_bytes, 1056540 - 28);
}

TEST(Stories260KTest, GreedyDecodeMatchesPublishedOutput) {
  DS_REQUIRE_DATA();
  absl::StatusOr<LoadedModel> model =
      LoadLlama2cModel(testing::DataPath(kStories260K), LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  // MANIFEST section 3 / llama2.c doc/stories260K.md: greedy from BOS gives
  // " Once upon a time, there was a little girl named Lily. ..."
  const std::vector<int32_t> expected = {
      403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317,
      426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282,
      295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352};
  EXPECT_THAT(testing::GreedyDecode(model->config, model->weights, 1,
                                    static_cast<int>(expected.size())),
              ElementsAreArray(expected));
}

}  // namespace
}  // namespace dynsparse
