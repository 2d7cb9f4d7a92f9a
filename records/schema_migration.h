#pragma once
/// \file
/// Private to records/: bringing an older record DB to the current schema version, inside the
/// caller's transaction (a failure leaves the DB as it was).

#include <sqlite3.h>

#include <string>

#include "support/error.h"

namespace tensortune::records::detail {

/// Version 1 -> 2. Version 1 stored the flat index of configs whose knobs include a 3- or 4-way
/// split in another candidate order than AutoTVM's; the stored entity is authoritative, so
/// every such config's index is recomputed from its entity (results stay with their config
/// row). Tasks whose template this build lacks, and entities that no longer fit the space,
/// keep their index and are counted in the log line.
Status migrate_v1_to_v2(sqlite3* db, const std::string& path);

/// Version 2 -> 3: fills best_groups and top_results (created empty by the schema) from a full
/// scan of the results, logging how many results it read.
Status migrate_v2_to_v3(sqlite3* db, const std::string& path);

/// Version 3 -> 4: drops the index configs_by_task (UNIQUE(task_id, config_index) serves its
/// lookups).
Status migrate_v3_to_v4(sqlite3* db, const std::string& path);

/// Version 4 -> 5: adds results.client and results.device (empty for the rows already there;
/// no row is rewritten).
Status migrate_v4_to_v5(sqlite3* db, const std::string& path);

}  // namespace tensortune::records::detail
