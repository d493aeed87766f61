// examples/train_gpt2_austen.cpp: trains a small GPT-2 from scratch on the
// five Jane Austen novels with loom's C++ API, as transformers' run_clm.py
// does in Python: tokenize, cut into 128-token blocks, train on the lazy
// device, evaluate perplexity on a held-back tenth, save, then generate a few
// tokens greedily by calling the model's forward in a loop.
//
// Assumes it runs from the repository root (assets/corpora/austen/*.txt and
// the GPT-2 tokenizer files in assets/tokenizers/gpt2/ ship with the repo).
//
//   build/example_train_gpt2_austen [max_steps] [output_dir] [max_eval_blocks]
//
// max_eval_blocks (default: all) evaluates on the first blocks of the held-back
// tenth only, as run_clm's --max_eval_samples (the CTest's short run).
// Prints the trainer's log lines, the eval perplexity after training and a
// greedy continuation of a prompt. The default of 200 steps takes a few
// minutes on 2 cores; scripts/demo.sh runs the full-length job via the CLI.
// It shows the data layer under loom::build_job (loom/dataset.h:
// text_blocks_dataset per file) because its split, the last tenth of each
// book, is not run_clm's percentage of the first lines (examples/train_rows.cpp
// and finetune_sentiment.cpp build their jobs with build_job).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/error.h"
#include "loom/models.h"
#include "loom/ops.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"

namespace {

constexpr int64_t kBlockSize = 128;
const char* const kBooks[] = {"emma", "mansfieldpark", "northangerabbey", "prideprejudice",
                              "sensesensibility"};

// Every book -> 128-token blocks (labels = input_ids); the last tenth of each
// book's blocks is held back for evaluation.
void load_blocks(const loom::Tokenizer& tokenizer, std::vector<loom::data::Example>& train,
                 std::vector<loom::data::Example>& eval) {
  loom::data::TokenizeFn tokenize = [&](const std::string& text) {
    std::vector<int32_t> ids = tokenizer.encode(text).ids;
    return std::vector<int64_t>(ids.begin(), ids.end());
  };
  for (const char* book : kBooks) {
    std::string path = std::string("assets/corpora/austen/") + book + ".txt";
    auto blocks = loom::data::text_blocks_dataset(path, tokenize, {.block_size = kBlockSize});
    int64_t n_train = blocks.size() - blocks.size() / 10;
    for (int64_t i = 0; i < blocks.size(); ++i)
      (i < n_train ? train : eval).push_back(blocks.at(i));
  }
}

// Greedy decoding with plain forward calls on the eager cpu device: each step
// runs the whole sequence so far and appends the argmax of the last logits.
std::string generate_greedy(loom::GPT2LMHeadModel& model, const loom::Tokenizer& tokenizer,
                            const std::string& prompt, int new_tokens) {
  loom::NoGradGuard no_grad;
  std::vector<int32_t> ids = tokenizer.encode(prompt).ids;
  for (int i = 0; i < new_tokens; ++i) {
    auto t = static_cast<int64_t>(ids.size());
    loom::Tensor input = loom::tensor_i64(std::vector<int64_t>(ids.begin(), ids.end()), {1, t});
    loom::ModelInputs inputs;
    inputs.input_ids = input;
    loom::Tensor logits = model.forward(inputs).logits;    // [1, T, V]
    loom::Tensor last = loom::slice(logits, 1, t - 1, t);  // [1, 1, V]
    ids.push_back(static_cast<int32_t>(loom::argmax(last, 2).item()));
  }
  return tokenizer.decode(ids);
}

int run(int64_t max_steps, const std::string& output_dir, int64_t max_eval_blocks) {
  loom::Tokenizer tokenizer = loom::Tokenizer::from_pretrained("assets/tokenizers/gpt2");
  std::vector<loom::data::Example> train_blocks, eval_blocks;
  load_blocks(tokenizer, train_blocks, eval_blocks);
  if (max_eval_blocks >= 0 && static_cast<int64_t>(eval_blocks.size()) > max_eval_blocks)
    eval_blocks.resize(static_cast<size_t>(max_eval_blocks));
  auto train_ds = std::make_shared<loom::data::InMemoryDataset>(std::move(train_blocks));
  auto eval_ds = std::make_shared<loom::data::InMemoryDataset>(std::move(eval_blocks));
  std::printf("train: %lld blocks, eval: %lld blocks of %lld tokens\n",
              static_cast<long long>(train_ds->size()), static_cast<long long>(eval_ds->size()),
              static_cast<long long>(kBlockSize));

  // A small GPT-2: 4 layers, 256 wide, 4 heads, 128 positions, GPT-2's vocabulary.
  loom::GPT2Config config;
  config.n_layer = 4;
  config.n_embd = 256;
  config.n_head = 4;
  config.n_positions = kBlockSize;
  config.vocab_size = tokenizer.vocab_size();
  loom::manual_seed(42);
  auto model = std::make_shared<loom::GPT2LMHeadModel>(config);

  loom::TrainingArguments args;
  args.output_dir = output_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";  // every step has the same shapes: one compile, then replays
  args.per_device_train_batch_size = 16;
  args.per_device_eval_batch_size = 16;
  args.dataloader_drop_last = true;  // no smaller last batch, so no second graph
  args.learning_rate = 1e-3;
  args.warmup_steps = 20;
  args.lr_scheduler_type = "cosine";
  args.max_steps = max_steps;
  args.logging_steps = 20;
  args.prediction_loss_only = true;  // perplexity needs only the loss
  args.save_strategy = "no";

  loom::Trainer trainer(model, args, train_ds, eval_ds,
                        {.data_collator = std::make_shared<loom::data::CausalLMCollator>(),
                         .tokenizer_dir = "assets/tokenizers/gpt2",
                         .compute_metrics = loom::perplexity_metrics});
  trainer.train();
  // Perplexity = exp(mean cross-entropy) on the held-back tenth; an untrained
  // model scores about the vocabulary size (50257).
  double perplexity = trainer.evaluate().at("eval_perplexity");
  trainer.save_model();  // config.json, model.safetensors, tokenizer files
  std::printf("eval perplexity after %lld steps: %.1f\n", static_cast<long long>(max_steps),
              perplexity);

  model->eval();  // no dropout
  model->to(loom::Device("cpu"));
  std::printf("sample: %s\n", generate_greedy(*model, tokenizer, "Emma was", 30).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int64_t max_steps = argc > 1 ? std::stoll(argv[1]) : 200;
    std::string output_dir = argc > 2 ? argv[2] : "out/train_gpt2_austen";
    int64_t max_eval_blocks = argc > 3 ? std::stoll(argv[3]) : -1;
    return run(max_steps, output_dir, max_eval_blocks);
  } catch (const std::exception& e) {  // loom::Error, or a bad max_steps
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
