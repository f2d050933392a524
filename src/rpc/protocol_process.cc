#include "rpc/protocol_process.h"

namespace uexec::rpc {

namespace {
constexpr std::size_t kRememberedWrites = 4096;
}  // namespace

SubscriberCursor SubscriberCursor::at_end(const session::Session& s) {
  SubscriberCursor c;
  c.cursor = s.output().total();
  c.sent_exited = s.exited_seq() != 0;
  c.sent_closed = s.closed_seq() != 0;
  return c;
}

SubscriberCursor SubscriberCursor::after(const session::Session& s, session::Seq after_seq) {
  SubscriberCursor c;
  c.cursor = s.output().offset_after_seq(after_seq);
  c.sent_exited = s.exited_seq() != 0 && s.exited_seq() <= after_seq;
  c.sent_closed = s.closed_seq() != 0 && s.closed_seq() <= after_seq;
  return c;
}

ProtocolProcess::ProtocolProcess(ProtocolSession& owner_session, std::string process_id, std::string manager_key,
                                 session::Session& of, bool agent_session)
    : owner(&owner_session),
      id(std::move(process_id)),
      id_json(nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
      key(std::move(manager_key)),
      session(of),
      agent(agent_session) {}

std::optional<std::string> ProtocolProcess::write_status(const std::string& write_id) const {
  auto it = write_status_.find(write_id);
  if (it == write_status_.end()) return std::nullopt;
  return it->second;
}

void ProtocolProcess::remember_write(const std::string& write_id, const std::string& status) {
  write_status_[write_id] = status;
  write_order_.push_back(write_id);
  if (write_order_.size() > kRememberedWrites) {
    write_status_.erase(write_order_.front());
    write_order_.pop_front();
  }
}

}  // namespace uexec::rpc
