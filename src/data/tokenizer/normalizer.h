// Normalizers of the tokenizer pipeline: BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD,
// StripAccents
// and their Sequence, with the same rules as the `tokenizers` library
// (tokenizers/src/normalizers/{bert,unicode,utils,strip}.rs).
//
// Normalization keeps an alignment: every byte of the normalized text knows the byte range
// of the original character it came from, so token offsets map back to the input. ASCII-only
// text takes a byte-table fast path (the chain's effect on each ASCII byte is precomputed);
// anything else goes through a per-code-point path. Assumes valid UTF-8 input.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer_spec.h"

namespace loom::data {

/// A code point with the original byte range [begin, end) it came from.
struct AlignedChar {
  char32_t cp;
  uint32_t begin;
  uint32_t end;
};

/// Result of normalizing one segment of text.
struct NormalizedText {
  std::string_view original;  ///< the input segment
  std::string owned;          ///< the normalized text when `changed`
  bool changed = false;       ///< false: text() is `original` itself
  bool aligned = false;       ///< true: align_* hold the mapping; false: byte i <-> byte i
  std::vector<uint32_t> align_begin, align_end;  ///< per byte of owned, relative to original

  std::string_view text() const { return changed ? std::string_view(owned) : original; }
  /// Original byte range (relative to `original`) of normalized bytes [b, e), b < e.
  void to_original(uint32_t b, uint32_t e, uint32_t& ob, uint32_t& oe) const {
    if (!aligned) {
      ob = b;
      oe = e;
    } else {
      ob = align_begin[b];
      oe = align_end[e - 1];
    }
  }
};

/// One normalization step.
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  /// Transforms the characters in place (may delete or insert characters).
  virtual void apply(std::vector<AlignedChar>& chars) const = 0;
  /// Effect on an ASCII byte: the resulting byte, or -1 when the byte is deleted.
  virtual int map_ascii(int byte) const = 0;
};

/// A chain of normalizers applied in order (a single normalizer is a chain of one).
class NormalizerChain {
 public:
  explicit NormalizerChain(std::vector<std::unique_ptr<Normalizer>> steps);
  /// Normalizes `in` into `out` (out.original = in).
  void normalize(std::string_view in, NormalizedText& out) const;
  /// Normalizes a string, alignment dropped (used for added-token patterns).
  std::string normalize_string(std::string_view in) const;

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
  std::array<int16_t, 128> ascii_{};  // composed map_ascii of all steps
  bool ascii_identity_ = true;
};

/// Builds the chain for a normalizer spec. Throws loom::Error (naming `source`) for an
/// unsupported type.
std::unique_ptr<NormalizerChain> make_normalizer(const io::NormalizerSpec& spec,
                                                 const std::string& source);

/// Canonical (or compatibility) decomposition with canonical reordering: NFD / NFKD.
void decompose_chars(std::vector<AlignedChar>& chars, bool compat);

/// Canonical composition (UAX #15) of decomposed, reordered characters: the second half of
/// NFC / NFKC. A composite keeps its starter's alignment and the characters it absorbed
/// vanish, as `tokenizers` aligns NFC output (checked against its offsets).
void compose_chars(std::vector<AlignedChar>& chars);

}  // namespace loom::data
