// XlaExecutable (xla_executable.h): stages lowered and compiled, aliases
// chosen (unless LOOM_XLA_DONATE=0), runs with host-staged collectives.
#include "backends/xla/xla_executable.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "backends/cpu/cpu_backend.h"
#include "backends/xla/lower/stablehlo.h"
#include "backends/xla/xla_backend.h"
#include "backends/xla/xla_compile_cache.h"
#include "backends/xla/xla_runtime.h"
#include "core/settings.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::backends::xla {
namespace {

// How many places read each value of `g`: stage inputs, collective operands,
// and the graph's outputs (counted twice: never donatable).
std::vector<int> xla_value_readers(const ir::Graph& g, const SplitGraph& split) {
  std::vector<int> readers(g.num_values(), 0);
  for (const SplitStage& st : split.stages)
    for (int v : st.inputs) ++readers[v];
  for (const auto& boundary : split.before)
    for (int c : boundary)
      for (int o : g.instr_of(c).operands) ++readers[o];
  for (int v : g.outputs) readers[v] += 2;
  return readers;
}

// Stage inputs an output of `g` (stage-local) is computed from, nearest
// first (breadth-first over operands, at most `depth` levels up).
std::vector<int> xla_near_inputs(const ir::Graph& g, int out, int depth) {
  std::vector<int> found;
  std::deque<std::pair<int, int>> queue{{out, 0}};
  std::vector<bool> seen(g.num_values(), false);
  seen[out] = true;
  while (!queue.empty()) {
    auto [v, d] = queue.front();
    queue.pop_front();
    if (g.is_input(v)) {
      found.push_back(v);
      continue;
    }
    if (d == depth) continue;
    for (int o : g.instr_of(v).operands)
      if (!seen[o]) {
        seen[o] = true;
        queue.push_back({o, d + 1});
      }
  }
  return found;
}

// A new PJRT buffer on `device` with `src`'s values (through host memory:
// only for the rare vetoed donation).
std::unique_ptr<PjrtBuffer> xla_copy(const PjrtBuffer& src, int device) {
  std::vector<std::byte> host(src.nbytes());
  if (!host.empty()) xla_client().to_host(src, host.data());
  return xla_client().from_host(host.data(), src.type(), device);
}

// Donation (an updated parameter or AdamW moment written over its input
// through tf.aliasing_output) is on unless LOOM_XLA_DONATE=0. It gave wrong
// values on XLA's CPU plugin until the CPU plugin compiled with XNNPACK off
// (pjrt_compile_options): XNNPACK reused its packing of a matmul's argument
// whose address, not values, stayed the same (docs/backends.md, "Donation").
// XlaBackend.Gpt2TrainingMatchesLazyCpuStepByStep checks it step by step.
bool xla_donation_wanted() { return settings::flag(Setting::xla_donate); }

// The stage executables in serialize()'s framing; throws naming what is wrong.
std::vector<std::string> xla_unframe_stages(const std::string& bytes) {
  auto bad = [](const std::string& why) {
    fail("[xla] cannot load a serialized executable: ", why);
  };
  constexpr std::string_view kMagic = "loom-xla-stages 1\n";
  if (bytes.compare(0, kMagic.size(), kMagic) != 0) bad("not loom-xla-stages 1 bytes");
  size_t at = kMagic.size();
  auto number = [&] {
    size_t end = bytes.find('\n', at);
    if (end == std::string::npos || end == at || end - at > 19) bad("a damaged length line");
    std::string digits = bytes.substr(at, end - at);
    if (digits.find_first_not_of("0123456789") != std::string::npos) bad("a damaged length line");
    at = end + 1;
    return static_cast<size_t>(std::stoull(digits));
  };
  size_t n = number();
  if (n > bytes.size()) bad("a stage count larger than the bytes");
  std::vector<std::string> stages;
  for (size_t k = 0; k < n; ++k) {
    size_t len = number();
    if (len > bytes.size() - at) bad("stage " + std::to_string(k) + " runs past the end");
    stages.push_back(bytes.substr(at, len));
    at += len;
  }
  if (at != bytes.size()) bad("trailing bytes after the last stage");
  return stages;
}

}  // namespace

XlaExecutable::XlaExecutable(const XlaBackend& backend,
                             std::shared_ptr<const compiler::Program> program)
    : Executable(backend, std::move(program)), xla_(backend) {
  build_stages(nullptr);
}

XlaExecutable::XlaExecutable(const XlaBackend& backend,
                             std::shared_ptr<const compiler::Program> program,
                             const std::string& serialized)
    : Executable(backend, std::move(program)), xla_(backend) {
  std::vector<std::string> stages = xla_unframe_stages(serialized);
  build_stages(&stages);
}

