// Loading sharded optimizer state (see fsdp_checkpoint.h); the writing is in
// checkpoint_save.cpp (each rank saves its optimizer into the checkpoint's
// tmp directory between two barriers).
#include "train/fsdp_checkpoint.h"

#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/parse_number.h"
#include "loom/error.h"
#include "loom/ops.h"
#include "loom/safetensors.h"
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

// The world size optimizer_shards.json names, or why not.
std::optional<std::string> index_world_size(const fs::path& d, int64_t* world) {
  std::error_code ec;
  if (!fs::is_regular_file(d / kFsdpIndexFile, ec)) return std::string("no ") + kFsdpIndexFile;
  nlohmann::json idx;
  try {
    idx = nlohmann::json::parse(read_text_file((d / kFsdpIndexFile).string()), nullptr, false);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  if (!idx.is_object() || !idx.contains("world_size") || !idx["world_size"].is_number_integer() ||
      idx["world_size"].get<int64_t>() < 1)
    return std::string(kFsdpIndexFile) + " is malformed (no world_size >= 1)";
  *world = idx["world_size"].get<int64_t>();
  return std::nullopt;
}

// The identity field `key` of a shard's metadata, or -1 when absent or not
// a decimal integer.
int64_t identity_field(const std::map<std::string, std::string>& meta, const char* key) {
  auto it = meta.find(key);
  if (it == meta.end()) return -1;
  std::optional<int64_t> v = parse_decimal_int(it->second);
  return v && *v >= 0 ? *v : -1;
}

// Why shard file `q` of a checkpoint saved by `world` ranks at `step` cannot
// be used, or nullopt.
std::optional<std::string> shard_problem(const fs::path& d, int64_t q, int64_t world,
                                         int64_t step) {
  const std::string name = fsdp_shard_file(q);
  std::error_code ec;
  if (!fs::is_regular_file(d / name, ec))
    return "no " + name + " (" + kFsdpIndexFile + " names " + std::to_string(world) + " ranks)";
  std::map<std::string, std::string> meta;
  try {
    meta = safetensors::File::open((d / name).string()).metadata();
  } catch (const Error& e) {
    return std::string(e.what());
  }
  if (!meta.count("fsdp_rank")) return std::nullopt;  // written before the identity existed
  const int64_t r = identity_field(meta, "fsdp_rank"), w = identity_field(meta, "fsdp_world_size"),
                s = identity_field(meta, "global_step");
  if (r == q && w == world && s == step) return std::nullopt;
  return name + " holds rank " + std::to_string(r) + "'s shard of " + std::to_string(w) +
         " ranks at step " + std::to_string(s) + ", expected rank " + std::to_string(q) + " of " +
         std::to_string(world) + " at step " + std::to_string(step) +
         " (a shard moved, or copied from another checkpoint)";
}

}  // namespace

std::string fsdp_shard_file(int64_t rank) {
  return "optimizer_shard_" + std::to_string(rank) + ".safetensors";
}

std::map<std::string, std::string> fsdp_shard_identity(int64_t rank, int64_t world_size,
                                                       int64_t global_step) {
  return {{"fsdp_rank", std::to_string(rank)},
          {"fsdp_world_size", std::to_string(world_size)},
          {"global_step", std::to_string(global_step)}};
}

std::optional<std::string> fsdp_shards_problem(const std::string& dir, int64_t global_step) {
  const fs::path d = dir;
  int64_t world = 0;
  if (auto problem = index_world_size(d, &world)) return problem;
  for (int64_t q = 0; q < world; ++q)
    if (auto problem = shard_problem(d, q, world, global_step)) return problem;
  return std::nullopt;
}

void load_fsdp_optimizer(const std::string& dir, const FsdpEngine& engine,
                         optim::Optimizer& optimizer, int64_t global_step) {
  const fs::path d = dir;
  const std::string index_path = (d / kFsdpIndexFile).string();
  std::error_code ec;
  LOOM_CHECK(fs::is_regular_file(index_path, ec), "[fsdp] ", dir, ": no ", kFsdpIndexFile,
             " (a checkpoint saved without --fsdp holds optimizer.safetensors; resume it "
             "without --fsdp)");
  const nlohmann::json idx =
      nlohmann::json::parse(read_text_file(index_path), nullptr, /*allow_exceptions=*/false);
  const int64_t saved_world = check_fsdp_index(dir, idx, engine);
  if (auto problem = fsdp_shards_problem(dir, global_step)) fail("[fsdp] ", dir, ": ", *problem);
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
