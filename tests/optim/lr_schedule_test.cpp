// LR schedules against transformers.get_scheduler (tests/fixtures/optim/
// schedules.json: get_last_lr() after construction and after each of 16
// steps for every schedule, with default and non-default arguments), several
// parameter groups, scheduler state save / load, and argument errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "loom/error.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

optim::ScheduleOptions schedule_options(const json& kwargs) {
  optim::ScheduleOptions o;
  if (kwargs.contains("num_warmup_steps"))
    o.num_warmup_steps = kwargs["num_warmup_steps"].get<int64_t>();
  if (kwargs.contains("num_training_steps"))
    o.num_training_steps = kwargs["num_training_steps"].get<int64_t>();
  if (kwargs.contains("scheduler_specific_kwargs")) {
    const json& s = kwargs["scheduler_specific_kwargs"];
    if (s.contains("num_cycles")) o.num_cycles = s["num_cycles"].get<double>();
    if (s.contains("lr_end")) o.lr_end = s["lr_end"].get<double>();
    if (s.contains("power")) o.power = s["power"].get<double>();
    if (s.contains("timescale")) o.timescale = s["timescale"].get<int64_t>();
  }
  return o;
}

TEST(LRSchedule, MatchesTransformers) {
  json fixture = testing::optim_fixture("schedules.json");
  double base_lr = fixture["base_lr"].get<double>();
  std::set<std::string> covered;
  for (const json& c : fixture["cases"]) {
    std::string name = c["name"].get<std::string>();
    covered.insert(name);
    SCOPED_TRACE(name + " " + c["kwargs"].dump());
    Tensor p = zeros({1}).requires_grad_();
    optim::AdamW opt({p}, {.lr = base_lr});
    optim::LRScheduler sched(name, opt, schedule_options(c["kwargs"]));
    std::vector<double> expected = c["lrs"].get<std::vector<double>>();
    for (size_t s = 0; s < expected.size(); ++s) {
      if (s > 0) sched.step();
      EXPECT_EQ(sched.last_epoch(), static_cast<int64_t>(s));
      ASSERT_EQ(sched.get_last_lr().size(), 1u);
      EXPECT_NEAR(sched.get_last_lr()[0], expected[s], 1e-15 + 1e-12 * std::fabs(expected[s]))
          << "step " << s;
      EXPECT_EQ(opt.param_groups()[0].lr(), sched.get_last_lr()[0]);
    }
  }
  EXPECT_EQ(covered.size(), optim::schedule_names().size()) << "a schedule lacks a fixture case";
}

TEST(LRSchedule, HandComputedFactors) {
  optim::ScheduleOptions o{.num_warmup_steps = 2, .num_training_steps = 6};
  EXPECT_DOUBLE_EQ(optim::schedule_factor("linear", 1, o, 1e-3), 0.5);
  EXPECT_DOUBLE_EQ(optim::schedule_factor("linear", 4, o, 1e-3), 0.5);
  EXPECT_DOUBLE_EQ(optim::schedule_factor("linear", 9, o, 1e-3), 0.0);
  EXPECT_NEAR(optim::schedule_factor("cosine", 4, o, 1e-3), 0.5, 1e-15);  // half way
  EXPECT_DOUBLE_EQ(optim::schedule_factor("constant", 0, {}, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(optim::schedule_factor("inverse_sqrt", 8, {.num_warmup_steps = 2}, 1e-3), 0.5);
}

TEST(LRSchedule, GroupsScaleTheirOwnBaseLr) {
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  std::vector<optim::ParamGroup> groups(2);
  groups[0].params = {a};
  groups[1].params = {b};
  groups[1].options["lr"] = 0.5;
  optim::SGD opt(groups, {.lr = 0.1});
  optim::LRScheduler sched("linear", opt, {.num_warmup_steps = 4, .num_training_steps = 8});
  sched.step();
  sched.step();  // factor 2/4
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 0.05);
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[1], 0.25);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 0.25);
}

TEST(LRSchedule, StateSaveAndLoad) {
  Tensor p = zeros({1}).requires_grad_();
  optim::AdamW opt({p}, {.lr = 1e-3});
  optim::ScheduleOptions o{.num_warmup_steps = 3, .num_training_steps = 20};
  optim::LRScheduler sched("cosine", opt, o);
  for (int i = 0; i < 7; ++i) sched.step();
  json state = json::parse(sched.state_json());
  EXPECT_EQ(state["last_epoch"], 7);
  EXPECT_EQ(state["name"], "cosine");
  std::string path = (std::filesystem::temp_directory_path() /
                      ("loom-sched-" + std::to_string(getpid()) + ".json"))
                         .string();
  sched.save(path);

  Tensor q = zeros({1}).requires_grad_();
  optim::AdamW opt2({q}, {.lr = 1e-3});
  optim::LRScheduler resumed("cosine", opt2, o);
  resumed.load(path);
  EXPECT_EQ(resumed.last_epoch(), 7);
  EXPECT_EQ(resumed.get_last_lr(), sched.get_last_lr());
  EXPECT_EQ(opt2.param_groups()[0].lr(), opt.param_groups()[0].lr());
  sched.step();
  resumed.step();
  EXPECT_EQ(resumed.get_last_lr(), sched.get_last_lr());

  optim::LRScheduler other("linear", opt2, o);
  EXPECT_THROW(other.load(path), Error);  // another schedule
  EXPECT_THROW(resumed.load_state_json("{not json"), Error);
  EXPECT_THROW(resumed.load_state_json(R"({"name":"cosine","last_epoch":-1,"base_lrs":[1]})"),
               Error);
  EXPECT_THROW(resumed.load_state_json(R"({"name":"cosine","last_epoch":1,"base_lrs":[1,2]})"),
               Error);
  EXPECT_THROW(resumed.load(path + ".missing"), Error);
  std::remove(path.c_str());
}

TEST(LRSchedule, ArgumentErrors) {
  Tensor p = zeros({1}).requires_grad_();
  optim::AdamW opt({p}, {.lr = 1e-3});
  EXPECT_THROW(optim::LRScheduler("warmup_cosine", opt, {}), Error);
  EXPECT_THROW(optim::LRScheduler("linear", opt, {.num_training_steps = 10}), Error);
  EXPECT_THROW(optim::LRScheduler("cosine", opt, {.num_warmup_steps = 1}), Error);
  EXPECT_THROW(optim::LRScheduler("inverse_sqrt", opt, {.num_warmup_steps = -1}), Error);
  EXPECT_THROW(optim::LRScheduler("polynomial", opt,
                                  {.num_warmup_steps = 1, .num_training_steps = 5, .lr_end = 1e-3}),
               Error);
  EXPECT_THROW(optim::LRScheduler("inverse_sqrt", opt, {.num_warmup_steps = 1, .timescale = 0}),
               Error);
  EXPECT_NO_THROW(optim::LRScheduler("constant", opt, {}));
  EXPECT_THROW(
      optim::schedule_factor("linear", -1, {.num_warmup_steps = 0, .num_training_steps = 3}, 1e-3),
      Error);
}

}  // namespace
}  // namespace loom
