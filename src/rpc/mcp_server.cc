#include "rpc/mcp_server.h"

#include <fmt/core.h>

#include <cstdlib>
#include <set>

#include "rpc/agent_tools.h"
#include "rpc/json_rpc.h"
#include "rpc/mcp_progress.h"
#include "base/log.h"

namespace uexec::rpc {

McpServer::McpServer(agent::AgentService& exec, std::function<void(std::string)> send)
    : McpEndpoint(std::move(send),
                  "uexec runs shell commands in long-lived sessions. exec_command starts one and returns its output "
                  "after a yield window (or when it exits, or an `until` condition holds); while it runs, poll or "
                  "type with write_stdin, and use list_sessions, read_output and kill_session."),
      exec_(exec),
      tools_(exec) {}

// The orchestrator of this client's exec_command calls, when approvals apply (a sandbox and a
// policy other than never); null otherwise. Its approver asks the client (elicitation/create)
// or, for a client that cannot be asked, answers denied and leaves a note for the result.
std::shared_ptr<policy::ToolOrchestrator> McpServer::orchestrator() {
  if (exec_.approval_policy() == policy::ApprovalPolicy::kNever) return nullptr;
  if (!orchestrator_)
    orchestrator_ = std::make_shared<policy::ToolOrchestrator>(
        [this](const policy::ApprovalRequest& req, std::function<void(policy::Decision)> answer) {
          ApprovalQuestion q = question_for(req);
          if (!elicitor_.enabled()) {
            if (approval_notes_.size() >= 64) approval_notes_.clear();  // bounded: notes are best effort
            approval_notes_[q.command] = approval_needed_note(q);
          }
          elicitor_.ask(q, std::move(answer));
        });
  return orchestrator_;
}

void McpServer::cancel(const std::string& request_key) {
  auto it = pending_.find(request_key);
  if (it == pending_.end()) return;
  tools_.cancel(it->second);
  pending_.erase(it);
}

void McpServer::call_tool(const json& id, const std::string& name, const json& args, const json& progress_token) {
  bool structured = McpEndpoint::structured();
  std::string key = id.dump();
  agent::CallId cid = 0;
  std::function<void(std::string_view)> on_delta;
  if (!progress_token.is_null()) {
    // The call ends (replied or cancelled) before this server goes, so `this` outlives it.
    on_delta = [this, progress = ProgressReporter(progress_token)](std::string_view text) mutable {
      if (auto note = progress.on_output(text, ProgressReporter::Clock::now()))
        send_(encode_notification("notifications/progress", std::move(*note)));
    };
  }
  std::shared_ptr<policy::ToolOrchestrator> approvals;
  std::string cmd;
  if (name == "exec_command") {
    approvals = orchestrator();
    if (approvals && args.is_object() && args.contains("cmd") && args["cmd"].is_string()) cmd = args["cmd"];
  }
  bool known = tools_.call(
      name, args, structured,
      [this, id, key, cmd](json result) {
        pending_.erase(key);
        if (auto note = approval_notes_.find(cmd); !cmd.empty() && note != approval_notes_.end()) {
          if (result.contains("content") && result["content"].is_array() && !result["content"].empty() &&
              result["content"][0].contains("text") && result["content"][0]["text"].is_string())
            result["content"][0]["text"] = result["content"][0]["text"].get<std::string>() + "\n" + note->second;
          approval_notes_.erase(note);
        }
        reply(id, std::move(result));
      },
      &cid, std::move(on_delta), std::move(approvals));
  if (!known) return error(id, kInvalidParams, "Unknown tool: " + name, {{"kind", "invalidParams"}, {"field", "name"}});
  if (cid != 0) pending_[key] = cid;
}

}  // namespace uexec::rpc
