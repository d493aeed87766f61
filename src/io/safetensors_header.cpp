// safetensors header parsing and validation (detail::parse_file).
// The JSON is read with nlohmann's SAX interface and a small state machine
// that accepts exactly the schema of the Rust reference reader
// (safetensors/src/tensor.rs: HashMetadata, TensorInfo, Metadata::validate)
// and, unlike a DOM parse, sees duplicate keys, negative numbers ("-0"
// included) and floats as written. Then the layout is checked the way
// Metadata::validate does: tensors sorted by (begin, end) must tile the
// data buffer exactly.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "io/safetensors_format.h"
#include "loom/error.h"

namespace loom::safetensors::detail {

namespace {

// One top-level tensor entry as written, before any layout check.
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint64_t> offsets;
  bool has_dtype = false, has_shape = false, has_offsets = false;
};

// Where the parser is in the header schema.
enum class State {
  kBegin,       // before the top-level object
  kTopKey,      // in the top-level object: a tensor name, "__metadata__" or '}'
  kTopValue,    // after a top-level key
  kTensorKey,   // in a tensor entry: a field name or '}'
  kDtype,       // value of "dtype"
  kShape,       // value of "shape"
  kShapeItem,   // inside the shape array
  kOffsets,     // value of "data_offsets"
  kOffsetItem,  // inside the data_offsets array
  kSkip,        // inside an unknown field's value (ignored, as the reference does)
  kMetaKey,     // in "__metadata__": a key or '}'
  kMetaValue,   // value of a metadata key
  kDone,
};

// A name or value for an error message, cut to keep messages readable.
std::string quote_name(std::string_view s) {
  constexpr size_t kMaxShown = 200;
  if (s.size() <= kMaxShown) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kMaxShown)) + "...' (" + std::to_string(s.size()) +
         " bytes)";
}

class HeaderSax {
 public:
  using json = nlohmann::json;

  std::vector<RawTensor> tensors;
  std::map<std::string, std::string> metadata;
  std::string error;  // why the last callback returned false

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(json::number_integer_t v) {
    // The lexer reports every number written with '-' here, "-0" included.
    return number(nullptr, "a negative number " + std::to_string(v));
  }
  bool number_unsigned(json::number_unsigned_t v) { return number(&v, ""); }
  bool number_float(json::number_float_t, const std::string& text) {
    return number(nullptr, "a non-integer number " + text);
  }
  bool binary(json::binary_t&) { return scalar("binary data"); }
  bool string(std::string& s);
  bool key(std::string& k);
  bool start_object(size_t);
  bool end_object();
  bool start_array(size_t);
  bool end_array();
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    size_t close = what.find("] ");  // drop "[json.exception.parse_error.101] "
    if (close != std::string::npos) what = what.substr(close + 2);
    return fail("header is not valid JSON: ", what);
  }

 private:
  template <typename... Args>
  bool fail(const Args&... args) {
    error = loom::detail::concat(args...);
    return false;
  }
  bool scalar(const std::string& kind);
  bool number(const uint64_t* value, const std::string& kind);
  bool wrong_type(const std::string& kind);
  bool end_skipped_value() {
    if (skip_depth_ == 0) state_ = State::kTensorKey;
    return true;
  }
  RawTensor& current() { return tensors.back(); }

  State state_ = State::kBegin;
  int skip_depth_ = 0;
  bool in_metadata_value_ = false;  // kTopValue belongs to "__metadata__"
  bool seen_metadata_ = false;
  std::string top_key_;   // the top-level key whose value is being read
  std::string meta_key_;  // the metadata key whose value is being read
  std::unordered_set<std::string> names_;
};

