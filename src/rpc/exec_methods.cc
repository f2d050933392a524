#include "rpc/exec_methods.h"

#include <functional>

#include "rpc/c_strings.h"
#include "rpc/request_params.h"

namespace uexec::rpc {

using nlohmann::json;

ExecMethods::ExecMethods(agent::AgentService* exec, session::ProcessManager& pm, ProcessTable& table,
                         ApprovalBroker& approvals)
    : exec_(exec),
      tools_(exec ? std::make_unique<AgentTools>(*exec) : nullptr),
      pm_(pm),
      table_(table),
      approvals_(approvals) {
  if (!exec_) return;
  exec_->on_event = [this](const agent::SessionEvent& e) {
    if (e.kind == agent::SessionEvent::Kind::kStart) on_session_started(e.session, e.call);
  };
  exec_->on_forget = [this](long id) { table_.drop_agent_view(id); };
}

ExecMethods::~ExecMethods() {
  if (!exec_) return;
  exec_->on_event = nullptr;
  exec_->on_forget = nullptr;
}

void ExecMethods::cancel(agent::CallId call) {
  if (tools_) tools_->cancel(call);
}

void ExecMethods::adopt(long agent_id, ProtocolSession& owner) {
  std::string pid = std::to_string(agent_id);
  session::Session* s = pm_.find(pid);
  if (!s || owner.processes.count(pid)) return;  // gone already, or the id is taken
  table_.add(owner, pid, pid, *s, true);
}

void ExecMethods::adopt_started_by(agent::CallId call, ProtocolSession& owner) {
  const auto& events = exec_->events();
  // Newest first; call ids grow, so an older call's start ends the search.
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->kind != agent::SessionEvent::Kind::kStart) continue;
    if (it->call < call) break;
    if (it->call == call) adopt(it->session, owner);
  }
}

void ExecMethods::on_session_started(long agent_id, agent::CallId call) {
  for (auto& [sid, s] : table_.sessions())
    if (s->connection && s->connection->exec_calls().count(call)) return adopt(agent_id, *s);
  // Otherwise: an MCP call's, or a call that has not returned yet (adopt_started_by's).
}

void ExecMethods::call(Connection& c, const json& id, const std::string& tool, const json& params) {
  if (!tools_) return c.error(id, kInvalidParams, "exec/* methods need the agent service", {{"kind", "unsupported"}});
  ProtocolSession& owner = *c.session();
  // `_meta.progressToken` (as in MCP) streams the output as exec/outputDelta while the call waits.
  json args = params;
  std::function<void(std::string_view)> on_delta;
  if (args.is_object() && args.contains("_meta")) {
    json meta = args["_meta"];
    args.erase("_meta");
    if (meta.is_object() && meta.contains("progressToken") &&
        (meta["progressToken"].is_string() || meta["progressToken"].is_number_integer())) {
      json token = meta["progressToken"];
      Connection* conn = &c;
      on_delta = [conn, token, n = 0L](std::string_view text) mutable {
        conn->notify("exec/outputDelta", {{"progressToken", token}, {"index", n++}, {"delta", text}});
      };
    }
  }
  if (auto f = AgentTools::field_with_nul(tool, args)) throw invalid_param(*f, nul_field_message(*f));
  struct Pending {
    agent::CallId id = 0;
    bool done = false;
  };
  auto pending = std::make_shared<Pending>();
  agent::CallId cid = 0;
  // A client that declared `approvals` is asked; one that did not is treated as policy never.
  std::shared_ptr<policy::ToolOrchestrator> orchestrator;
  if (c.approvals() && exec_->approval_policy() != policy::ApprovalPolicy::kNever) {
    if (!owner.orchestrator) owner.orchestrator = std::make_shared<policy::ToolOrchestrator>(approvals_.approver_for(owner.id));
    orchestrator = owner.orchestrator;
  }
  Connection* conn = &c;
  tools_->call(
      tool, args, true,
      [conn, id, pending](json result) {
        pending->done = true;
        conn->exec_calls().erase(pending->id);
        conn->reply(id, std::move(result));
      },
      &cid, std::move(on_delta), std::move(orchestrator));
  if (cid != 0 && !pending->done) {
    pending->id = cid;
    c.exec_calls().insert(cid);
  }
  if (cid != 0) adopt_started_by(cid, owner);
}

}  // namespace uexec::rpc
