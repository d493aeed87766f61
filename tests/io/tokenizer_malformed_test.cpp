// Malformed tokenizer files: each kind of fault gives a loom::Error whose message names the
// file and the fault (and the field or line). One test per kind, on small hand-written
// files: tokenizer.json, vocab.json, merges.txt, vocab.txt, tokenizer_config.json and
// folders.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "data/tokenizer_test_util.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom::test {
namespace {

using nlohmann::json;

// A tiny valid WordPiece tokenizer.json.
json tiny_wordpiece() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4, "##b": 5}}
  })");
}

// A tiny valid byte-level BPE tokenizer.json ("a", "b" and the merge "a b").
json tiny_bpe() {
  return json::parse(R"({
    "version": "1.0", "added_tokens": [], "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                      "use_regex": true},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null,
              "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
  })");
}

// Loads `content` as `name` in a temporary folder and expects a loom::Error whose message
// contains the file path and every fragment.
void expect_error(const std::string& name, const std::string& content,
                  const std::vector<std::string>& fragments) {
  TempDir dir;
  std::string path = dir.write(name, content);
  try {
    if (name == "tokenizer.json") {
      Tokenizer::from_file(path);
    } else {
      Tokenizer::from_pretrained(dir.path());
    }
    ADD_FAILURE() << "no error for " << name << ":\n" << content.substr(0, 300);
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
    for (const std::string& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "missing \"" << f << "\" in: " << msg;
    }
  }
}

void expect_json_error(const json& j, const std::vector<std::string>& fragments) {
  expect_error("tokenizer.json", j.dump(), fragments);
}

TEST(TokenizerMalformed, TinyFilesAreValid) {
  TempDir dir;
  Tokenizer wp = Tokenizer::from_file(dir.write("tokenizer.json", tiny_wordpiece().dump()));
  EXPECT_EQ(wp.encode("A ab").ids, (std::vector<int32_t>{2, 4, 4, 5, 3}));
  TempDir dir2;
  Tokenizer bpe = Tokenizer::from_file(dir2.write("tokenizer.json", tiny_bpe().dump()));
  EXPECT_EQ(bpe.encode("abba").ids, (std::vector<int32_t>{2, 1, 0}));  // ab b a
}

TEST(TokenizerMalformed, FileMissing) {
  try {
    Tokenizer::from_file("/nonexistent/dir/tokenizer.json");
    FAIL();
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/tokenizer.json] cannot open"),
              std::string::npos);
  }
}

TEST(TokenizerMalformed, TruncatedJson) {
  std::string text = tiny_wordpiece().dump();
  expect_error("tokenizer.json", text.substr(0, text.size() / 2), {"invalid JSON"});
}

TEST(TokenizerMalformed, TopLevelNotAnObject) {
  expect_error("tokenizer.json", "[1, 2, 3]", {"expected an object"});
}

TEST(TokenizerMalformed, MissingModel) {
  json j = tiny_wordpiece();
  j.erase("model");
  expect_json_error(j, {"missing field 'model'"});
}

TEST(TokenizerMalformed, UnsupportedModel) {
  json j = tiny_wordpiece();
  j["model"] = json::parse(R"({"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]})");
  expect_json_error(j, {"model.type", "Unigram"});
}

TEST(TokenizerMalformed, VocabNotAnObject) {
  json j = tiny_wordpiece();
  j["model"]["vocab"] = json::array({"a", "b"});
  expect_json_error(j, {"model.vocab", "expected an object"});
}

TEST(TokenizerMalformed, VocabIdNegative) {
  json j = tiny_wordpiece();
  j["model"]["vocab"]["a"] = -4;
  expect_json_error(j, {"model.vocab[\"a\"]", "outside"});
}

TEST(TokenizerMalformed, VocabIdNotAnInteger) {
  json j = tiny_wordpiece();
  j["model"]["vocab"]["a"] = "four";
  expect_json_error(j, {"model.vocab[\"a\"]", "expected an integer id"});
  j["model"]["vocab"]["a"] = 4.5;
  expect_json_error(j, {"model.vocab[\"a\"]", "fraction"});
}