bool HeaderSax::wrong_type(const std::string& kind) {
  const std::string t = tensors.empty() ? "" : "tensor " + quote_name(current().name) + " ";
  switch (state_) {
    case State::kBegin:
      return fail("header is not a JSON object (found ", kind, ")");
    case State::kTopValue:
      if (in_metadata_value_) {
        return fail("__metadata__ must be an object of strings or null, found ", kind);
      }
      return fail("tensor ", quote_name(top_key_), " must be an object with dtype, shape and ",
                  "data_offsets, found ", kind);
    case State::kDtype:
      return fail(t, "dtype must be a string, found ", kind);
    case State::kShape:
    case State::kShapeItem:
      return fail(t, "shape must be an array of non-negative integers, found ", kind);
    case State::kOffsets:
    case State::kOffsetItem:
      return fail(t, "data_offsets must be [begin, end] non-negative integers, found ", kind);
    case State::kMetaValue:
      return fail("__metadata__ value of key ", quote_name(meta_key_), " must be a string, found ",
                  kind);
    default:
      return fail("unexpected ", kind, " in header");
  }
}

bool HeaderSax::scalar(const std::string& kind) {
  if (state_ == State::kSkip) return end_skipped_value();
  if (state_ == State::kTopValue && in_metadata_value_ && kind == "null") {
    state_ = State::kTopKey;  // "__metadata__": null is accepted, as Option<..> = None
    return true;
  }
  return wrong_type(kind);
}

bool HeaderSax::number(const uint64_t* value, const std::string& kind) {
  if (state_ == State::kSkip) return end_skipped_value();
  if (value == nullptr) return wrong_type(kind);
  if (state_ == State::kShapeItem) {
    current().shape.push_back(*value);
    return true;
  }
  if (state_ == State::kOffsetItem) {
    if (current().offsets.size() == 2) return wrong_type("more than 2 entries");
    current().offsets.push_back(*value);
    return true;
  }
  return wrong_type("the number " + std::to_string(*value));
}

bool HeaderSax::string(std::string& s) {
  if (state_ == State::kDtype) {
    current().dtype = s;
    current().has_dtype = true;
    state_ = State::kTensorKey;
    return true;
  }
  if (state_ == State::kMetaValue) {
    metadata.emplace(meta_key_, s);
    state_ = State::kMetaKey;
    return true;
  }
  return scalar("the string " + quote_name(s));
}

bool HeaderSax::key(std::string& k) {
  switch (state_) {
    case State::kTopKey:
      in_metadata_value_ = k == "__metadata__";
      if (in_metadata_value_) {
        if (seen_metadata_) return fail("duplicate key '__metadata__'");
        seen_metadata_ = true;
      } else if (!names_.insert(k).second) {
        return fail("duplicate tensor name ", quote_name(k));
      }
      top_key_ = k;
      state_ = State::kTopValue;
      return true;
    case State::kMetaKey:
      if (metadata.count(k) != 0) return fail("__metadata__ has duplicate key ", quote_name(k));
      meta_key_ = k;
      state_ = State::kMetaValue;
      return true;
    case State::kTensorKey: {
      RawTensor& t = current();
      bool* seen = k == "dtype"          ? &t.has_dtype
                   : k == "shape"        ? &t.has_shape
                   : k == "data_offsets" ? &t.has_offsets
                                         : nullptr;
      if (seen == nullptr) {
        state_ = State::kSkip;  // unknown fields are ignored by the reference
        skip_depth_ = 0;
        return true;
      }
      if (*seen) return fail("tensor ", quote_name(t.name), " has duplicate field ", quote_name(k));
      state_ = k == "dtype" ? State::kDtype : k == "shape" ? State::kShape : State::kOffsets;
      return true;
    }
    default:
      return true;  // keys inside skipped values
  }
}

bool HeaderSax::start_object(size_t) {
  switch (state_) {
    case State::kBegin:
      state_ = State::kTopKey;
      return true;
    case State::kTopValue:
      if (in_metadata_value_) {
        state_ = State::kMetaKey;
      } else {
        tensors.emplace_back();
        tensors.back().name = top_key_;
        state_ = State::kTensorKey;
      }
      return true;
    case State::kSkip:
      ++skip_depth_;
      return true;
    default:
      return wrong_type("an object");
  }
}

