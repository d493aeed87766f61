// Parquet rows through Apache Arrow C++ (parquet_rows.h): parquet::arrow's
// FileReader reads the asked-for columns of one row group at a time into an
// arrow::Table, whose values are turned into JSON as datasets' to_list turns
// them into Python (Arrow's type ids: arrow/type_fwd.h). Compiled only with
// pyarrow's headers and libraries (LOOM_WITH_PARQUET); built outside the
// unity batches, so Arrow's headers meet no other file.
#include "io/parquet_rows.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <filesystem>
#include <set>

#include "loom/error.h"

namespace loom::io {
namespace {

using OJson = nlohmann::ordered_json;

template <typename T>
T value_or_fail(arrow::Result<T> r, const std::string& what, const char* doing) {
  if (!r.ok()) fail(what, ": ", doing, ": ", r.status().ToString());
  return std::move(r).ValueUnsafe();
}

std::unique_ptr<parquet::arrow::FileReader> open_parquet(const std::string& path,
                                                         const std::string& what) {
  std::error_code ec;
  LOOM_CHECK(std::filesystem::is_regular_file(path, ec), what, ": no such file");
  auto file = value_or_fail(arrow::io::ReadableFile::Open(path), what, "cannot open");
  try {  // a file that is not Parquet throws parquet::ParquetException
    return value_or_fail(parquet::arrow::OpenFile(file, arrow::default_memory_pool()), what,
                         "not a Parquet file");
  } catch (const parquet::ParquetException& e) {
    fail(what, ": not a Parquet file: ", e.what());
  }
}

template <typename ArrayT>
OJson list_value(const ArrayT& a, int64_t i, const std::string& column);

OJson value_at(const arrow::Array& a, int64_t i, const std::string& column) {
  if (a.IsNull(i)) return nullptr;
  switch (a.type_id()) {
    case arrow::Type::BOOL:
      return static_cast<const arrow::BooleanArray&>(a).Value(i);
    case arrow::Type::INT8:
      return static_cast<const arrow::Int8Array&>(a).Value(i);
    case arrow::Type::INT16:
      return static_cast<const arrow::Int16Array&>(a).Value(i);
    case arrow::Type::INT32:
      return static_cast<const arrow::Int32Array&>(a).Value(i);
    case arrow::Type::INT64:
      return static_cast<const arrow::Int64Array&>(a).Value(i);
    case arrow::Type::UINT8:
      return static_cast<const arrow::UInt8Array&>(a).Value(i);
    case arrow::Type::UINT16:
      return static_cast<const arrow::UInt16Array&>(a).Value(i);
    case arrow::Type::UINT32:
      return static_cast<const arrow::UInt32Array&>(a).Value(i);
    case arrow::Type::UINT64:
      return static_cast<const arrow::UInt64Array&>(a).Value(i);
    case arrow::Type::FLOAT:
      return static_cast<const arrow::FloatArray&>(a).Value(i);
    case arrow::Type::DOUBLE:
      return static_cast<const arrow::DoubleArray&>(a).Value(i);
    case arrow::Type::STRING:
      return static_cast<const arrow::StringArray&>(a).GetString(i);
    case arrow::Type::LARGE_STRING:
      return static_cast<const arrow::LargeStringArray&>(a).GetString(i);
    case arrow::Type::STRING_VIEW:
      return std::string(static_cast<const arrow::StringViewArray&>(a).GetView(i));
    case arrow::Type::LIST:
      return list_value(static_cast<const arrow::ListArray&>(a), i, column);
    case arrow::Type::LARGE_LIST:
      return list_value(static_cast<const arrow::LargeListArray&>(a), i, column);
    case arrow::Type::FIXED_SIZE_LIST:
      return list_value(static_cast<const arrow::FixedSizeListArray&>(a), i, column);
    case arrow::Type::STRUCT: {
      const auto& s = static_cast<const arrow::StructArray&>(a);
      OJson out = OJson::object();
      for (int k = 0; k < s.num_fields(); ++k)
        out[s.struct_type()->field(k)->name()] = value_at(*s.field(k), i, column);
      return out;
    }
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(a);
      return value_at(*d.dictionary(), d.GetValueIndex(i), column);
    }
    default:
      fail("column '", column, "' has Arrow type ", a.type()->ToString(),
           ", which loom does not read (strings, numbers, booleans, lists and structs)");
  }
}

template <typename ArrayT>
OJson list_value(const ArrayT& a, int64_t i, const std::string& column) {
  OJson out = OJson::array();
  const arrow::Array& values = *a.values();
  const int64_t begin = a.value_offset(i), n = a.value_length(i);
  for (int64_t k = begin; k < begin + n; ++k) out.push_back(value_at(values, k, column));
  return out;
}

// The leaf (Parquet) column indices under the named top-level columns.
std::vector<int> leaf_indices(const parquet::arrow::FileReader& reader,
                              const std::set<std::string>& names) {
  const parquet::SchemaDescriptor* schema = reader.parquet_reader()->metadata()->schema();
  std::vector<int> out;
  for (int c = 0; c < schema->num_columns(); ++c)
    if (names.count(schema->GetColumnRoot(c)->name())) out.push_back(c);
  return out;
}

}  // namespace

bool parquet_available() { return true; }

std::vector<std::string> parquet_columns(const std::string& path, const std::string& what) {
  auto reader = open_parquet(path, what);
  std::shared_ptr<arrow::Schema> schema;
  arrow::Status st = reader->GetSchema(&schema);
  LOOM_CHECK(st.ok(), what, ": cannot read its schema: ", st.ToString());
  return schema->field_names();
}

void read_parquet_rows(const std::string& path, const std::vector<std::string>& columns,
                       const std::function<void(OJson&&, int64_t)>& on_row,
                       const std::string& what) {
  auto reader = open_parquet(path, what);
  std::set<std::string> names(columns.begin(), columns.end());
  if (names.empty()) {
    std::shared_ptr<arrow::Schema> schema;
    arrow::Status st = reader->GetSchema(&schema);
    LOOM_CHECK(st.ok(), what, ": cannot read its schema: ", st.ToString());
    for (const std::string& n : schema->field_names()) names.insert(n);
  }
  const std::vector<int> leaves = leaf_indices(*reader, names);
  int64_t index = 0;
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    std::shared_ptr<arrow::Table> table;
    try {
      table = value_or_fail(reader->ReadRowGroup(g, leaves), what, "cannot read a row group");
    } catch (const parquet::ParquetException& e) {
      fail(what, ": row group ", g, ": ", e.what());
    }
    std::vector<std::string> cols = table->schema()->field_names();
    std::vector<std::shared_ptr<arrow::ChunkedArray>> chunks = table->columns();
    const int64_t n = table->num_rows();
    // Walk every column's chunks in step with the rows.
    std::vector<int> chunk(chunks.size(), 0);
    std::vector<int64_t> start(chunks.size(), 0);
    for (int64_t r = 0; r < n; ++r) {
      OJson row = OJson::object();
      for (size_t c = 0; c < chunks.size(); ++c) {
        while (r - start[c] >= chunks[c]->chunk(chunk[c])->length())
          start[c] += chunks[c]->chunk(chunk[c]++)->length();
        try {
          row[cols[c]] = value_at(*chunks[c]->chunk(chunk[c]), r - start[c], cols[c]);
        } catch (const Error& e) {
          fail(what, ": row ", index + 1, ": ", e.what());
        }
      }
      on_row(std::move(row), index++);
    }
  }
}

}  // namespace loom::io
