// Parquet files as rows of JSON objects: what a Hugging Face dataset on the
// Hub holds (datasets' to_parquet / push_to_hub), read through Apache Arrow
// C++ from pip's pyarrow (the build finds it in .venv/: cmake/
// LoomDependencies.cmake, loom_find_parquet). Columns are read one row group
// at a time, only those asked for; each row becomes an object whose keys are
// the column names, with Arrow values as datasets' to_list gives them:
// strings, integers, floats, booleans, null, lists (list, large_list,
// fixed_size_list) as arrays, structs as objects (a message list is
// list<struct<role, content>>), dictionary-encoded values decoded.
// Implemented in parquet_rows.cpp (with Arrow) or parquet_unavailable.cpp
// (a build without pyarrow: every call throws the error that says so).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::io {

/// Whether this build reads Parquet (it was compiled with pyarrow's Arrow C++).
bool parquet_available();

/// The names of `path`'s top-level columns, in the file's order. Throws
/// loom::Error "<what>: ..." when the build has no Parquet ("Parquet needs
/// pyarrow: run scripts/setup.sh ..."), the file is missing, or it is not a
/// Parquet file (Arrow's reason).
std::vector<std::string> parquet_columns(const std::string& path, const std::string& what);

/// Calls `on_row(row, index)` for every row of `path` in order (index from 0),
/// each row an object of the named `columns` (those the file has; empty: all
/// of them), reading one row group at a time. Throws loom::Error "<what>: ..."
/// as parquet_columns does, and naming the column and its Arrow type for a
/// type without a JSON form (binary, dates, decimals, maps, ...).
void read_parquet_rows(
    const std::string& path, const std::vector<std::string>& columns,
    const std::function<void(nlohmann::ordered_json&& row, int64_t index)>& on_row,
    const std::string& what);

}  // namespace loom::io
