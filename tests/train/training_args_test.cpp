// TrainingArguments: transformers' defaults, setting fields by name (the CLI
// path) with "did you mean" for unknown names, JSON round trips, and
// validate(): derived defaults as transformers' __post_init__ fills them, and
// every invalid value or combination rejected with the argument named.
#include <gtest/gtest.h>

#include <functional>

#include "common/error_of.h"
#include "loom/error.h"
#include "loom/training_args.h"

namespace loom {
namespace {

using testing::error_of;

TEST(TrainingArguments, DefaultsAreTransformers) {
  TrainingArguments a;  // transformers 5 TrainingArguments() defaults
  EXPECT_EQ(a.learning_rate, 5e-5);
  EXPECT_EQ(a.weight_decay, 0.0);
  EXPECT_EQ(a.adam_beta1, 0.9);
  EXPECT_EQ(a.adam_beta2, 0.999);
  EXPECT_EQ(a.adam_epsilon, 1e-8);
  EXPECT_EQ(a.max_grad_norm, 1.0);
  EXPECT_EQ(a.num_train_epochs, 3.0);
  EXPECT_EQ(a.max_steps, -1);
  EXPECT_EQ(a.lr_scheduler_type, "linear");
  EXPECT_EQ(a.warmup_steps, 0);
  EXPECT_EQ(a.warmup_ratio, 0);
  EXPECT_EQ(a.logging_steps, 500);
  EXPECT_FALSE(a.logging_first_step);
  EXPECT_EQ(a.eval_strategy, "no");
  EXPECT_EQ(a.save_strategy, "steps");
  EXPECT_EQ(a.save_steps, 500);
  EXPECT_FALSE(a.save_total_limit.has_value());
  EXPECT_EQ(a.seed, 42);
  EXPECT_EQ(a.per_device_train_batch_size, 8);
  EXPECT_EQ(a.per_device_eval_batch_size, 8);
  EXPECT_EQ(a.gradient_accumulation_steps, 1);
  EXPECT_FALSE(a.dataloader_drop_last);
  EXPECT_EQ(a.dataloader_num_workers, 0);
  EXPECT_EQ(a.optim, "adamw_torch_fused");
  EXPECT_EQ(a.device, "cpu");
  EXPECT_FALSE(a.metric_for_best_model.has_value());
  EXPECT_FALSE(a.greater_is_better.has_value());
}

TEST(TrainingArguments, SetByNameParsesEachType) {
  TrainingArguments a;
  a.set("learning_rate", "3e-4");
  a.set("--max_steps", "120");
  a.set("logging_first_step", "True");
  a.set("save_total_limit", "2");
  a.set("metric_for_best_model", "accuracy");
  a.set("eval_steps", "0.25");
  a.set("device", "lazy");
  EXPECT_EQ(a.learning_rate, 3e-4);
  EXPECT_EQ(a.max_steps, 120);
  EXPECT_TRUE(a.logging_first_step);
  EXPECT_EQ(a.save_total_limit, 2);
  EXPECT_EQ(a.metric_for_best_model, "accuracy");
  EXPECT_EQ(a.eval_steps, 0.25);
  EXPECT_EQ(a.device, "lazy");
  a.set("save_total_limit", "none");
  EXPECT_FALSE(a.save_total_limit.has_value());
  EXPECT_EQ(a.get("learning_rate"), "0.0003");
  EXPECT_EQ(a.get("max_steps"), "120");
  EXPECT_EQ(a.get("save_total_limit"), "none");
}

TEST(TrainingArguments, UnknownNameSuggestsTheClosest) {
  TrainingArguments a;
  EXPECT_EQ(error_of([&] { a.set("lerning_rate", "1"); }),
            "[TrainingArguments] unknown argument 'lerning_rate' (did you mean 'learning_rate'?)");
  EXPECT_NE(
      error_of([&] { a.set("--per_device_batch_size", "4"); }).find("did you mean 'per_device_"),
      std::string::npos);
  EXPECT_EQ(error_of([&] { a.set("zzz", "1"); }), "[TrainingArguments] unknown argument 'zzz'");
}

TEST(TrainingArguments, BadValuesNameTheArgument) {
  TrainingArguments a;
  EXPECT_EQ(error_of([&] { a.set("max_steps", "1.5"); }),
            "[TrainingArguments] max_steps: expected an integer, got '1.5'");
  EXPECT_EQ(error_of([&] { a.set("bf16", "maybe"); }),
            "[TrainingArguments] bf16: expected a bool (true/false), got 'maybe'");
  EXPECT_EQ(error_of([&] { a.set("learning_rate", "fast"); }),
            "[TrainingArguments] learning_rate: expected a number, got 'fast'");
}

TEST(TrainingArguments, NumbersAreDecimalAndWithinRange) {
  // Issue 15: std::stod read "0x10" as 16; values beyond int64 must not wrap.
  TrainingArguments a;
  EXPECT_EQ(error_of([&] { a.set("learning_rate", "0x10"); }),
            "[TrainingArguments] learning_rate: expected a number, got '0x10'");
  EXPECT_EQ(error_of([&] { a.set("max_steps", "0x10"); }),
            "[TrainingArguments] max_steps: expected an integer, got '0x10'");
  EXPECT_EQ(error_of([&] { a.set("seed", " 7"); }),
            "[TrainingArguments] seed: expected an integer, got ' 7'");
  std::string m = error_of([&] { a.set("max_steps", "99999999999999999999"); });
  EXPECT_NE(m.find("max_steps: expected an integer within int64"), std::string::npos) << m;
  m = error_of([&] { a.set("learning_rate", "1e999"); });
  EXPECT_NE(m.find("learning_rate: expected a number within the double range"), std::string::npos)
      << m;
  a.set("learning_rate", "+5e-5");
  EXPECT_EQ(a.learning_rate, 5e-5);
  a.set("max_steps", "+12");
  EXPECT_EQ(a.max_steps, 12);
}

TEST(TrainingArguments, HugeStepCountsAreRejected) {
  // They become int64 step numbers; 1e300 would be an undefined conversion.
  TrainingArguments a;
  a.save_steps = 1e300;
  EXPECT_EQ(error_of([&] { a.validate(); }),
            "[TrainingArguments] save_steps: must be <= 2^53 (9007199254740992), got 1e+300");
  a = TrainingArguments();
  a.warmup_steps = 1e19;
  EXPECT_NE(error_of([&] { a.validate(); }).find("warmup_steps: must be <= 2^53"),
            std::string::npos);
  a = TrainingArguments();
  a.num_train_epochs = 1e12;
  EXPECT_EQ(error_of([&] { a.validate(); }),
            "[TrainingArguments] num_train_epochs: must be <= 1e9, got 1e+12");
  a = TrainingArguments();
  a.save_steps = 9007199254740992.0;
  EXPECT_NO_THROW(a.validate());
}

TEST(TrainingArguments, DataloaderNumWorkersIsBounded) {
  // Issue 15: 100000 workers ended in std::terminate when threads ran out.
  TrainingArguments a;
  a.dataloader_num_workers = 100000;
  EXPECT_EQ(error_of([&] { a.validate(); }),
            "[TrainingArguments] dataloader_num_workers: must be in [0, 256], got 100000");
  a.dataloader_num_workers = 256;
  EXPECT_NO_THROW(a.validate());
}

TEST(TrainingArguments, JsonRoundTripKeepsEveryField) {
  TrainingArguments a;
  a.set("learning_rate", "0.001");
  a.set("save_total_limit", "3");
  a.set("greater_is_better", "false");
  a.set("output_dir", "out dir");
  TrainingArguments b = TrainingArguments::from_json(a.to_json());
  EXPECT_EQ(b.to_json(), a.to_json());
  EXPECT_EQ(b.learning_rate, 0.001);
  EXPECT_EQ(b.greater_is_better, false);
  TrainingArguments c =
      TrainingArguments::from_json(R"({"learning_rate": 0.1, "seed": 7, "eval_steps": null})");
  EXPECT_EQ(c.learning_rate, 0.1);
  EXPECT_EQ(c.seed, 7);
  EXPECT_NE(error_of([] {
              TrainingArguments::from_json(R"({"lr": 1})", "cfg.json");
            }).find("unknown argument 'lr'"),
            std::string::npos);
  EXPECT_NE(error_of([] { TrainingArguments::from_json("[1]", "cfg.json"); }).find("cfg.json"),
            std::string::npos);
  EXPECT_NE(error_of([] { TrainingArguments::from_json("{", "cfg.json"); }).find("not valid JSON"),
            std::string::npos);
}

TEST(TrainingArguments, FieldsListTheIssueArguments) {
  std::vector<std::string> names;
  for (const auto& f : TrainingArguments::fields()) names.push_back(f.name);
  for (const char* n : {"output_dir",
                        "overwrite_output_dir",
                        "do_train",
                        "do_eval",
                        "per_device_train_batch_size",
                        "per_device_eval_batch_size",
                        "gradient_accumulation_steps",
                        "learning_rate",
                        "weight_decay",
                        "adam_beta1",
                        "adam_beta2",
                        "adam_epsilon",
                        "max_grad_norm",
                        "num_train_epochs",
                        "max_steps",
                        "lr_scheduler_type",
                        "warmup_steps",
                        "warmup_ratio",
                        "logging_steps",
                        "logging_first_step",
                        "eval_strategy",
                        "eval_steps",
                        "save_strategy",
                        "save_steps",
                        "save_total_limit",
                        "load_best_model_at_end",
                        "metric_for_best_model",
                        "greater_is_better",
                        "seed",
                        "data_seed",
                        "resume_from_checkpoint",
                        "bf16",
                        "dataloader_num_workers",
                        "dataloader_drop_last",
                        "disable_tqdm",
                        "device",
                        "ddp_backend",
                        "ddp_timeout"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& f : TrainingArguments::fields()) EXPECT_FALSE(f.help.empty()) << f.name;
}

TEST(TrainingArguments, ValidateFillsDerivedDefaults) {
  TrainingArguments a;
  a.eval_strategy = "steps";
  a.logging_steps = 25;
  a.load_best_model_at_end = true;
  a.save_steps = 50;
  a.validate();
  EXPECT_EQ(a.eval_steps, 25);  // falls back to logging_steps
  EXPECT_TRUE(a.do_eval);
  EXPECT_EQ(a.metric_for_best_model, "loss");
  EXPECT_EQ(a.greater_is_better, false);  // "loss" is minimized
  EXPECT_EQ(a.best_metric_key(), "eval_loss");
  TrainingArguments b;
  b.metric_for_best_model = "accuracy";
  b.validate();
  EXPECT_EQ(b.greater_is_better, true);
  EXPECT_EQ(b.best_metric_key(), "eval_accuracy");
}

TEST(TrainingArguments, WarmupSteps) {
  TrainingArguments a;
  EXPECT_EQ(a.get_warmup_steps(100), 0);
  a.warmup_ratio = 0.1;
  EXPECT_EQ(a.get_warmup_steps(95), 10);  // ceil(9.5)
  a.warmup_steps = 0.25;                  // transformers 5: a ratio below 1
  EXPECT_EQ(a.get_warmup_steps(10), 3);
  a.warmup_steps = 7;
  EXPECT_EQ(a.get_warmup_steps(10), 7);
}

struct BadCase {
  const char* argument;  // must appear in the message
  std::function<void(TrainingArguments&)> mutate;
};

TEST(TrainingArguments, ValidateRejectsNamingTheArgument) {
  const std::vector<BadCase> cases = {
      {"per_device_train_batch_size", [](auto& a) { a.per_device_train_batch_size = 0; }},
      {"per_device_eval_batch_size", [](auto& a) { a.per_device_eval_batch_size = -1; }},
      {"gradient_accumulation_steps", [](auto& a) { a.gradient_accumulation_steps = 0; }},
      {"learning_rate", [](auto& a) { a.learning_rate = -1; }},
      {"weight_decay", [](auto& a) { a.weight_decay = -0.1; }},
      {"adam_beta1", [](auto& a) { a.adam_beta1 = 1.0; }},
      {"adam_beta2", [](auto& a) { a.adam_beta2 = -0.5; }},
      {"adam_epsilon", [](auto& a) { a.adam_epsilon = -1; }},
      {"max_steps", [](auto& a) { a.max_steps = 0; }},
      {"num_train_epochs", [](auto& a) { a.num_train_epochs = 0; }},
      {"lr_scheduler_type", [](auto& a) { a.lr_scheduler_type = "cosine_annealing"; }},
      {"warmup_steps", [](auto& a) { a.warmup_steps = -2; }},
      {"warmup_steps", [](auto& a) { a.warmup_steps = 2.5; }},
      {"warmup_ratio", [](auto& a) { a.warmup_ratio = 1.5; }},
      {"logging_strategy", [](auto& a) { a.logging_strategy = "sometimes"; }},
      {"logging_steps", [](auto& a) { a.logging_steps = 0; }},
      {"logging_steps", [](auto& a) { a.logging_steps = 10.5; }},
      {"eval_strategy", [](auto& a) { a.eval_strategy = "always"; }},
      {"save_strategy", [](auto& a) { a.save_strategy = "never"; }},
      {"save_steps", [](auto& a) { a.save_steps = 0; }},
      {"eval_steps", [](auto& a) { a.eval_strategy = "steps", a.eval_steps = 2.5; }},
      {"optim", [](auto& a) { a.optim = "adafactor"; }},
      {"device", [](auto& a) { a.device = "lazy:tpu"; }},        // parses; no such backend
      {"ddp_backend", [](auto& a) { a.ddp_backend = "nccl"; }},  // transformers' name, not loom's
      {"ddp_timeout", [](auto& a) { a.ddp_timeout = 0; }},
      {"ddp_timeout", [](auto& a) { a.ddp_timeout = 10000000000; }},  // overflows ns (int64)
      {"output_dir", [](auto& a) { a.output_dir = ""; }},
      {"dataloader_num_workers", [](auto& a) { a.dataloader_num_workers = -1; }},
      {"seed", [](auto& a) { a.seed = -3; }},
      // transformers: load_best_model_at_end needs matching strategies ...
      {"load_best_model_at_end",
       [](auto& a) { a.load_best_model_at_end = true, a.eval_strategy = "epoch"; }},
      // ... and save_steps a multiple of eval_steps.
      {"load_best_model_at_end",
       [](auto& a) {
         a.load_best_model_at_end = true, a.eval_strategy = "steps", a.eval_steps = 30,
         a.save_steps = 50;
       }},
      {"load_best_model_at_end",
       [](auto& a) {
         a.load_best_model_at_end = true, a.eval_strategy = "steps", a.eval_steps = 0.1,
         a.save_steps = 50;
       }},
      {"metric_for_best_model",
       [](auto& a) { a.save_strategy = "best", a.eval_strategy = "steps"; }},
  };
  for (const BadCase& c : cases) {
    TrainingArguments a;
    c.mutate(a);
    std::string msg = error_of([&] { a.validate(); });
    EXPECT_NE(msg.find(std::string("[TrainingArguments] ") + c.argument), std::string::npos)
        << "expected an error naming " << c.argument << ", got '" << msg << "'";
  }
}

// Each accepted combination sits next to a rejected one that differs in one
// value, so the test fails whether validate() is too strict or too lax; the
// values validate() derives are checked too.
TEST(TrainingArguments, ValidCombinationsPass) {
  TrainingArguments a;
  a.load_best_model_at_end = true;
  a.eval_strategy = "steps";
  a.eval_steps = 25;
  a.save_steps = 100;  // a multiple of 25
  ASSERT_EQ(error_of([&] { a.validate(); }), "(no error)");
  EXPECT_TRUE(a.do_eval);  // eval_strategy != "no"
  EXPECT_EQ(a.metric_for_best_model, std::optional<std::string>("loss"));
  EXPECT_EQ(a.greater_is_better, std::optional<bool>(false));  // "loss" ends in "loss"
  TrainingArguments a_off = TrainingArguments();
  a_off.load_best_model_at_end = true;
  a_off.eval_strategy = "steps";
  a_off.eval_steps = 25;
  a_off.save_steps = 110;  // not a multiple of 25
  EXPECT_NE(error_of([&] { a_off.validate(); }).find("multiple of eval_steps"), std::string::npos);

  TrainingArguments b;
  b.load_best_model_at_end = true;
  b.eval_strategy = "epoch";
  b.save_strategy = "best";  // "best" needs no matching strategy...
  b.metric_for_best_model = "accuracy";
  ASSERT_EQ(error_of([&] { b.validate(); }), "(no error)");
  EXPECT_EQ(b.greater_is_better, std::optional<bool>(true));  // "accuracy": higher is better
  TrainingArguments b_off = b;
  b_off.save_strategy = "steps";  // ...but "steps" must match eval_strategy "epoch"
  b_off.greater_is_better.reset();
  EXPECT_NE(error_of([&] { b_off.validate(); }).find("to match"), std::string::npos);
  TrainingArguments b_no_eval = TrainingArguments();
  b_no_eval.save_strategy = "best";  // "best" without evaluation has nothing to compare
  b_no_eval.metric_for_best_model = "loss";
  EXPECT_NE(error_of([&] { b_no_eval.validate(); }).find("eval_strategy"), std::string::npos);

  TrainingArguments c;
  c.eval_strategy = "steps";
  c.eval_steps = 0.1;
  c.save_steps = 0.3;
  c.load_best_model_at_end = true;  // both ratios, 0.3 a multiple of 0.1
  ASSERT_EQ(error_of([&] { c.validate(); }), "(no error)");
  EXPECT_EQ(c.eval_steps, std::optional<double>(0.1));
  TrainingArguments c_off = TrainingArguments();
  c_off.eval_strategy = "steps";
  c_off.eval_steps = 0.1;
  c_off.save_steps = 30;  // an absolute count with a ratio
  c_off.load_best_model_at_end = true;
  EXPECT_NE(error_of([&] { c_off.validate(); }).find("mix a ratio"), std::string::npos);

  TrainingArguments d;  // eval_steps unset: taken from logging_steps (transformers)
  d.eval_strategy = "steps";
  d.logging_steps = 7;
  ASSERT_EQ(error_of([&] { d.validate(); }), "(no error)");
  EXPECT_EQ(d.eval_steps, std::optional<double>(7));
}

}  // namespace
}  // namespace loom
