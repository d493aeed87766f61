// tokenize_json_lines: the work behind `loom tokenize`. Input: one JSON string per line
// (blank lines skipped); output: one JSON array of ids per input line. Lines are encoded in
// chunks with encode_batch so that long files use all threads. See loom/tokenizer.h.
#include <nlohmann/json.hpp>

#include <fstream>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom {
namespace {

constexpr size_t kChunk = 4096;

void write_ids(std::ostream& out, const std::vector<int32_t>& ids) {
  out << '[';
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out << ',';
    out << ids[i];
  }
  out << "]\n";
}

void flush_chunk(const Tokenizer& tokenizer, std::vector<std::string>& texts,
                 const EncodeOptions& options, int num_threads, std::ostream& out) {
  for (const Encoding& e : tokenizer.encode_batch(texts, options, num_threads)) {
    write_ids(out, e.ids);
  }
  texts.clear();
}

}  // namespace

void tokenize_json_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                         const EncodeOptions& options, const std::string& source_name,
                         int num_threads) {
  std::vector<std::string> texts;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    io::check_json_depth(line, "[" + source_name + "] line " + std::to_string(line_no));
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("[", source_name, "] line ", line_no, ": invalid JSON: ", e.what());
    }
    LOOM_CHECK(value.is_string(), "[", source_name, "] line ", line_no,
               ": expected a JSON string, got ", value.type_name());
    texts.push_back(value.get<std::string>());
    if (texts.size() == kChunk) flush_chunk(tokenizer, texts, options, num_threads, out);
  }
  LOOM_CHECK(!in.bad(), "[", source_name, "] read error");
  if (!texts.empty()) flush_chunk(tokenizer, texts, options, num_threads, out);
  LOOM_CHECK(out.good(), "[", source_name, "] write error");
}

void tokenize_json_lines_file(const Tokenizer& tokenizer, const std::string& input_path,
                              const std::string& output_path, const EncodeOptions& options,
                              int num_threads) {
  std::ifstream in(input_path, std::ios::binary);
  LOOM_CHECK(in.good(), "[", input_path, "] cannot open file");
  std::ofstream out(output_path, std::ios::binary);
  LOOM_CHECK(out.good(), "[", output_path, "] cannot create file");
  tokenize_json_lines(tokenizer, in, out, options, input_path, num_threads);
  out.flush();
  LOOM_CHECK(out.good(), "[", output_path, "] write error");
}

}  // namespace loom