TEST(TokenizerMalformed, VocabIdTooLarge) {
  json j = tiny_wordpiece();
  j["model"]["vocab"]["a"] = 1LL << 40;
  expect_json_error(j, {"model.vocab[\"a\"]", "outside"});
}

TEST(TokenizerMalformed, MergeWithoutSpace) {
  json j = tiny_bpe();
  j["model"]["merges"] = json::array({"ab"});
  expect_json_error(j, {"model.merges[0]", "has no space"});
}

TEST(TokenizerMalformed, MergePairOfThree) {
  json j = tiny_bpe();
  j["model"]["merges"] = json::parse(R"([["a", "b", "c"]])");
  expect_json_error(j, {"model.merges[0]", "more than two"});
}

TEST(TokenizerMalformed, MergeOfUnknownToken) {
  json j = tiny_bpe();
  j["model"]["merges"] = json::array({"a b", "a z"});
  expect_json_error(j, {"merge 1", "\"z\" is not in the vocabulary"});
}

TEST(TokenizerMalformed, MergeResultNotInVocabulary) {
  json j = tiny_bpe();
  j["model"]["merges"] = json::array({"b a"});
  expect_json_error(j, {"merge 0", "merged token \"ba\" is not in the vocabulary"});
}

TEST(TokenizerMalformed, BpeDropoutRejected) {
  json j = tiny_bpe();
  j["model"]["dropout"] = 0.1;
  expect_json_error(j, {"model.dropout", "not supported"});
}

TEST(TokenizerMalformed, WordPieceUnkNotInVocabulary) {
  json j = tiny_wordpiece();
  j["model"]["unk_token"] = "<unk>";
  expect_json_error(j, {"unk_token \"<unk>\" is not in the vocabulary"});
}

TEST(TokenizerMalformed, UnsupportedNormalizer) {
  json j = tiny_wordpiece();
  j["normalizer"] = json::parse(R"({"type": "Precompiled", "precompiled_charsmap": "AAAA"})");
  expect_json_error(j, {"normalizer.type", "Precompiled"});
}

TEST(TokenizerMalformed, UnsupportedPreTokenizer) {
  json j = tiny_wordpiece();
  j["pre_tokenizer"] = json::parse(R"({"type": "Metaspace", "replacement": "_"})");
  expect_json_error(j, {"pre_tokenizer.type", "Metaspace"});
}

TEST(TokenizerMalformed, UnsupportedPostProcessor) {
  json j = tiny_wordpiece();
  j["post_processor"] = json::parse(R"({"type": "Magic"})");
  expect_json_error(j, {"post_processor.type", "Magic"});
}

TEST(TokenizerMalformed, UnsupportedDecoder) {
  json j = tiny_wordpiece();
  j["decoder"] = json::parse(R"({"type": "Metaspace"})");
  expect_json_error(j, {"decoder.type", "Metaspace"});
}

TEST(TokenizerMalformed, WrongFieldType) {
  json j = tiny_wordpiece();
  j["normalizer"]["lowercase"] = "yes";
  expect_json_error(j, {"normalizer.lowercase", "expected a boolean"});
}

TEST(TokenizerMalformed, TemplateUsesUnknownSpecialToken) {
  json j = tiny_wordpiece();
  j["post_processor"] = json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[BOS]", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {}})");
  expect_json_error(j, {"post_processor", "\"[BOS]\" missing from special_tokens"});
}

TEST(TokenizerMalformed, TemplateSequenceIdInvalid) {
  json j = tiny_wordpiece();
  j["post_processor"] = json::parse(R"({"type": "TemplateProcessing",
      "single": [{"Sequence": {"id": "C", "type_id": 0}}], "pair": [], "special_tokens": {}})");
  expect_json_error(j, {"post_processor.single[0].id", "\"A\" or \"B\""});
}

