#pragma once
// SqlStore: the one Store implementation, written against SqlConnection so that SQLite and
// PostgreSQL run the same statements and the same transaction logic.
//
// Concurrency: one connection per SqlStore, guarded by a mutex (calls from several threads are
// serialised). Between processes, correctness comes from the database: every write method is one
// transaction; a config write first bumps the one-row config_generation (serialising config
// writers store-wide), then config_heads (the revision counter of each written config), then checks
// the expected revision; workflow updates are `UPDATE ... WHERE version = $n`;
// leases are one conditional upsert. Transient failures (SQLite busy, PostgreSQL serialization
// failure or deadlock, a connection lost before commit) rerun the whole transaction a few times.

#include <memory>
#include <mutex>

#include "store/sql_connection.h"
#include "store/store.h"

namespace gpupool::store {

class SqlStore final : public Store {
 public:
  // Runs pending migrations on `connection` first. `clock` must outlive the store.
  static Result<std::unique_ptr<Store>> Open(std::unique_ptr<SqlConnection> connection,
                                             const Clock& clock);

  std::string_view Backend() const override { return connection_->Backend(); }

  Result<std::vector<int64_t>> WriteConfigs(const std::vector<ConfigWrite>& writes,
                                            const Actor& actor) override;
  Result<ConfigRecord> GetConfig(std::string_view kind, std::string_view name) override;
  Result<std::vector<ConfigRecord>> ListConfigs(std::optional<std::string_view> kind) override;
  Result<std::vector<RevisionRecord>> History(std::optional<std::string_view> kind,
                                              std::optional<std::string_view> name,
                                              int limit) override;
  Result<RevisionRecord> GetRevision(std::string_view kind, std::string_view name,
                                     int64_t revision) override;
  Result<int64_t> ConfigGeneration() override;

  Status UpsertNodes(const std::vector<NodeRecord>& nodes, bool replace_all) override;
  Status DeleteNodes(const std::vector<std::string>& names) override;
  Result<std::vector<NodeRecord>> ListNodes() override;

  Result<WorkflowRecord> CreateWorkflow(const WorkflowRecord& workflow) override;
  Result<WorkflowRecord> GetWorkflow(std::string_view id) override;
  Result<std::vector<WorkflowRecord>> ListWorkflows(const WorkflowFilter& filter) override;
  Status UpdateWorkflow(const WorkflowRecord& workflow) override;
  Result<int64_t> NextSequence(std::string_view name) override;

  Status AppendAudit(const AuditRecord& record) override;
  Result<std::vector<AuditRecord>> ListAudit(int limit) override;

  Result<bool> TryAcquireLease(std::string_view name, std::string_view holder, int64_t now_ms,
                               int64_t ttl_ms) override;
  Status ReleaseLease(std::string_view name, std::string_view holder) override;

 private:
  SqlStore(std::unique_ptr<SqlConnection> connection, const Clock& clock)
      : connection_(std::move(connection)), clock_(clock) {}

  Status Migrate();

  // Runs `body` (returning Status or Result<T>) in one transaction, committing when it succeeds
  // and rerunning it on transient failures. Holds mu_.
  template <typename Body>
  auto InTransaction(bool write, Body&& body) -> decltype(body());

  // Helpers that run inside a transaction.
  Result<WorkflowRecord> LoadWorkflow(std::string_view id);
  Status InsertTasks(std::string_view workflow_id, const std::vector<TaskRecord>& tasks);

  const std::unique_ptr<SqlConnection> connection_;
  const Clock& clock_;
  std::mutex mu_;  // guards connection_ use
};

}  // namespace gpupool::store