// Splits, lowers and compiles (or, with `serialized`, loads) every stage.
void XlaExecutable::build_stages(const std::vector<std::string>* serialized) {
  const ir::Graph& g = this->program().graph;
  SplitGraph split = split_at_collectives(g);
  LOOM_CHECK(!serialized || serialized->size() == split.stages.size(),
             "[xla] cannot load a serialized executable: it has ", serialized->size(),
             " stages, the program ", split.stages.size());
  std::vector<int> readers = xla_value_readers(g, split);
  before_ = std::move(split.before);
  const PjrtClient& client = xla_client();
  for (SplitStage& s : split.stages) {
    Stage st;
    st.split = std::move(s);
    st.aliased.assign(st.split.inputs.size(), false);
    if (!st.split.graph.instrs.empty()) {
      if (xla_donation_wanted()) choose_aliases(st, readers);
      LowerOptions options;
      options.aliases = st.aliases;
      st.mlir = lower_to_stablehlo(st.split.graph, options);
      if (serialized) {
        st.loaded_from = (*serialized)[stages_.size()];
        st.exe = client.deserialize(st.loaded_from);
      } else {
        st.exe = compile_stablehlo(client, st.mlir);
      }
      std::vector<ops::TensorType> want;
      for (int v : st.split.graph.outputs) want.push_back(st.split.graph.type_of(v));
      LOOM_CHECK(st.exe->output_types() == want, "[xla] the compiled stage returns ",
                 st.exe->output_types().size(), " arrays of other types than the graph's ",
                 want.size());
    }
    stages_.push_back(std::move(st));
  }
  plan_releases();
}

std::string XlaExecutable::serialize() const {
  std::string out = "loom-xla-stages 1\n" + std::to_string(stages_.size()) + "\n";
  for (const Stage& st : stages_) {
    std::string bytes = !st.loaded_from.empty() ? st.loaded_from
                        : st.exe                ? st.exe->serialize()
                                                : std::string();
    out += std::to_string(bytes.size()) + "\n";
    out += bytes;
  }
  return out;
}

void XlaExecutable::choose_aliases(Stage& st, const std::vector<int>& readers) const {
  const ir::Graph& sg = st.split.graph;
  std::vector<bool> taken(st.split.inputs.size(), false);
  auto eligible = [&](int j, const ops::TensorType& type) {
    return !taken[j] && readers[st.split.inputs[j]] == 1 && sg.inputs[j] == type;
  };
  for (int o = 0; o < static_cast<int>(sg.outputs.size()); ++o) {
    int v = sg.outputs[o];
    if (sg.is_input(v)) continue;
    const ops::TensorType& type = sg.type_of(v);
    int pick = -1;
    for (int j : xla_near_inputs(sg, v, 4))
      if (eligible(j, type)) {
        pick = j;
        break;
      }
    for (int j = 0; pick < 0 && j < static_cast<int>(sg.inputs.size()); ++j)
      if (eligible(j, type)) pick = j;
    if (pick < 0) continue;
    taken[pick] = true;
    st.aliased[pick] = true;
    st.aliases.push_back({pick, o});
  }
}

// A value's buffer is dropped after the last event that reads it (a stage,
// or a collective boundary), unless the graph returns it.
void XlaExecutable::plan_releases() {
  const ir::Graph& g = program().graph;
  std::vector<int> last(g.num_values(), -1);
  for (size_t k = 0; k < stages_.size(); ++k) {
    for (int c : before_[k])
      for (int o : g.instr_of(c).operands) last[o] = std::max(last[o], static_cast<int>(2 * k));
    for (int v : stages_[k].split.inputs) last[v] = std::max(last[v], static_cast<int>(2 * k + 1));
  }
  for (int v : g.outputs) last[v] = -1;
  release_at_.assign(2 * stages_.size(), {});
  for (int v = 0; v < g.num_values(); ++v)
    if (last[v] >= 0) release_at_[last[v]].push_back(v);
}

void XlaExecutable::release(int event, std::vector<BufferPtr>& vals) const {
  for (int v : release_at_[event]) vals[v].reset();
}

std::vector<BufferPtr> XlaExecutable::run(std::vector<BufferPtr> inputs,
                                          const std::vector<bool>& donatable) {
  std::lock_guard<std::mutex> lock(run_mu_);
  const ir::Graph& g = program().graph;
  LOOM_CHECK(inputs.size() == g.inputs.size(), "[xla] executable takes ", g.inputs.size(),
             " inputs, got ", inputs.size());
  int device = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int d = xla_.memory().device_of(*inputs[i]);
    if (i == 0) device = d;
    LOOM_CHECK(d == device, "[xla] the inputs of one step are on lazy:xla:", device,
               " and lazy:xla:", d);
  }
  std::vector<BufferPtr> vals(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) vals[i] = std::move(inputs[i]);
  inputs.clear();
  for (size_t k = 0; k < stages_.size(); ++k) {
    for (int c : before_[k]) run_collective(c, vals, device);
    release(static_cast<int>(2 * k), vals);
    run_stage(stages_[k], vals, donatable, device);
    release(static_cast<int>(2 * k + 1), vals);
  }
  std::vector<BufferPtr> outputs;
  outputs.reserve(g.outputs.size());
  for (int v : g.outputs) outputs.push_back(vals[v]);
  return outputs;
}

