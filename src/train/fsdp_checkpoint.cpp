// Loading sharded optimizer state (see fsdp_checkpoint.h); the writing is in
// checkpoint_save.cpp (each rank saves its optimizer into the checkpoint's
// tmp directory between two barriers).
#include "train/fsdp_checkpoint.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "loom/error.h"
#include "loom/ops.h"
#include "train/checkpoint_files.h"

namespace loom::train {
namespace {

namespace fs = std::filesystem;

// The index's segments must be the engine's (same units, sizes, names).
int64_t check_fsdp_index(const std::string& dir, const nlohmann::json& idx,
                         const FsdpEngine& engine) {
  LOOM_CHECK(idx.is_object() && idx.contains("world_size") && idx.contains("segments") &&
                 idx["world_size"].is_number_integer() && idx["segments"].is_array(),
             "[fsdp] ", dir, ": ", kFsdpIndexFile, " is malformed");
  const auto& segs = idx["segments"];
  const auto& mine = engine.segments();
  LOOM_CHECK(segs.size() == mine.size(), "[fsdp] ", dir, ": the optimizer was saved with ",
             segs.size(), " shard segments, this model has ", mine.size(),
             " (another model or other trainable parameters)");
  for (size_t k = 0; k < mine.size(); ++k) {
    const auto& s = segs[k];
    const bool same = s.value("numel", int64_t{-1}) == mine[k].numel &&
                      s.value("params", std::vector<std::string>{}) == mine[k].names;
    LOOM_CHECK(same, "[fsdp] ", dir, ": shard segment ", k, " ('", mine[k].unit,
               "') differs: saved ", s.value("numel", int64_t{-1}), " elements, this model has ",
               mine[k].numel);
  }
  const int64_t w = idx["world_size"].get<int64_t>();
  LOOM_CHECK(w >= 1, "[fsdp] ", dir, ": world_size ", w, " in ", kFsdpIndexFile);
  return w;
}

// Segment k's buffer from every old rank, joined, cut to numel, padded and
// cut to this rank's new shard.
Tensor reshard_buffer(const std::vector<optim::StateDict>& old, int64_t k, const std::string& name,
                      const FsdpSegment& seg, int64_t world, int64_t rank, const std::string& dir) {
  std::vector<Tensor> parts;
  for (size_t q = 0; q < old.size(); ++q) {
    auto st = old[q].state.find(k);
    LOOM_CHECK(st != old[q].state.end() && st->second.buffers.count(name), "[fsdp] ", dir, ": ",
               fsdp_shard_file(static_cast<int64_t>(q)), " lacks state.", k, ".", name);
    const Tensor& t = st->second.buffers.at(name);
    parts.push_back(reshape(t, {t.numel()}));
  }
  Tensor full = slice(concat(parts, 0), 0, 0, seg.numel);
  const int64_t pad = seg.shard_numel * world - seg.numel;
  if (pad > 0) full = concat({full, zeros({pad}, full.dtype())}, 0);
  return slice(full, 0, rank * seg.shard_numel, (rank + 1) * seg.shard_numel);
}

}  // namespace

std::string fsdp_shard_file(int64_t rank) {
  return "optimizer_shard_" + std::to_string(rank) + ".safetensors";
}

void load_fsdp_optimizer(const std::string& dir, const FsdpEngine& engine,
                         optim::Optimizer& optimizer) {
  const fs::path d = dir;
  const std::string index_path = (d / kFsdpIndexFile).string();
  std::error_code ec;
  LOOM_CHECK(fs::is_regular_file(index_path, ec), "[fsdp] ", dir, ": no ", kFsdpIndexFile,
             " (a checkpoint saved without --fsdp holds optimizer.safetensors; resume it "
             "without --fsdp)");
  const nlohmann::json idx =
      nlohmann::json::parse(read_text_file(index_path), nullptr, /*allow_exceptions=*/false);
  const int64_t saved_world = check_fsdp_index(dir, idx, engine);
  const int64_t world = engine.world_size(), rank = engine.rank();
  if (saved_world == world) {
    optimizer.load((d / fsdp_shard_file(rank)).string());
    return;
  }
  std::vector<optim::StateDict> old;
  for (int64_t q = 0; q < saved_world; ++q)
    old.push_back(optim::Optimizer::read_state_dict((d / fsdp_shard_file(q)).string()));
  optim::StateDict sd = old.front();
  sd.state.clear();
  const auto& segs = engine.segments();
  for (const auto& [k, ps0] : old.front().state) {
    LOOM_CHECK(k >= 0 && k < static_cast<int64_t>(segs.size()), "[fsdp] ", dir,
               ": state of parameter ", k, " beyond the ", segs.size(), " segments");
    optim::ParamState ps;
    ps.step = ps0.step;
    for (const auto& [name, t] : ps0.buffers)
      ps.buffers[name] = reshard_buffer(old, k, name, segs[k], world, rank, dir);
    sd.state[k] = std::move(ps);
  }
  try {
    optimizer.load_state_dict(sd);
  } catch (const Error& e) {
    fail("[fsdp] ", dir, ": ", e.what());
  }
}

}  // namespace loom::train
