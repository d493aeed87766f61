// Shared pieces of the libFuzzer harnesses in fuzz/ (see docs/testing.md).
//
// A harness feeds one input to a reader and accepts exactly two outcomes: the
// reader returns, or it throws loom::Error. Anything else is a finding:
// libFuzzer reports a crash, a sanitizer report, a timeout or an
// out-of-memory; run_guarded() turns any other exception into an abort so
// libFuzzer saves the input.
// Assumes clang's libFuzzer (-fsanitize=fuzzer) links the harness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "loom/error.h"

namespace loom::fuzz {

/// The input as text (bytes kept as they are; may hold NULs and invalid UTF-8).
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Every JSON reader of user files enforces io/json_parse.h's nesting limit
/// (kJsonMaxDepth, 1,000: an error, not a stack overflow), so the harnesses
/// feed inputs at any depth: that limit is part of what they test. The
/// committed seeds include ones nested 999 and 1,001 deep (tools/make_fuzz_corpus.py).
/// Runs `body`; loom::Error is an accepted outcome, any other exception aborts
/// with its type and message (libFuzzer then keeps the input as a crash).
template <class Body>
void run_guarded(const char* target, Body&& body) {
  try {
    body();
  } catch (const loom::Error&) {
    // A clean, user-facing error: what bad input must end in.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%s] non-loom exception %s: %s\n", target, typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "[%s] non-std exception\n", target);
    std::abort();
  }
}

/// Splits `text` at every `sep` (empty pieces kept).
inline std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace loom::fuzz