// Aliases were fixed at compile time. An aliased input loom may not donate
// (donatable false, or its buffer held elsewhere) is not put in PJRT's
// non_donatable_input_indices: once one aliased input is listed there, the
// CPU plugin donates none of the later ones (docs/backends.md, "Donation").
// The stage consumes a private copy of it instead (DonationVetoed). After the
// run, each donated input's PJRT buffer must be deleted: those count as
// DonatedBytes, the rest (the plugin declined) as DonationDeclinedBytes.
void XlaExecutable::run_stage(Stage& st, std::vector<BufferPtr>& vals,
                              const std::vector<bool>& donatable, int device) const {
  if (!st.exe) return;
  const int n_in = static_cast<int>(program().graph.inputs.size());
  std::vector<PJRT_Buffer*> args;
  std::vector<int> donated;
  std::vector<std::unique_ptr<PjrtBuffer>> copies;  // vetoed inputs' private copies
  for (size_t j = 0; j < st.split.inputs.size(); ++j) {
    int v = st.split.inputs[j];
    LOOM_CHECK(vals[v] != nullptr, "[xla] stage input %", v, " was not computed");
    const PjrtBuffer& arg = xla_.memory().get(*vals[v]);
    // PJRT's Execute does not check argument shapes: a mismatch would be read as garbage.
    LOOM_CHECK(arg.type() == st.split.graph.inputs[j], "[xla] input %", v, " is ",
               ops::to_string(arg.type()), ", the compiled program takes ",
               ops::to_string(st.split.graph.inputs[j]));
    args.push_back(arg.get());
    if (!st.aliased[j]) continue;
    if ((v >= n_in || donatable[v]) && vals[v].use_count() == 1) {
      donated.push_back(v);
      continue;
    }
    copies.push_back(xla_copy(arg, device));
    args.back() = copies.back()->get();
    metrics::add_counter("DonationVetoed");
    metrics::add_counter("DonationVetoCopyBytes", static_cast<int64_t>(arg.nbytes()));
  }
  std::vector<std::unique_ptr<PjrtBuffer>> outs =
      st.exe->execute(args, xla_client().device(device));
  for (int v : donated) {
    const bool taken = xla_.memory().get(*vals[v]).is_deleted();  // PJRT gave it to an output
    metrics::add_counter(taken ? "DonatedBytes" : "DonationDeclinedBytes",
                         static_cast<int64_t>(vals[v]->nbytes()));
    vals[v].reset();
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    const int v = st.split.outputs[o];
    vals[v] = xla_.wrap(std::move(outs[o]), device);
  }
}

void XlaExecutable::run_collective(int v, std::vector<BufferPtr>& vals, int device) const {
  const ir::Instr& instr = program().graph.instr_of(v);
  std::vector<BufferPtr> host;
  OpCall call{instr.op, &instr.attrs, {}, {}};
  for (int o : instr.operands) {
    const ops::TensorType& t = program().graph.type_of(o);
    host.push_back(make_buffer(t.nbytes()));
    xla_.copy_to_host(*vals[o], host.back()->data(), t.nbytes());
    call.inputs.push_back({host.back()->data(), t});
  }
  BufferPtr out = make_buffer(instr.type.nbytes());
  call.output = {out->data(), instr.type};
  cpu_backend().run(call);  // the host kernel over dist::graph_process_group()
  vals[v] = xla_.upload(out->data(), instr.type, device);
  metrics::add_counter("XlaHostStagedCollectiveBytes", static_cast<int64_t>(instr.type.nbytes()));
}

MemoryReport XlaExecutable::memory_report() const {
  int64_t temp = 0, output = 0, alias = 0, arguments = 0, collectives = 0;
  for (const Stage& st : stages_) {
    if (!st.exe) continue;
    PjrtExecutable::CompiledMemory m = st.exe->compiled_memory();
    temp = std::max(temp, m.temp_bytes);  // stages run one after another
    output += m.output_bytes - m.alias_bytes;
    alias += m.alias_bytes;
    arguments += m.argument_bytes;
  }
  for (const auto& b : before_) collectives += static_cast<int64_t>(b.size());
  MemoryReport r;
  r.values = {{"planned_peak_bytes", temp + output},
              {"temp_bytes", temp},
              {"output_bytes", output},
              {"donated_bytes", alias},
              {"argument_bytes", arguments},
              {"stages", static_cast<int64_t>(stages_.size())},
              {"host_staged_collectives", collectives}};
  r.summary = "XLA-planned peak " + std::to_string(temp + output) + " bytes (temp " +
              std::to_string(temp) + ", outputs " + std::to_string(output) + ", aliased " +
              std::to_string(alias) + ", " + std::to_string(stages_.size()) + " stage(s))";
  return r;
}

}  // namespace loom::backends::xla
