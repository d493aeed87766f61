// The training-curve pictures of a run (`loom plot`, and `loom train` at the
// end of a run unless --report_to none): training_curves.svg from
// trainer_state.json (train/training_curves.h), and training_curves.png when
// a converter is installed (rsvg-convert from librsvg2-bin, else
// ImageMagick's convert; optional — without one there is only the SVG).
#pragma once

#include <string>
#include <vector>

namespace loom::cli {

/// Writes OUTPUT_DIR/training_curves.svg (or `svg_path`) and, when a
/// converter works, the .png next to it; returns the files written. Throws
/// loom::Error "[plot] ..." as train::write_training_curves does.
std::vector<std::string> write_run_plots(const std::string& output_dir,
                                         const std::string& svg_path = "", bool png = true);

}  // namespace loom::cli
