// Parquet in a build without pyarrow's Arrow C++ (LOOM_WITH_PARQUET=0; the
// other side is parquet_rows.cpp): every reader call is one loom::Error saying
// what to install, so JSON/JSONL keep working and a .parquet file explains
// itself.
#include "io/parquet_rows.h"

#include "loom/error.h"

namespace loom::io {
namespace {

[[noreturn]] void no_parquet(const std::string& what) {
  fail(what,
       ": Parquet needs pyarrow: run scripts/setup.sh (it pip-installs pyarrow, whose "
       "Arrow C++ libraries loom links, into .venv), then rebuild; or convert the file "
       "to JSON lines");
}

}  // namespace

bool parquet_available() { return false; }

std::vector<std::string> parquet_columns(const std::string&, const std::string& what) {
  no_parquet(what);
}

void read_parquet_rows(const std::string&, const std::vector<std::string>&,
                       const std::function<void(nlohmann::ordered_json&&, int64_t)>&,
                       const std::string& what) {
  no_parquet(what);
}

}  // namespace loom::io
