// `loom plot OUTPUT_DIR [--output FILE.svg] [--no_png]`: draws a run's
// training curves (plot.h). The PNG converter runs as a child process with
// its output discarded; any failure of it (not installed, a stand-in that
// cannot read SVG) only means no PNG.
#include "plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "flags.h"
#include "loom/error.h"
#include "loom/training_curves.h"
#include "unknown_flags.h"

extern char** environ;

namespace loom::cli {
namespace {
namespace fs = std::filesystem;

// Runs argv (searched in PATH) with stdin/stdout/stderr on /dev/null; true
// when it exits 0.
bool run_quietly(std::vector<std::string> argv) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.gcount() == 8 && std::memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0;
}

// svg -> png with the first converter that works; false when none does.
bool convert_to_png(const std::string& svg, const std::string& png) {
  const std::vector<std::vector<std::string>> converters = {
      {"rsvg-convert", "--background-color", "white", "-o", png, svg},
      {"convert", "-background", "white", svg, png},
  };
  for (const auto& argv : converters) {
    std::error_code ec;
    fs::remove(png, ec);
    if (run_quietly(argv) && is_png(png)) return true;
  }
  std::error_code ec;
  fs::remove(png, ec);
  return false;
}

}  // namespace

std::vector<std::string> write_run_plots(const std::string& output_dir, const std::string& svg_path,
                                         bool png) {
  std::vector<std::string> written = {train::write_training_curves(output_dir, svg_path)};
  if (png) {
    const std::string png_path = fs::path(written[0]).replace_extension(".png").string();
    if (convert_to_png(written[0], png_path)) written.push_back(png_path);
  }
  return written;
}

void add_plot_command(CLI::App& app) {
  struct Options {
    std::string dir, output;
    bool no_png = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "plot",
      "Draw a run's training curves (training_curves.svg, and .png) from trainer_state.json");
  cmd->add_option("output_dir", o->dir, "A `loom train` output_dir (holds trainer_state.json)");
  cmd->add_option("--output", o->output,
                  "SVG file to write (default OUTPUT_DIR/training_curves.svg)");
  add_bool_flag(*cmd, "--no_png", o->no_png, "Do not convert the SVG to PNG", "loom plot");
  cmd->allow_extras();
  cmd->callback([o, cmd] {
    check_unknown_flags(*cmd, "plot");
    if (o->dir.empty()) fail("[loom plot] OUTPUT_DIR is required: a `loom train` output_dir");
    // The file is SVG text; the PNG (when a converter is installed) is
    // written beside it with the extension .png.
    if (!o->output.empty() && fs::path(o->output).extension() != ".svg")
      fail("[loom plot] --output ", o->output,
           ": must name an .svg file (the PNG is written beside it, as FILE.png)");
    for (const std::string& f : write_run_plots(o->dir, o->output, !o->no_png))
      std::cout << "wrote " << f << "\n";
  });
}

}  // namespace loom::cli
