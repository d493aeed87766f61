// TempDir: a fresh directory under the system temp folder, removed with its
// contents when the object dies. The one definition every test folder uses:
// test helpers live in headers as inline code, so two classes of the same
// name in loom::testing would be an ODR violation (the linker keeps one).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "loom/error.h"

namespace loom::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "loom_test_XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) throw Error("[test] mkdtemp failed for " + tmpl);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The directory's path.
  const std::string& path() const { return path_; }
  const std::string& str() const { return path_; }
  /// path()/name (the file need not exist).
  std::string sub(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return sub(name); }
  /// Writes `content` to path()/name and returns that path.
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = sub(name);
    std::ofstream out(p, std::ios::binary);
    out << content;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace loom::testing