TEST(TokenizerMalformed, SpecialTokenIdNotInVocabulary) {
  json j = tiny_wordpiece();
  j["post_processor"]["sep"] = json::array({"[SEP]", 77});
  expect_json_error(j, {"post_processor", "id 77"});
}

TEST(TokenizerMalformed, AddedTokenWithoutId) {
  json j = tiny_wordpiece();
  j["added_tokens"][0].erase("id");
  expect_json_error(j, {"added_tokens[0]", "missing field 'id'"});
}

TEST(TokenizerMalformed, AddedTokenEmpty) {
  json j = tiny_wordpiece();
  j["added_tokens"][0]["content"] = "";
  expect_json_error(j, {"added_tokens[0].content", "empty"});
}

TEST(TokenizerMalformed, TruncationStrategyUnknown) {
  json j = tiny_wordpiece();
  j["truncation"] = json::parse(R"({"max_length": 5, "strategy": "Middle", "stride": 0})");
  expect_json_error(j, {"truncation.strategy", "Middle"});
}

TEST(TokenizerMalformed, PaddingStrategyUnknown) {
  json j = tiny_wordpiece();
  j["padding"] = json::parse(R"({"strategy": "Everything", "direction": "Right",
      "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"})");
  expect_json_error(j, {"padding.strategy"});
}

TEST(TokenizerMalformed, VocabJsonNotAnObject) {
  TempDir dir;
  dir.write("merges.txt", "#version: 0.2\na b\n");
  std::string path = dir.write("vocab.json", "[\"a\", \"b\"]");
  try {
    Tokenizer::from_pretrained(dir.path());
    FAIL();
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + "] expected an object"), std::string::npos)
        << e.what();
  }
}

TEST(TokenizerMalformed, VocabJsonIdNotAnInteger) {
  TempDir dir;
  dir.write("merges.txt", "#version: 0.2\n");
  std::string path = dir.write("vocab.json", R"({"a": 0, "b": "one"})");
  try {
    Tokenizer::from_pretrained(dir.path());
    FAIL();
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + "] [\"b\"]: expected an integer id"),
              std::string::npos)
        << e.what();
  }
}

TEST(TokenizerMalformed, MergesTxtBadLine) {
  TempDir dir;
  dir.write("vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  std::string path = dir.write("merges.txt", "#version: 0.2\na b\na b c\n");
  try {
    Tokenizer::from_pretrained(dir.path());
    FAIL();
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path + "] line 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("two tokens"), std::string::npos) << msg;
  }
}

TEST(TokenizerMalformed, MergesTxtUnknownToken) {
  TempDir dir;
  dir.write("vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  dir.write("merges.txt", "#version: 0.2\na q\n");
  try {
    Tokenizer::from_pretrained(dir.path());
    FAIL();
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("merges.txt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"q\" is not in the vocabulary"), std::string::npos) << msg;
  }
}

TEST(TokenizerMalformed, VocabTxtEmpty) { expect_error("vocab.txt", "", {"empty vocabulary"}); }

TEST(TokenizerMalformed, VocabTxtWithoutSpecialTokens) {
  expect_error("vocab.txt", "[PAD]\n[UNK]\nhello\n",
               {"cls token '[CLS]'", "not in the vocabulary"});
  expect_error("vocab.txt", "[PAD]\nhello\n", {"unk token '[UNK]'"});
}

TEST(TokenizerMalformed, TokenizerConfigWrongType) {
  TempDir dir;
  dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  std::string path = dir.write("tokenizer_config.json", R"({"do_lower_case": "no"})");
  try {
    Tokenizer::from_pretrained(dir.path());
    FAIL();
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path + "] do_lower_case: expected a boolean"), std::string::npos) << msg;
  }
}

TEST(TokenizerMalformed, FolderWithoutTokenizerFiles) {
  TempDir dir;
  dir.write("config.json", "{}");
  try {
    Tokenizer::from_pretrained(dir.path());
    FAIL();
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path() + "] has no tokenizer.json"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Tokenizer::from_pretrained("/nonexistent/folder"), loom::Error);
}

}  // namespace
}  // namespace loom::test
