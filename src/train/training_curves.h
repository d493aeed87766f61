// training_curves.svg: the curves of a run from its trainer_state.json —
// training and evaluation loss against step, the learning rate, the gradient
// norm, and one panel per evaluation metric (eval_perplexity, eval_accuracy,
// ...; speed and runtime entries left out) — drawn by io/svg_chart.h, titled
// with the model's architecture (config.json) and the run's directory.
#pragma once

#include <string>

#include "io/svg_chart.h"
#include "loom/callbacks.h"
#include "loom/training_curves.h"  // write_training_curves

namespace loom::train {

/// The chart page for `state.log_history`: panels "Loss" (series "train
/// loss", "eval loss"), "Learning rate", "Gradient norm", then one per eval
/// metric titled "Eval <name>" (a log y axis when its values span more than
/// 20x); a panel with no values is left out. x is the step of each log
/// entry; every panel's x axis covers 0..state.global_step.
io::ChartPage training_curves(const TrainerState& state, const std::string& title,
                              const std::string& subtitle);

}  // namespace loom::train