bool HeaderSax::end_object() {
  switch (state_) {
    case State::kTopKey:
      state_ = State::kDone;
      return true;
    case State::kMetaKey:
      state_ = State::kTopKey;
      return true;
    case State::kTensorKey: {
      const RawTensor& t = current();
      const char* missing = !t.has_dtype     ? "dtype"
                            : !t.has_shape   ? "shape"
                            : !t.has_offsets ? "data_offsets"
                                             : nullptr;
      if (missing != nullptr) return fail("tensor ", quote_name(t.name), " has no '", missing, "'");
      state_ = State::kTopKey;
      return true;
    }
    case State::kSkip:
      --skip_depth_;
      return end_skipped_value();
    default:
      return fail("unexpected '}' in header");
  }
}

bool HeaderSax::start_array(size_t) {
  switch (state_) {
    case State::kShape:
      state_ = State::kShapeItem;
      return true;
    case State::kOffsets:
      state_ = State::kOffsetItem;
      return true;
    case State::kSkip:
      ++skip_depth_;
      return true;
    default:
      return wrong_type("an array");
  }
}

bool HeaderSax::end_array() {
  switch (state_) {
    case State::kShapeItem:
      current().has_shape = true;
      state_ = State::kTensorKey;
      return true;
    case State::kOffsetItem:
      if (current().offsets.size() != 2) {
        return wrong_type(std::to_string(current().offsets.size()) + " entries");
      }
      current().has_offsets = true;
      state_ = State::kTensorKey;
      return true;
    case State::kSkip:
      --skip_depth_;
      return end_skipped_value();
    default:
      return fail("unexpected ']' in header");
  }
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s(1, '[');
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(shape[i]));
  }
  s.push_back(']');
  return s;
}

std::string offsets_text(uint64_t begin, uint64_t end) {
  return loom::detail::concat("[", begin, ",", end, "]");
}

// Checks dtype and shape of one entry and computes its byte count.
// `prefix` is "[safetensors] <path>: ".
TensorInfo to_tensor_info(const RawTensor& raw, const std::string& prefix) {
  const std::string who = prefix + "tensor " + quote_name(raw.name);
  std::optional<DType> dtype = dtype_from_code(raw.dtype);
  if (!dtype) {
    if (is_unsupported_code(raw.dtype)) {
      fail(who, " has dtype ", quote_name(raw.dtype), ", which loom does not support ",
           "(supported: F32, BF16, F16, I32, I64, BOOL)");
    }
    fail(who, " has unknown dtype ", quote_name(raw.dtype),
         " (expected one of F32, BF16, F16, I32, I64, BOOL)");
  }
  // Element and byte counts must fit in int64 (Shape's type) without overflow;
  // the reference checks the same products in usize (ValidationOverflow).
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t count = 1;
  bool overflow = false;
  for (uint64_t d : raw.shape) {
    if (d > kMax || (d != 0 && count > kMax / d)) overflow = true;
    if (!overflow) count *= d;
  }
  const uint64_t size = dtype_size(*dtype);
  if (overflow || count > kMax / size) {
    fail(who, " shape ", shape_text(raw.shape), " ", dtype_name(*dtype),
         " is too large: its byte count overflows 64-bit arithmetic");
  }
  TensorInfo info;
  info.name = raw.name;
  info.dtype = *dtype;
  info.shape.assign(raw.shape.begin(), raw.shape.end());
  info.offset = raw.offsets[0];
  info.nbytes = count * size;
  return info;
}

