// training_curves.svg of a finished run (`loom plot`, `loom train`'s end):
// the curves of output_dir/trainer_state.json — training and evaluation loss
// against step, the learning rate, the gradient norm, one panel per
// evaluation metric. Implemented in src/train/training_curves.cpp (which
// also draws the chart, src/train/training_curves.h).
#pragma once

#include <string>

namespace loom::train {

/// Reads output_dir/trainer_state.json (and config.json's architectures[0]
/// or model_type for the title) and writes the SVG to `svg_path` (default
/// output_dir/training_curves.svg); returns the path written. Throws
/// loom::Error "[plot] <file>: ..." when trainer_state.json is missing or
/// malformed or holds no logged values, or the SVG cannot be written.
std::string write_training_curves(const std::string& output_dir, const std::string& svg_path = "");

}  // namespace loom::train
