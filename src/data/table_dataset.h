// table_dataset over a table already in memory (io::TextTable): the same
// examples and label ids as loom::data::table_dataset of a file, for rows
// that come from somewhere other than a file (the job API's JSON rows,
// loom/job.h). Implemented in dataset_table.cpp.
#pragma once

#include "io/text_files.h"
#include "loom/dataset.h"

namespace loom::data {

/// Examples from `table` (its `source` names it in errors); throws what
/// table_dataset throws for a file's table.
InMemoryDataset table_dataset_of(const io::TextTable& table, const TextEncoder& encode,
                                 const TableOptions& options);

}  // namespace loom::data
