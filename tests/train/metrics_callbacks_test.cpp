// compute_metrics helpers against hand-computed sklearn values, the log line
// format of transformers' PrinterCallback, EarlyStoppingCallback's counter
// with a threshold, and trainer_state.json round trips (including a file in
// the layout transformers writes).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/callbacks.h"
#include "loom/trainer.h"

namespace loom {
namespace {

TEST(TrainMetrics, AccuracyAndF1) {
  // tp = 3 (positions 0, 3, 5), fp = 1 (2), fn = 1 (4): F1 = 6 / 8.
  std::vector<int64_t> p{1, 0, 1, 1, 0, 1, 0}, l{1, 0, 0, 1, 1, 1, -100};
  EXPECT_DOUBLE_EQ(accuracy_score(p, l), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(f1_score(p, l), 0.75);
  // Three classes, macro: class 0: tp 1, fp 1, fn 0 -> 2/3; class 1: tp 1,
  // fp 0, fn 1 -> 2/3; class 2: tp 0, fp 1, fn 1 -> 0. Mean 4/9.
  std::vector<int64_t> p3{0, 1, 2, 0}, l3{0, 1, 1, 2};
  EXPECT_DOUBLE_EQ(f1_score(p3, l3, "macro"), 4.0 / 9.0);
  EXPECT_DOUBLE_EQ(f1_score({0, 0}, {0, 0}), 0.0) << "no positives: zero division scores 0";
  EXPECT_THROW(f1_score(p, l, "weighted"), Error);
  EXPECT_THROW(accuracy_score({1}, {1, 0}), Error);
}

TEST(TrainMetrics, ClassificationMetricsFromLogits) {
  EvalPrediction e;
  e.predictions = tensor({0.1f, 0.9f, 2.0f, -1.0f, 0.3f, 0.2f, -0.5f, 0.5f}, {4, 2});
  e.label_ids = tensor_i64({1, 0, 1, 1}, {4});
  Logs m = classification_metrics(e);  // preds 1, 0, 0, 1
  EXPECT_DOUBLE_EQ(m.at("accuracy"), 0.75);
  EXPECT_DOUBLE_EQ(m.at("f1"), 0.8);  // tp 2, fp 0, fn 1
  EXPECT_THROW(classification_metrics(EvalPrediction{}), Error);
}

TEST(TrainMetrics, Perplexity) {
  EXPECT_DOUBLE_EQ(perplexity(std::log(20.0)), 20.0);
  EXPECT_EQ(perplexity(1e6), std::numeric_limits<double>::infinity());
  EvalPrediction e;
  e.loss = 2.0;
  EXPECT_DOUBLE_EQ(perplexity_metrics(e).at("perplexity"), std::exp(2.0));
}

TEST(TrainCallbacks, PrinterFormatIsPythonDictWith4g) {
  Logs logs{{"loss", 2.34567},
            {"learning_rate", 5e-05},
            {"epoch", 0.5},
            {"total_flos", 1e9},
            {"grad_norm", 100.0}};
  EXPECT_EQ(format_logs(logs),
            "{'epoch': '0.5', 'grad_norm': '100', 'learning_rate': '5e-05', 'loss': '2.346'}");
}

TEST(TrainCallbacks, EarlyStoppingCountsWithThreshold) {
  TrainingArguments args;
  args.eval_strategy = "steps";
  args.metric_for_best_model = "accuracy";
  args.validate();  // greater_is_better = true
  EarlyStoppingCallback cb(2, 0.1);
  TrainerState state;
  TrainerControl control;
  cb.on_train_begin(args, state, control);
  cb.on_evaluate(args, state, control, {{"eval_accuracy", 0.5}});
  EXPECT_EQ(cb.patience_counter(), 0);  // no best yet
  state.best_metric = 0.5;
  cb.on_evaluate(args, state, control, {{"eval_accuracy", 0.55}});  // better, but by < 0.1
  EXPECT_EQ(cb.patience_counter(), 1);
  cb.on_evaluate(args, state, control, {{"eval_accuracy", 0.7}});
  EXPECT_EQ(cb.patience_counter(), 0);
  EXPECT_FALSE(control.should_training_stop);
  cb.on_evaluate(args, state, control, {{"eval_accuracy", 0.4}});
  cb.on_evaluate(args, state, control, {{"eval_accuracy", 0.45}});
  EXPECT_TRUE(control.should_training_stop);
  EarlyStoppingCallback restored;
  restored.load_state_json(*cb.state_json());
  EXPECT_EQ(restored.patience_counter(), 2);
  TrainingArguments no_eval;
  no_eval.metric_for_best_model = "loss";
  EXPECT_THROW(cb.on_train_begin(no_eval, state, control), Error);
}

TEST(TrainCallbacks, TrainerStateReadsTransformersJson) {
  // The layout TrainerState.save_to_json writes (transformers 5).
  const char* text = R"({
  "best_global_step": 4,
  "best_metric": 0.25,
  "best_model_checkpoint": "out/checkpoint-4",
  "epoch": 1.5,
  "eval_steps": 2,
  "global_step": 6,
  "is_hyper_param_search": false,
  "is_local_process_zero": true,
  "is_world_process_zero": true,
  "log_history": [{"epoch": 0.25, "grad_norm": 1.5, "learning_rate": 5e-05, "loss": 3.25, "step": 1}],
  "logging_steps": 1,
  "max_steps": 8,
  "num_input_tokens_seen": 0,
  "num_train_epochs": 2,
  "save_steps": 2,
  "stateful_callbacks": {"TrainerControl": {"args": {"should_epoch_stop": false}, "attributes": {}}},
  "total_flos": 1234.0,
  "train_batch_size": 4,
  "trial_name": null,
  "trial_params": null
})";
  TrainerState s = TrainerState::from_json(text);
  EXPECT_EQ(s.global_step, 6);
  EXPECT_EQ(s.best_global_step, 4);
  EXPECT_EQ(s.best_metric, 0.25);
  EXPECT_EQ(s.best_model_checkpoint, "out/checkpoint-4");
  EXPECT_EQ(s.train_batch_size, 4);
  ASSERT_EQ(s.log_history.size(), 1u);
  EXPECT_EQ(s.log_history[0].at("loss"), 3.25);
  EXPECT_EQ(s.log_history[0].at("step"), 1);
  TrainerState r = TrainerState::from_json(s.to_json());
  EXPECT_EQ(r.to_json(), s.to_json());
  EXPECT_THROW(TrainerState::from_json("{\"global_step\": \"x\"}"), Error);
  EXPECT_THROW(TrainerState::from_json("[]"), Error);
}

}  // namespace
}  // namespace loom
