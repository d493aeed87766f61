// compute_metrics helpers: accuracy and F1 as sklearn.metrics defines them
// (accuracy_score; f1_score with average "binary" / "macro", a zero division
// scoring 0), sequence-classification metrics from logits, and perplexity =
// exp(eval_loss) as transformers' run_clm / run_mlm report it.
#include <cmath>
#include <limits>
#include <set>

#include "loom/ops.h"
#include "loom/trainer.h"

namespace loom {
namespace {

constexpr int64_t kIgnore = -100;

void check_sizes(const char* what, size_t a, size_t b) {
  LOOM_CHECK(a == b, "[", what, "] ", a, " predictions but ", b, " labels");
}

// 2 tp / (2 tp + fp + fn) for class `c`; 0 when the denominator is 0.
double class_f1(const std::vector<int64_t>& p, const std::vector<int64_t>& l, int64_t c) {
  int64_t tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (l[i] == kIgnore) continue;
    tp += p[i] == c && l[i] == c;
    fp += p[i] == c && l[i] != c;
    fn += p[i] != c && l[i] == c;
  }
  const int64_t den = 2 * tp + fp + fn;
  return den == 0 ? 0.0 : 2.0 * tp / den;
}

}  // namespace

double accuracy_score(const std::vector<int64_t>& preds, const std::vector<int64_t>& labels) {
  check_sizes("accuracy", preds.size(), labels.size());
  int64_t n = 0, right = 0;
  for (size_t i = 0; i < preds.size(); ++i) {
    if (labels[i] == kIgnore) continue;
    ++n;
    right += preds[i] == labels[i];
  }
  return n == 0 ? 0.0 : static_cast<double>(right) / n;
}

double f1_score(const std::vector<int64_t>& preds, const std::vector<int64_t>& labels,
                const std::string& average, int64_t pos_label) {
  check_sizes("f1", preds.size(), labels.size());
  if (average == "binary") return class_f1(preds, labels, pos_label);
  LOOM_CHECK(average == "macro", "[f1] average must be \"binary\" or \"macro\", got \"", average,
             "\"");
  std::set<int64_t> classes;
  for (size_t i = 0; i < preds.size(); ++i) {
    if (labels[i] == kIgnore) continue;
    classes.insert(preds[i]);
    classes.insert(labels[i]);
  }
  if (classes.empty()) return 0.0;
  double total = 0;
  for (int64_t c : classes) total += class_f1(preds, labels, c);
  return total / static_cast<double>(classes.size());
}

Logs classification_metrics(const EvalPrediction& p) {
  LOOM_CHECK(p.predictions.defined() && p.label_ids.defined(),
             "[classification_metrics] needs predictions and label_ids (is prediction_loss_only "
             "set, or does the dataset lack labels?)");
  LOOM_CHECK(p.predictions.dim() == 2 && p.label_ids.dim() == 1 &&
                 p.predictions.size(0) == p.label_ids.size(0),
             "[classification_metrics] expected predictions [N, C] and labels [N], got ",
             to_string(p.predictions.shape()), " and ", to_string(p.label_ids.shape()));
  const int64_t classes = p.predictions.size(1);
  std::vector<int64_t> pred = argmax(p.predictions, 1).to_vector<int64_t>();
  std::vector<int64_t> lab = p.label_ids.to_vector<int64_t>();
  Logs m;
  m["accuracy"] = accuracy_score(pred, lab);
  m["f1"] = classes == 2 ? f1_score(pred, lab, "binary") : f1_score(pred, lab, "macro");
  return m;
}

double perplexity(double loss) {
  const double p = std::exp(loss);
  return std::isfinite(p) || std::isnan(p) ? p : std::numeric_limits<double>::infinity();
}

Logs perplexity_metrics(const EvalPrediction& p) {
  Logs m;
  m["perplexity"] = perplexity(p.loss);
  return m;
}

}  // namespace loom
