// --fsdp / --fsdp_config parsing (HF's values; refusals by name), the unit of
// a parameter name, and FsdpEngine in one process: the shards are the
// flattened, padded segment cut per rank; on one rank the sharded step
// (reduce_scatter, global-norm clip, AdamW on the shards, all_gather) gives
// the DDP-free step's weights; full_shard on the lazy device keeps no whole
// parameter between steps. Several ranks: tests/cli/fsdp_train_cli_test.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/optim.h"
#include "loom/training_args.h"
#include "train/fsdp.h"

namespace loom::train {
namespace {

std::string fsdp_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FsdpOptions, ParsesHfValuesAndRefusesTheOthersByName) {
  EXPECT_EQ(parse_fsdp_mode(""), FsdpMode::off);
  EXPECT_EQ(parse_fsdp_mode("no_shard"), FsdpMode::off);
  EXPECT_EQ(parse_fsdp_mode("shard_grad_op"), FsdpMode::shard_grad_op);
  EXPECT_EQ(parse_fsdp_mode("full_shard auto_wrap"), FsdpMode::full_shard);
  EXPECT_NE(fsdp_error_of([] {
              parse_fsdp_mode("hybrid_shard");
            }).find("'hybrid_shard' is not supported: loom shards over all ranks"),
            std::string::npos);
  EXPECT_NE(fsdp_error_of([] {
              parse_fsdp_mode("full_shard offload");
            }).find("'offload' is not supported yet"),
            std::string::npos);
  EXPECT_NE(fsdp_error_of([] { parse_fsdp_mode("zero3"); }).find("unknown option 'zero3'"),
            std::string::npos);
  EXPECT_NE(
      fsdp_error_of([] { parse_fsdp_mode("full_shard shard_grad_op"); }).find("more than one"),
      std::string::npos);
}

TEST(FsdpOptions, ConfigReadsTheLayerClassAndRefusesOtherKeys) {
  EXPECT_EQ(fsdp_layer_class("GPT2LMHeadModel"), "GPT2Block");
  EXPECT_EQ(fsdp_layer_class("LlamaForCausalLM"), "LlamaDecoderLayer");
  EXPECT_EQ(fsdp_layer_class("Qwen2ForCausalLM"), "Qwen2DecoderLayer");
  EXPECT_EQ(fsdp_layer_class("BertForSequenceClassification"), "BertLayer");
  EXPECT_EQ(fsdp_layer_class("NoSuchForCausalLM"), "");
  EXPECT_TRUE(parse_fsdp_config("", "GPT2Block").empty());
  EXPECT_EQ(
      parse_fsdp_config(R"({"fsdp_transformer_layer_cls_to_wrap": "GPT2Block"})", "GPT2Block"),
      std::vector<std::string>{"GPT2Block"});
  EXPECT_NE(fsdp_error_of([] {
              parse_fsdp_config(R"({"transformer_layer_cls_to_wrap": ["BertLayer"]})", "GPT2Block");
            }).find("'BertLayer' is not this model's layer class ('GPT2Block')"),
            std::string::npos);
  EXPECT_NE(fsdp_error_of([] {
              parse_fsdp_config(R"({"min_num_params": 1000})", "GPT2Block");
            }).find("key 'min_num_params' is not supported (loom wraps by layer class only)"),
            std::string::npos);
  EXPECT_NE(fsdp_error_of([] {
              parse_fsdp_config("{not json", "GPT2Block");
            }).find("fsdp_config: '{not json' is not a valid JSON object"),
            std::string::npos);
}

// transformers parses fsdp_config in TrainingArguments.__post_init__ and
// raises, with or without --fsdp: loom's validate() does too, before any data
// or model is loaded; a file that is missing or holds no JSON object, and a
// key loom does not read, are each named.
TEST(FsdpOptions, ConfigIsCheckedByValidateAlsoWithoutFsdp) {
  testing::TempDir dir;
  auto error_of_config = [&](const std::string& value) {
    TrainingArguments a;
    a.output_dir = dir.sub("out");
    a.fsdp_config = value;
    return fsdp_error_of([&] { a.validate(); });
  };
  const std::string missing = dir.sub("missing.json");
  EXPECT_NE(error_of_config(missing).find("fsdp_config: '" + missing +
                                          "' is neither a JSON object nor a file holding one "
                                          "(no such file)"),
            std::string::npos)
      << error_of_config(missing);
  const std::string bad = dir.write("bad.json", "{\"transformer_layer_cls_to_wrap\": ");
  EXPECT_NE(error_of_config(bad).find("fsdp_config: file " + bad + " does not hold a valid JSON"),
            std::string::npos)
      << error_of_config(bad);
  const std::string offload = dir.write("offload.json", "{\"fsdp_offload_params\": true}");
  EXPECT_NE(error_of_config(offload).find("key 'fsdp_offload_params' is not supported (loom does "
                                          "not offload to the host"),
            std::string::npos)
      << error_of_config(offload);
  EXPECT_NE(error_of_config(R"({"transformer_layer_cls_to_wrap": 3})")
                .find("transformer_layer_cls_to_wrap must be a string or a list of strings"),
            std::string::npos);
  const std::string good =
      dir.write("good.json", R"({"transformer_layer_cls_to_wrap": "GPT2Block"})");
  EXPECT_EQ(error_of_config(good), "");
}

TEST(FsdpUnit, IsTheNameThroughTheLayerIndexOrTheModule) {
  EXPECT_EQ(fsdp_unit_of("transformer.h.3.attn.c_attn.weight"), "transformer.h.3");
  EXPECT_EQ(fsdp_unit_of("model.layers.12.mlp.up_proj.lora_A.weight"), "model.layers.12");
  EXPECT_EQ(fsdp_unit_of("transformer.wte.weight"), "transformer.wte");
  EXPECT_EQ(fsdp_unit_of("ln_f.weight"), "ln_f");
  EXPECT_EQ(fsdp_unit_of("lm_head"), "lm_head");
  EXPECT_EQ(fsdp_unit_of("h.0"), "h.0");
}

// Three parameters in two units: "h.0" (a [2,3] and a [1]: 7 elements) and
// "ln_f" (a [4]); values 1, 2, 3, ... in order.
std::vector<optim::ParamGroup> fsdp_test_groups(const Device& dev) {
  std::vector<float> a(6), b{7}, c{8, 9, 10, 11};
  for (int i = 0; i < 6; ++i) a[i] = float(i + 1);
  std::vector<Tensor> params = {tensor(a, {2, 3}, dev), tensor(b, {1}, dev), tensor(c, {4}, dev)};
  for (Tensor& p : params) p.requires_grad_(true);
  return {optim::ParamGroup{params, {}, {"h.0.w", "h.0.b", "ln_f.weight"}}};
}

TEST(FsdpEngine, ShardsAreTheFlatPaddedSegmentCutPerRank) {
  auto groups = fsdp_test_groups(Device("cpu"));
  FsdpEngine e(FsdpMode::shard_grad_op, groups, 2, 1);
  ASSERT_EQ(e.segments().size(), 2u);
  EXPECT_EQ(e.segments()[0].unit, "h.0");
  EXPECT_EQ(e.segments()[0].numel, 7);
  EXPECT_EQ(e.segments()[0].shard_numel, 4);
  // Rank 1 of [1..7, pad 0]: 5 6 7 0.
  EXPECT_EQ(e.segments()[0].shard.to_vector<float>(), (std::vector<float>{5, 6, 7, 0}));
  EXPECT_EQ(e.segments()[1].shard.to_vector<float>(), (std::vector<float>{10, 11}));
  const auto sg = e.shard_groups(groups);
  ASSERT_EQ(sg.size(), 1u);
  EXPECT_EQ(sg[0].names, (std::vector<std::string>{"fsdp:h.0", "fsdp:ln_f"}));
  EXPECT_NE(e.index_json().find("\"shard_numel\": 4"), std::string::npos) << e.index_json();
  EXPECT_NE(fsdp_error_of([&] {
              FsdpEngine(FsdpMode::full_shard, groups, 2, 2);
            }).find("rank 2 is not a rank of world size 2"),
            std::string::npos);
}

// One AdamW step with clipping (max_norm 0.5) on plain parameters and on
// the engine's shards (one rank): the same weights, the same norm.
void fsdp_expect_step_matches(FsdpMode mode, const Device& dev) {
  auto plain = fsdp_test_groups(dev), sharded = fsdp_test_groups(dev);
  auto loss_of = [](const std::vector<Tensor>& p) {
    return add(add(sum(mul(p[0], p[0])), sum(mul(p[1], 3.0))), sum(exp(mul(p[2], 0.1))));
  };
  optim::AdamW ref(plain, {.lr = 0.1});
  loss_of(plain[0].params).backward();
  Tensor ref_norm = optim::clip_grad_norm_(plain[0].params, 0.5);
  ref.step();

  FsdpEngine e(mode, sharded, 1, 0);
  optim::AdamW opt(e.shard_groups(sharded), {.lr = 0.1});
  loss_of(sharded[0].params).backward();
  e.reduce_scatter_grads();
  Tensor norm = e.clip_grad_norm(0.5);
  opt.step();
  e.gather_params();  // before the cut, as the Trainer
  if (dev.is_lazy()) lazy::mark_step();
  EXPECT_NEAR(norm.item(), ref_norm.item(), 1e-5 * ref_norm.item());
  for (size_t k = 0; k < 3; ++k) {
    const auto want = plain[0].params[k].to_vector<float>();
    const auto got = sharded[0].params[k].to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << k << "," << i;
  }
}

TEST(FsdpEngine, OneRankStepEqualsThePlainStep) {
  fsdp_expect_step_matches(FsdpMode::shard_grad_op, Device("cpu"));
  fsdp_expect_step_matches(FsdpMode::shard_grad_op, Device("lazy"));
  fsdp_expect_step_matches(FsdpMode::full_shard, Device("cpu"));
  fsdp_expect_step_matches(FsdpMode::full_shard, Device("lazy"));
}

TEST(FsdpEngine, FullShardKeepsNoWholeParameterBetweenSteps) {
  // After gather_params on the lazy device a mark_step materializes nothing
  // of the parameters (their values stay pending: computed inside each
  // graph that reads them); a host read still gives the values.
  auto groups = fsdp_test_groups(Device("lazy"));
  FsdpEngine e(FsdpMode::full_shard, groups, 1, 0);
  lazy::mark_step();
  lazy::wait();
  const int64_t before = metrics::counter("OutputAllocatedBytes");
  lazy::mark_step();
  lazy::wait();
  EXPECT_EQ(metrics::counter("OutputAllocatedBytes"), before);
  // h.0.w is a slice of its segment's shard (ln_f.weight, a whole segment, aliases it).
  EXPECT_EQ(groups[0].params[0].to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_GT(metrics::counter("OutputAllocatedBytes"), before);  // the read ran the gather
}

// The Trainer's order (gather_params, then mark_step): the parameters'
// recipes read the updated shards, so when a step runs no one but the step
// holds the old shards and moments, and every one is donated — also when
// the step runs at once (lazy::wait() right after the cut, as a free
// executor would). Traced after the cut, the recipes still read the old
// shards at that moment and each step's shards were fresh allocations.
TEST(FsdpEngine, FullShardStepsDonateTheShards) {
  auto groups = fsdp_test_groups(Device("lazy"));
  FsdpEngine e(FsdpMode::full_shard, groups, 1, 0);
  optim::AdamW opt(e.shard_groups(groups), {.lr = 0.1});
  int64_t vetoed = 0, allocated = 0;
  for (int step = 0; step < 4; ++step) {
    if (step == 2) {  // steady state: moments exist, the graph is cached
      vetoed = metrics::counter("DonationVetoed");
      allocated = metrics::counter("OutputAllocatedBytes");
    }
    const auto& p = groups[0].params;
    add(sum(mul(p[0], p[0])), sum(mul(p[2], p[1]))).backward();
    e.reduce_scatter_grads();
    opt.step();
    e.gather_params();
    opt.zero_grad();
    lazy::mark_step();
    lazy::wait();
  }
  EXPECT_EQ(metrics::counter("DonationVetoed"), vetoed);
  EXPECT_LE(metrics::counter("OutputAllocatedBytes") - allocated, 2 * 64)
      << "steady-state steps allocate only their scalar outputs";
}

}  // namespace
}  // namespace loom::train
