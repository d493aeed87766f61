// examples/ddp_train.cpp: data-parallel training under mpirun, as
// `torchrun --nproc_per_node 2 train.py` with the HF Trainer: every rank runs
// this same program; the Trainer shards the batches (DistributedSampler) and
// averages the gradients with all_reduce after each backward, so every rank
// keeps identical weights. Run alone it trains on one process.
//
// Assumes MODEL_DIR is a causal-LM save_pretrained directory with tokenizer
// files (a `loom train` output), and mpirun from Open MPI (docs/distributed.md).
//
//   mpirun -np 2 build/example_ddp_train MODEL_DIR TRAIN_TXT OUTPUT_DIR [max_steps (20)]
//
// Each rank prints "rank R of W: ..." with its final training loss and a
// checksum of its weights; the program checks that the checksums agree across
// ranks (loom::Error naming the rank otherwise). Rank 0 saves the model.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/ops.h"
#include "loom/pretrained_model.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"

namespace {

// The sum of every parameter, printed with all its digits: equal weights on
// every rank give the same text.
std::string weight_checksum(loom::PretrainedModel& model) {
  double total = 0;
  for (const loom::Tensor& p : model.parameters())
    total += loom::sum(p.to(loom::Device("cpu"))).item();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", total);
  return buf;
}

void run(const std::string& model_dir, const std::string& train_txt, const std::string& out_dir,
         int64_t max_steps) {
  // mpi when launched by mpirun, else one process (transformers' ddp_backend).
  loom::dist::ProcessGroup& pg = loom::dist::init_process_group("auto");
  loom::Tokenizer tokenizer = loom::Tokenizer::from_pretrained(model_dir);
  loom::data::TokenizeFn tokenize = [&](const std::string& text) {
    std::vector<int32_t> ids = tokenizer.encode(text).ids;
    return std::vector<int64_t>(ids.begin(), ids.end());
  };
  auto train = std::make_shared<loom::data::InMemoryDataset>(
      loom::data::text_blocks_dataset(train_txt, tokenize, {.block_size = 16}));
  auto model = loom::auto_from_pretrained(model_dir);

  loom::TrainingArguments args;
  args.output_dir = out_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";
  args.per_device_train_batch_size = 2;  // global batch: 2 x world size
  args.dataloader_drop_last = true;
  args.learning_rate = 3e-3;
  args.max_steps = max_steps;
  args.logging_steps = max_steps;
  args.save_strategy = "no";
  args.report_to = "none";
  args.disable_tqdm = true;
  loom::Trainer trainer(model, args, train, nullptr,
                        {.data_collator = std::make_shared<loom::data::CausalLMCollator>(),
                         .tokenizer_dir = model_dir});
  loom::TrainOutput result = trainer.train();
  trainer.save_model();  // rank 0 writes; the others return at once

  const std::string checksum = weight_checksum(trainer.model());
  std::printf("rank %d of %d: train_loss %.4f, weight checksum %s\n", pg.rank(), pg.world_size(),
              result.training_loss, checksum.c_str());
  std::fflush(stdout);
  loom::dist::check_same_on_all_ranks("weights after training", checksum);
  if (pg.rank() == 0) std::printf("all %d ranks hold the same weights\n", pg.world_size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: mpirun -np N %s MODEL_DIR TRAIN_TXT OUTPUT_DIR [max_steps]\n",
                 argv[0]);
    return 2;
  }
  try {
    const int64_t max_steps = argc > 4 ? std::stoll(argv[4]) : 20;
    // A failing rank prints "loom: error: [rank R] ..." and ends the whole job.
    loom::dist::run_main([&] { run(argv[1], argv[2], argv[3], max_steps); });
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