// Checks that the tensors, sorted by (begin, end), tile [0, data_size).
void check_layout(std::vector<RawTensor>& raws, const std::vector<TensorInfo>& infos,
                  uint64_t data_size, const std::string& prefix) {
  uint64_t expected = 0;
  const RawTensor* previous = nullptr;
  for (size_t i = 0; i < raws.size(); ++i) {
    const RawTensor& r = raws[i];
    const uint64_t begin = r.offsets[0], end = r.offsets[1];
    const std::string who =
        prefix + "tensor " + quote_name(r.name) + " data_offsets " + offsets_text(begin, end);
    if (end < begin) fail(who, " end before they begin");
    if (begin > expected) {
      fail(who, " leave a gap: bytes [", expected, ",", begin,
           ") of the data buffer belong to no tensor");
    }
    if (begin < expected) {
      fail(who, " overlap tensor ", quote_name(previous->name), " data_offsets ",
           offsets_text(previous->offsets[0], previous->offsets[1]));
    }
    const TensorInfo& info = infos[i];
    if (end - begin != info.nbytes) {
      fail(who, " do not match shape ", to_string(info.shape), " ", dtype_name(info.dtype), " (",
           info.nbytes, " bytes)");
    }
    if (end > data_size) {
      fail(who, " run past the end of the data buffer (", data_size, " bytes)");
    }
    expected = end;
    previous = &r;
  }
  if (expected != data_size) {
    fail(prefix, "data buffer has ", data_size, " bytes but the tensors cover only ", expected,
         previous ? " (up to the end of tensor " + quote_name(previous->name) + ")" : std::string(),
         "; bytes [", expected, ",", data_size, ") belong to no tensor");
  }
}

// Runs the SAX parser over the header text; throws on any schema error.
HeaderSax parse_json(std::string_view text, const std::string& prefix) {
  size_t first = text.find_first_not_of(" \t\n\r");
  // Checked here because nlohmann skips a UTF-8 byte order mark, which the
  // reference (serde_json) rejects.
  if (first == std::string_view::npos || text[first] != '{') {
    fail(prefix, "header is not a JSON object (it ",
         first == std::string_view::npos
             ? std::string("is empty or blank")
             : "starts with byte " + std::to_string(static_cast<unsigned char>(text[first])),
         ")");
  }
  // nlohmann stops at a NUL byte as if the input ended; JSON never holds a
  // raw NUL (inside strings it must be escaped), so any NUL is an error.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail(prefix, "header is not valid JSON: NUL byte at header offset ", nul);
  }
  HeaderSax sax;
  bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax,
                                      nlohmann::json::input_format_t::json, /*strict=*/true,
                                      /*ignore_comments=*/false);
  if (!ok) fail(prefix, sax.error);
  return sax;
}

}  // namespace

Header parse_file(std::span<const std::byte> file, const std::string& path) {
  const std::string prefix = "[safetensors] " + path + ": ";
  LOOM_CHECK(file.size() >= 8, prefix, "file is ", file.size(),
             " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<uint64_t>(file[i]);  // little endian
  LOOM_CHECK(n <= kMaxHeaderSize, prefix, "header length ", n, " exceeds the limit of ",
             kMaxHeaderSize, " bytes");
  LOOM_CHECK(n <= file.size() - 8, prefix, "header length ", n, " runs past the end of the file (",
             file.size(), " bytes)");
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, n);
  if (auto bad = find_invalid_utf8(text)) fail(prefix, "header is not valid UTF-8 at byte ", *bad);

  HeaderSax sax = parse_json(text, prefix);
  // Reference order: sort by (begin, end); stable so equal offsets keep file order.
  std::vector<size_t> order(sax.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sax.tensors[a].offsets < sax.tensors[b].offsets;
  });
  std::vector<RawTensor> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(sax.tensors[i]));
  sax.tensors = std::move(sorted);
  Header header;
  header.header_size = n;
  header.metadata = std::move(sax.metadata);
  header.tensors.reserve(sax.tensors.size());
  for (const RawTensor& raw : sax.tensors) header.tensors.push_back(to_tensor_info(raw, prefix));
  check_layout(sax.tensors, header.tensors, file.size() - 8 - n, prefix);
  return header;
}

}  // namespace loom::safetensors::detail
