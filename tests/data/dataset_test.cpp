// Tests of the datasets in loom/dataset.h: line-by-line and grouped-block text
// datasets (run_mlm --line_by_line, run_clm's group_texts), tables with label
// columns (ClassLabel's sorted names, integer labels kept), tokenization done
// once, and the errors that name file, line and column. A byte tokenizer
// (id = byte value) makes the expected ids readable straight from the text.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "common/error_of.h"
#include "loom/dataset.h"
#include "loom/error.h"

namespace loom::data {
namespace {

std::vector<int64_t> bytes(const std::string& s) {
  std::vector<int64_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

class DatasetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_dataset_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(DatasetFiles, LineByLineDropsBlankLinesAndTokenizesOnce) {
  std::string path = write("t.txt", "ab\r\n\n  \t\ncd\nefg");
  std::atomic<int> calls{0};
  auto tokenize = [&](const std::string& s) {
    ++calls;
    return bytes(s);
  };
  InMemoryDataset ds = text_lines_dataset(path, tokenize);
  ASSERT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.get(0).input_ids, bytes("ab"));
  EXPECT_EQ(ds.get(1).input_ids, bytes("cd"));
  EXPECT_EQ(ds.get(2).input_ids, bytes("efg"));
  for (int i = 0; i < 3; ++i) ds.get(1);
  EXPECT_EQ(calls.load(), 3) << "each line is tokenized once, at construction";

  InMemoryDataset kept = text_lines_dataset(
      path, tokenize, {.keep_linebreaks = true, .skip_blank_lines = false, .max_length = 2});
  ASSERT_EQ(kept.size(), 5);
  EXPECT_EQ(kept.get(0).input_ids, bytes("ab"));  // "ab\n" cut to 2
  EXPECT_EQ(kept.get(1).input_ids, bytes("\n"));  // the blank line
  EXPECT_EQ(kept.get(4).input_ids, bytes("ef"));
  EXPECT_EQ(testing::error_of([&] { ds.get(3); }), "[dataset] index 3 out of range [0, 3)");
}

TEST_F(DatasetFiles, BlocksConcatenateDropRemainderAndCopyLabels) {
  // run_clm keeps line breaks: the ids are the file's bytes, \r\n read as \n.
  std::string path = write("c.txt", "hello\r\nworld\n\nthe end");
  InMemoryDataset ds = text_blocks_dataset(path, bytes, {.block_size = 4});
  std::string joined = "hello\nworld\n\nthe end";  // 20 bytes -> 5 blocks
  ASSERT_EQ(ds.size(), 5);
  for (int64_t b = 0; b < 5; ++b) {
    Example e = ds.get(b);
    EXPECT_EQ(e.input_ids, bytes(joined.substr(static_cast<size_t>(b) * 4, 4))) << b;
    EXPECT_EQ(e.labels, e.input_ids);
  }
  InMemoryDataset ds6 = text_blocks_dataset(path, bytes, {.block_size = 6});
  ASSERT_EQ(ds6.size(), 3);  // 20 / 6: the last 2 ids are dropped
  EXPECT_EQ(ds6.get(2).input_ids, bytes(joined.substr(12, 6)));
  EXPECT_NE(testing::error_of([&] {
              text_blocks_dataset(path, bytes, {.block_size = 0});
            }).find("block_size must be > 0"),
            std::string::npos);
}

TEST(GroupTexts, GroupsDropTheirOwnRemainder) {
  std::vector<std::vector<int64_t>> tok{{1, 2, 3}, {4, 5}, {6, 7, 8, 9}, {10}};
  // Whole corpus: 1..10 -> blocks [1..4], [5..8]; 9, 10 dropped.
  std::vector<Example> all = group_texts(tok, 4);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].input_ids, (std::vector<int64_t>{5, 6, 7, 8}));
  // Groups of 2 texts (as map(batched=True, batch_size=2)): {1..5} -> [1..4];
  // {6..10} -> [6..9].
  std::vector<Example> grouped = group_texts(tok, 4, 2);
  ASSERT_EQ(grouped.size(), 2u);
  EXPECT_EQ(grouped[1].input_ids, (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(grouped[1].labels, grouped[1].input_ids);
  EXPECT_TRUE(group_texts({}, 4).empty());
}

TEST_F(DatasetFiles, CsvStringLabelsSortedLikeClassLabel) {
  std::string path = write("s.csv",
                           "sentence,label\nb,positive\na,negative\n\"c, d\",neutral\n"
                           "e,positive\n");
  InMemoryDataset ds =
      table_dataset(path, bytes, {.text_column = "sentence", .label_column = "label"});
  EXPECT_EQ(ds.label_names(), (std::vector<std::string>{"negative", "neutral", "positive"}));
  ASSERT_EQ(ds.size(), 4);
  EXPECT_EQ(ds.get(0).label, 2);
  EXPECT_EQ(ds.get(1).label, 0);
  EXPECT_EQ(ds.get(2).label, 1);
  EXPECT_EQ(ds.get(2).input_ids, bytes("c, d"));
  // Given names fix the order instead.
  InMemoryDataset given = table_dataset(path, bytes,
                                        {.text_column = "sentence",
                                         .label_column = "label",
                                         .label_names = {"positive", "negative", "neutral"}});
  EXPECT_EQ(given.get(0).label, 0);
  EXPECT_EQ(given.get(2).label, 2);
}

TEST_F(DatasetFiles, IntegerLabelsAreKept) {
  std::string csv = write("i.tsv", "text\tlabel\nx\t3\ny\t-1\nz\t10\n");
  InMemoryDataset a = table_dataset(csv, bytes, {.label_column = "label"});
  EXPECT_EQ(a.get(0).label, 3);
  EXPECT_EQ(a.get(1).label, -1);
  EXPECT_EQ(a.get(2).label, 10);
  EXPECT_TRUE(a.label_names().empty());
  std::string jsonl = write("i.jsonl",
                            "{\"text\": \"x\", \"label\": 1}\n{\"text\": \"y\", "
                            "\"label\": 0}\n");
  InMemoryDataset b = table_dataset(jsonl, bytes, {.label_column = "label"});
  EXPECT_EQ(b.get(0).label, 1);
  EXPECT_EQ(b.get(1).label, 0);
  // JSON strings stay strings: "10" sorts before "9".
  std::string strs = write("s.jsonl",
                           "{\"text\": \"x\", \"label\": \"9\"}\n{\"text\": \"y\", "
                           "\"label\": \"10\"}\n");
  InMemoryDataset c = table_dataset(strs, bytes, {.label_column = "label"});
  EXPECT_EQ(c.label_names(), (std::vector<std::string>{"10", "9"}));
  EXPECT_EQ(c.get(0).label, 1);
  InMemoryDataset unlabeled = table_dataset(jsonl, bytes);
  EXPECT_FALSE(unlabeled.get(0).label.has_value());
}

// Issue 15: "99999999999999999999" became a class *name* (more than 18
// digits were not read as an integer); a JSON uint64 crashed the reader.
TEST_F(DatasetFiles, IntegerLabelsBeyondInt64AreAnError) {
  std::string csv = write("big.csv", "text,label\nx,0\ny,99999999999999999999\n");
  EXPECT_EQ(testing::error_of([&] { table_dataset(csv, bytes, {.label_column = "label"}); }),
            "[dataset] " + csv +
                ":3: label 99999999999999999999 is beyond int64 (class ids are "
                "0, 1, ..., num_labels - 1)");
  std::string jsonl = write("big.jsonl", "{\"text\": \"x\", \"label\": 18446744073709551615}\n");
  EXPECT_NE(testing::error_of([&] {
              table_dataset(jsonl, bytes, {.label_column = "label"});
            }).find("label 18446744073709551615 is beyond int64"),
            std::string::npos);
  // 19 digits within int64 are an integer id (the old 18-digit rule made it a name).
  std::string ok = write("ok.csv", "text,label\nx,1000000000000000000\n");
  EXPECT_EQ(table_dataset(ok, bytes, {.label_column = "label"}).get(0).label, 1000000000000000000);
}

TEST_F(DatasetFiles, PairColumnsGoToTheEncoder) {
  std::string path = write("p.csv", "q,c,label\nab,cde,0\n");
  TextEncoder encode = [](const std::string& a, const std::string* b) {
    Example e;
    e.input_ids = bytes(a + "|" + (b ? *b : ""));
    e.token_type_ids.assign(a.size() + 1, 0);
    e.token_type_ids.resize(e.input_ids.size(), 1);
    return e;
  };
  InMemoryDataset ds = table_dataset(
      path, encode, {.text_column = "q", .text_pair_column = "c", .label_column = "label"});
  EXPECT_EQ(ds.get(0).input_ids, bytes("ab|cde"));
  EXPECT_EQ(ds.get(0).token_type_ids, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_NE(testing::error_of([&] {
              table_dataset(path, bytes, {.text_column = "q", .text_pair_column = "c"});
            }).find("cannot encode a text pair"),
            std::string::npos);
}

TEST_F(DatasetFiles, ErrorsNameFileLineAndColumn) {
  std::string csv = write("e.csv", "text,y\na,1\n");
  EXPECT_EQ(testing::error_of([&] { table_dataset(csv, bytes, {.label_column = "label"}); }),
            "[csv] " + csv + ": no column 'label' (columns: text, y)");
  std::string jsonl = write("e.jsonl",
                            "{\"text\": \"a\", \"label\": \"x\"}\n\n"
                            "{\"text\": \"b\"}\n");
  EXPECT_EQ(testing::error_of([&] { table_dataset(jsonl, bytes, {.label_column = "label"}); }),
            "[dataset] " + jsonl + ":3: missing column 'label'");
  std::string num = write("n.jsonl", "{\"text\": 5}\n");
  EXPECT_EQ(testing::error_of([&] { table_dataset(num, bytes); }),
            "[dataset] " + num + ":1: column 'text' has type integer (5), expected a string");
  std::string mixed = write("m.jsonl",
                            "{\"text\": \"a\", \"label\": \"x\"}\n"
                            "{\"text\": \"b\", \"label\": 2}\n");
  EXPECT_EQ(testing::error_of([&] { table_dataset(mixed, bytes, {.label_column = "label"}); }),
            "[dataset] " + mixed + ":2: label column 'label' mixes strings and integer values (2)");
  std::string null_label = write("z.jsonl", "{\"text\": \"a\", \"label\": null}\n");
  EXPECT_NE(testing::error_of([&] {
              table_dataset(null_label, bytes, {.label_column = "label"});
            }).find(":1: label column 'label' mixes strings and null"),
            std::string::npos);
  std::string unknown = write("u.csv", "text,label\na,cat\n");
  EXPECT_EQ(testing::error_of([&] {
              table_dataset(unknown, bytes, {.label_column = "label", .label_names = {"dog"}});
            }),
            "[dataset] " + unknown + ":2: label 'cat' is not one of the 1 label names");
  EXPECT_EQ(testing::error_of([&] { text_lines_dataset((dir_ / "none.txt").string(), bytes); }),
            "[text] " + (dir_ / "none.txt").string() + ": cannot open the file");
}

TEST(InMemoryDataset, RejectsFieldsOfTheWrongLength) {
  Example e;
  e.input_ids = {1, 2, 3};
  e.attention_mask = {1, 1};
  try {
    InMemoryDataset ds({Example{}, e});
    FAIL();
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "[dataset] example 1: attention_mask has 2 entries, input_ids 3");
  }
}

}  // namespace
}  // namespace loom::data
